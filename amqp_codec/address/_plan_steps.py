"""The order of a plan's steps, as Qpid's clients take them; a :class:`Dialect` says how each
step is written in one protocol version.

Sender: check or create the node (and bind it as ``node.x-bindings`` say when creating), then
the link's ``x-bindings``. Receiver on a queue: the same, then subscribe. Receiver on a topic:
check or create the exchange, declare and bind the private subscription queue, the link's
``x-bindings``, subscribe. On close: unbind the link's bindings, cancel, delete an exclusive
subscription queue, then the node under the ``delete`` policy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

from ..base import Method
from ._plan import Link, Plan
from ._plan_fields import FieldMap, bind, read_fields, shortstr, stated_durability
from ._plan_fields import subscription_queue as subscription_queue_name

#: (link, package, queue, reliable, exclusive, browse) → the subscribe method.
Subscribe = Callable[[Link, ModuleType, str, bool, bool, bool], Method]


@dataclass(frozen=True, slots=True)
class Dialect:
    """How one protocol version writes the steps.

    Attributes:
        queue_declare, exchange_declare: how ``x-declare`` maps onto the declare methods.
        int_range: the integers its field tables hold.
        subscribe: builds the subscription (``basic.consume``, ``message.subscribe``).
        cancel: builds its cancellation from the link.
        browse: why browsing is refused, or ``None`` when ``subscribe`` can browse.
    """

    queue_declare: FieldMap
    exchange_declare: FieldMap
    int_range: tuple[int, int]
    subscribe: Subscribe
    cancel: Callable[[Link, ModuleType], Method]
    browse: str | None


def _declare_node(link: Link, pkg: ModuleType, dialect: Dialect) -> list[Method]:
    exchange = link.node_type == "topic"
    fields = read_fields(
        link,
        link.x_declare,
        ("node", "x-declare"),
        dialect.exchange_declare if exchange else dialect.queue_declare,
        {"durable": link.durable, **({"type": "topic"} if exchange else {})},
        name=link.name,
        durable_option=stated_durability(link, "node"),
    )
    # Names starting "amq." are reserved: the specs let clients declare them passively only.
    active = link.create and not link.name.startswith("amq.")
    if exchange:
        declare = (
            pkg.Exchange.Declare(exchange=link.name, **fields)
            if active
            else pkg.Exchange.Declare(exchange=link.name, passive=True)
        )
    else:
        declare = (
            pkg.Queue.Declare(queue=link.name, **fields)
            if active
            else pkg.Queue.Declare(queue=link.name, passive=True)
        )
    methods: list[Method] = [declare]
    if link.create:
        methods.extend(
            bind(link, pkg, b, dialect.int_range, unbind=False) for b in link.node_bindings
        )
    return methods


def build_plan(link: Link, pkg: ModuleType, dialect: Dialect) -> Plan:
    """The plan for ``link`` in the protocol of ``pkg``, written as ``dialect`` says."""
    shortstr(link, link.name, None)
    methods = _declare_node(link, pkg, dialect)

    link_binds = [bind(link, pkg, b, dialect.int_range, unbind=False) for b in link.link_bindings]
    on_close: list[Method] = [
        bind(link, pkg, b, dialect.int_range, unbind=True) for b in link.link_bindings
    ]
    queue: str | None = link.name if link.node_type == "queue" else None
    exchange: str | None = None
    routing_key: str | None = None
    consumer_tag: str | None = None
    if link.role == "sender":
        exchange = "" if link.node_type == "queue" else link.name
        routing_key = link.name if link.node_type == "queue" else (link.subject or "")
        shortstr(link, routing_key, ("/",) if link.node_type == "topic" else None)
        methods.extend(link_binds)
    elif link.subscription is None:  # a receiver on a queue: subscribe to it
        consumer_tag = link.consumer_tag
        if link.browse and dialect.browse is not None:
            raise link.error(("mode",), f"consume ({dialect.browse})", "'browse'")
        methods.extend(link_binds)
        methods.append(
            dialect.subscribe(link, pkg, link.name, not link.unreliable, False, link.browse)
        )
        on_close.append(dialect.cancel(link, pkg))
    else:  # a receiver on a topic: a private queue bound to it
        consumer_tag = link.consumer_tag
        sub = link.subscription
        queue = subscription_queue_name(link, sub)
        fields = read_fields(
            link,
            sub.x_declare,
            ("link", "x-declare"),
            dialect.queue_declare,
            {"durable": sub.durable, "exclusive": True, "auto_delete": not sub.reliable},
            name=queue,
            durable_option=stated_durability(link, "link"),
        )
        methods.append(pkg.Queue.Declare(queue=queue, **fields))
        methods.extend(bind(link, pkg, b, dialect.int_range, unbind=False) for b in sub.bindings)
        methods.extend(link_binds)
        methods.append(
            dialect.subscribe(link, pkg, queue, sub.reliable, fields["exclusive"], False)
        )
        on_close.append(dialect.cancel(link, pkg))
        if fields["exclusive"]:
            on_close.append(pkg.Queue.Delete(queue=queue, if_unused=True))
    if link.delete:
        if link.node_type == "queue":
            on_close.append(pkg.Queue.Delete(queue=link.name))
        elif link.name.startswith("amq."):
            policy = link.address.options.get("delete")
            raise link.error(("delete",), "never for a reserved amq.* exchange", repr(policy))
        else:
            on_close.append(pkg.Exchange.Delete(exchange=link.name))
    return Plan(
        role=link.role,
        node_type=link.node_type,
        methods=tuple(methods),
        on_close=tuple(on_close),
        queue=queue,
        exchange=exchange,
        routing_key=routing_key,
        subject=link.subject,
        consumer_tag=consumer_tag,
    )
