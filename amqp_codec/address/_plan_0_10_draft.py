"""Address plans in the AMQP 0-10 draft (99-0), the version Qpid's brokers spoke before 0-10.

The reference's options are written for 0-10, and the draft has most of its fields:

========================  ===============================================================
step                      0-10 draft
========================  ===============================================================
create                    ``queue.declare`` / ``exchange.declare`` (``alternate-exchange``
                          is a field), then the node's ``x-bindings``
existence check, assert   ``passive`` declare (``amq.`` names only ever passively)
x-bindings                ``queue.bind``; the draft has no exchange-to-exchange binding
subscription              ``message.subscribe``: ``destination`` is the consumer tag,
                          ``confirm-mode`` on when reliable, ``acquire-mode`` no-acquire
                          for ``mode: browse`` (browsing is expressible), else pre-acquire
on close                  ``queue.unbind``, ``message.cancel``, ``queue.delete``
========================  ===============================================================

``x-subscribe``'s ``arguments`` is the draft's ``filter`` table. A receiver gets messages only
with credit: ``message.flow`` for the receiver's capacity, which is not part of an address and is
left to the caller.
"""

from __future__ import annotations

from types import ModuleType

from ..base import Method
from ._plan import Link, Plan
from ._plan_fields import FieldMap, read_fields
from ._plan_steps import Dialect, build_plan

_PASSIVE = "the create and assert policies set passive"
_INTS = (-(2**63), 2**64 - 1)  # signed 64 bits down, unsigned 64 bits up
QUEUE_DECLARE = FieldMap(
    "queue.declare",
    bools={"durable": "durable", "auto-delete": "auto_delete", "exclusive": "exclusive"},
    strings={"alternate-exchange": "alternate_exchange"},
    name_field="queue",
    refused={
        "passive": _PASSIVE,
        "type": "a queue has no type",
        "internal": "the draft has no internal exchanges",
        "no-wait": "the draft's declare has no no-wait",
    },
    int_range=_INTS,
)
EXCHANGE_DECLARE = FieldMap(
    "exchange.declare",
    bools={"durable": "durable", "auto-delete": "auto_delete"},
    strings={"type": "type", "alternate-exchange": "alternate_exchange"},
    name_field="exchange",
    refused={
        "passive": _PASSIVE,
        "exclusive": "only queues are exclusive",
        "internal": "the draft has no internal exchanges",
        "no-wait": "the draft's declare has no no-wait",
    },
    int_range=_INTS,
)
MESSAGE_SUBSCRIBE = FieldMap(
    "message.subscribe",
    bools={"exclusive": "exclusive", "no-local": "no_local"},
    refused={
        "queue": "it is the address's name or the subscription queue",
        "destination": "it is the consumer_tag argument",
        "accept-mode": "confirm-mode is set by link.reliability",
        "confirm-mode": "it is set by link.reliability",
        "acquire-mode": "it is set by mode",
        "resume-id": "the draft has no resumable subscriptions",
        "resume-ttl": "the draft has no resumable subscriptions",
    },
    table="filter",
    int_range=_INTS,
)
# The draft's acquire-mode and confirm-mode values.
NO_ACQUIRE, PRE_ACQUIRE = 0, 1
CONFIRM_OFF, CONFIRM_ON = 0, 1


def _subscribe(
    link: Link, pkg: ModuleType, queue: str, reliable: bool, exclusive: bool, browse: bool
) -> Method:
    fields = read_fields(
        link, link.x_subscribe, ("link", "x-subscribe"), MESSAGE_SUBSCRIBE, {"exclusive": exclusive}
    )
    return pkg.Message.Subscribe(  # type: ignore[no-any-return]
        queue=queue,
        destination=link.consumer_tag,
        confirm_mode=CONFIRM_ON if reliable else CONFIRM_OFF,
        acquire_mode=NO_ACQUIRE if browse else PRE_ACQUIRE,
        **fields,
    )


def _cancel(link: Link, pkg: ModuleType) -> Method:
    return pkg.Message.Cancel(destination=link.consumer_tag)  # type: ignore[no-any-return]


DIALECT = Dialect(
    queue_declare=QUEUE_DECLARE,
    exchange_declare=EXCHANGE_DECLARE,
    int_range=_INTS,
    subscribe=_subscribe,
    cancel=_cancel,
    browse=None,
)


def plan_link(link: Link, pkg: ModuleType) -> Plan:
    """The 0-10 draft methods for ``link``, from the generated package ``pkg``."""
    return build_plan(link, pkg, DIALECT)
