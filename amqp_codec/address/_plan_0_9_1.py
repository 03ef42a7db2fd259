"""Address plans in AMQP 0-9-1: Qpid's 0-10 resolution steps, each as the 0-9-1 method that does
the same on a 0-9-1 broker.

========================  ===============================================================
Qpid (0-10)               0-9-1
========================  ===============================================================
create                    ``queue.declare`` / ``exchange.declare`` with the node's
                          properties, then the node's ``x-bindings``
existence check, assert   ``passive`` declare (names starting ``amq.`` are reserved and
                          only ever declared passively)
x-bindings                ``queue.bind``; ``exchange.bind`` for exchange to exchange
subscription queue        ``queue.declare`` (exclusive, auto-delete unless reliable)
message.subscribe         ``basic.consume``; accept-mode none is ``no_ack``
acquire-mode not-acquired none: browsing raises :class:`AddressPlanError`
on close                  ``queue.unbind`` / ``exchange.unbind`` of the link's bindings,
                          ``basic.cancel``, ``queue.delete`` of an exclusive subscription
                          queue (``if_unused``), then the ``delete`` policy's delete
========================  ===============================================================

``x-declare`` is written for 0-10's declare commands (see ``_plan_fields`` for how a map is
read). Its 0-9-1 fields are ``durable``, ``auto-delete``, ``no-wait``, ``exclusive`` for
queues, ``type`` and ``internal`` for exchanges; an exchange's ``alternate-exchange`` becomes
the ``alternate-exchange`` argument (RabbitMQ's name). ``passive`` (the policies decide it), a
queue's ``alternate-exchange`` (0-9-1 queues have none) and a field of the other kind of node
are errors. ``x-subscribe`` is read onto ``basic.consume`` (``exclusive``, ``no-local``,
``no-wait``, ``arguments``); its 0-10 fields ``queue``, ``destination``, ``accept-mode``,
``acquire-mode``, ``resume-id`` and ``resume-ttl`` are set by other options or have no
equivalent, and are errors.
"""

from __future__ import annotations

from types import ModuleType

from ..base import Method
from ._plan import Link, Plan
from ._plan_fields import FieldMap, read_fields
from ._plan_steps import Dialect, build_plan

_PASSIVE = "the create and assert policies set passive"
QUEUE_DECLARE = FieldMap(
    "queue.declare",
    bools={
        "durable": "durable",
        "auto-delete": "auto_delete",
        "exclusive": "exclusive",
        "no-wait": "no_wait",
    },
    name_field="queue",
    refused={
        "passive": _PASSIVE,
        "alternate-exchange": "0-9-1 queues have no alternate exchange",
        "type": "a queue has no type",
        "internal": "only exchanges are internal",
    },
)
EXCHANGE_DECLARE = FieldMap(
    "exchange.declare",
    bools={
        "durable": "durable",
        "auto-delete": "auto_delete",
        "internal": "internal",
        "no-wait": "no_wait",
    },
    strings={"type": "type"},
    name_field="exchange",
    as_arguments={"alternate-exchange": "alternate-exchange"},
    refused={"passive": _PASSIVE, "exclusive": "only queues are exclusive"},
)
BASIC_CONSUME = FieldMap(
    "basic.consume",
    bools={"exclusive": "exclusive", "no-local": "no_local", "no-wait": "no_wait"},
    refused={
        "queue": "0-10's queue is the address's name or the subscription queue",
        "destination": "0-10's destination is the consumer_tag argument",
        "accept-mode": "0-10's accept-mode is set by link.reliability",
        "acquire-mode": "0-10's acquire-mode is set by mode, and 0-9-1 cannot browse",
        "resume-id": "0-9-1 has no resumable subscriptions",
        "resume-ttl": "0-9-1 has no resumable subscriptions",
    },
)


def _consume(
    link: Link, pkg: ModuleType, queue: str, reliable: bool, exclusive: bool, browse: bool
) -> Method:
    """``basic.consume``: unacknowledged (``no_ack``) unless reliable."""
    fields = read_fields(
        link, link.x_subscribe, ("link", "x-subscribe"), BASIC_CONSUME, {"exclusive": exclusive}
    )
    return pkg.Basic.Consume(  # type: ignore[no-any-return]
        queue=queue, consumer_tag=link.consumer_tag, no_ack=not reliable, **fields
    )


def _cancel(link: Link, pkg: ModuleType) -> Method:
    return pkg.Basic.Cancel(consumer_tag=link.consumer_tag)  # type: ignore[no-any-return]


DIALECT = Dialect(
    queue_declare=QUEUE_DECLARE,
    exchange_declare=EXCHANGE_DECLARE,
    int_range=(-(2**63), 2**63 - 1),  # signed 64 bits, the widest 0-9-1 table integer
    subscribe=_consume,
    cancel=_cancel,
    browse="0-9-1 cannot browse a queue: every consumer acquires its messages",
)


def plan_link(link: Link, pkg: ModuleType) -> Plan:
    """The 0-9-1 methods for ``link``, from the generated package ``pkg``."""
    return build_plan(link, pkg, DIALECT)
