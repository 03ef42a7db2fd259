"""Planning the protocol work that resolves an address: the public API and what every protocol
shares.

:func:`plan` reads an address as Qpid's clients do (``qpid::client::amqp0_10::AddressResolution``
and ``qpid.messaging.driver``) into a protocol-neutral :class:`Link`: which node, of which kind,
whether this role creates, asserts or deletes it, its bindings with their defaults filled in,
the private subscription queue of a receiver on a topic, reliability and browsing. A planner per
protocol version (``_plan_0_9_1``, ``_plan_0_10_draft``) writes the steps of ``_plan_steps`` in
the methods of that version.
"""

from __future__ import annotations

import importlib
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Literal

from ..base import Method
from ..errors import AMQPError
from ..protocol import ProtocolSpec
from ._errors import AddressError
from ._model import Address
from ._parser import parse
from ._validation import validate
from ._values import OptionMap, OptionValue, Path, format_path
from ._writer import Positions, write

Role = Literal["sender", "receiver"]
NodeType = Literal["queue", "topic"]

_EMPTY = OptionMap()
_ROLES = ("sender", "receiver")
_NODE_TYPES = ("queue", "topic")
#: Names of generated subscription queues: ``<node>_<uuid5 of this namespace and the address>``.
_SUBSCRIPTION_NAMESPACE = uuid.UUID("6f1c1d0e-5a0b-5b8e-9a53-1f0a7e0c2d41")


class AddressPlanError(AddressError):
    """A valid address that cannot be planned for the chosen protocol version.

    Raised by :func:`plan` for what the protocol cannot express (``mode: browse`` in 0-9-1), for
    protocol-specific contents it cannot use (an ``x-declare`` value of the wrong type, a field
    with no equivalent) and for incomplete bindings (a binding that names no exchange). ``text``
    is ``str(address)`` and ``column`` points at the offending option in it.

    Attributes:
        path: the option's path (``mode``, ``node.x-declare.auto-delete``,
            ``link.x-bindings[0]``), or ``None`` when the problem is the name or the subject.
    """

    def __init__(
        self,
        reason: str,
        *,
        text: str,
        column: int,
        expected: str,
        found: str,
        path: str | None,
    ) -> None:
        self.path = path
        super().__init__(reason, text=text, column=column, expected=expected, found=found)


class UnsupportedSpecError(AMQPError, ValueError):
    """:func:`plan` was given a protocol version it has no planner for."""


@dataclass(frozen=True, slots=True)
class Plan:
    """The protocol work that resolves an address for one sender or receiver.

    Attributes:
        role: ``"sender"`` or ``"receiver"``.
        node_type: ``"queue"`` or ``"topic"``, as planned.
        methods: the methods to send, in order, to resolve the address; a receiver's plan ends
            with its subscription (``basic.consume``), a sender's before its first message.
        on_close: the methods to send, in order, when the sender or receiver closes: unbinding
            the link's ``x-bindings``, cancelling the subscription, deleting the subscription
            queue and, under the ``delete`` policy, the node.
        queue: the queue a receiver consumes from (the node, or its private subscription queue
            on a topic); for a sender, the queue node it publishes to, or ``None`` for a topic.
        exchange: the exchange a sender publishes to (``""``, the default exchange, for a queue
            node); ``None`` for a receiver.
        routing_key: the routing key a sender publishes with: the queue's name for a queue
            node, the subject (``""`` without one) for a topic; ``None`` for a receiver.
        subject: the address's subject: a sender's default message subject (Qpid also carries
            it in the ``qpid.subject`` application header), a receiver's filter.
        consumer_tag: a receiver's consumer tag (the subscription's destination in 0-10);
            ``None`` for a sender.
    """

    role: Role
    node_type: NodeType
    methods: tuple[Method, ...]
    on_close: tuple[Method, ...]
    queue: str | None
    exchange: str | None
    routing_key: str | None
    subject: str | None
    consumer_tag: str | None


@dataclass(frozen=True, slots=True)
class Binding:
    """One binding with Qpid's defaults filled in (internal).

    ``queue`` is ``None`` for an exchange-to-exchange binding, whose destination is the
    topic node ``destination``; otherwise ``destination`` is ``queue``.
    """

    exchange: str
    queue: str | None
    destination: str
    key: str
    arguments: Mapping[str, OptionValue]
    path: Path


@dataclass(frozen=True, slots=True)
class Subscription:
    """A receiver's private queue on a topic (internal)."""

    queue: str
    generated: bool
    """The queue's name was made up, not given by ``link.name`` or the caller."""
    durable: bool
    reliable: bool
    x_declare: Mapping[str, OptionValue]
    bindings: tuple[Binding, ...]
    """The default binding: the subject, or everything the exchange type can match."""


@dataclass(frozen=True, slots=True)
class Link:
    """What an address asks of one sender or receiver, protocol aside (internal).

    Planners read this and call :meth:`error` for what their protocol cannot do.
    """

    address: Address
    text: str
    positions: Positions
    role: Role
    name: str
    subject: str | None
    node_type: NodeType
    exchange_type: str
    create: bool
    assert_: bool
    delete: bool
    durable: bool
    x_declare: Mapping[str, OptionValue]
    node_bindings: tuple[Binding, ...]
    link_bindings: tuple[Binding, ...]
    browse: bool
    unreliable: bool
    x_subscribe: Mapping[str, OptionValue]
    subscription: Subscription | None
    consumer_tag: str

    def error(
        self, path: Path | None, expected: str, found: str, *, at_key: bool = False
    ) -> AddressPlanError:
        """An :class:`AddressPlanError` at the option ``path`` (``None``: the name;
        ``("/",)``: the subject)."""
        return plan_error(self.text, self.positions, self.name, path, expected, found, at_key)


def plan_error(
    text: str,
    positions: Positions,
    name: str,
    path: Path | None,
    expected: str,
    found: str,
    at_key: bool = False,
) -> AddressPlanError:
    """An :class:`AddressPlanError` pointing into ``text`` (``str(address)``)."""
    if path is None or path == ("/",):
        column = 1 if path is None else len(write(name, None, _EMPTY)[0]) + 2
        where = "the name" if path is None else "the subject"
        return AddressPlanError(
            f"{where}: expected {expected}, found {found}",
            text=text,
            column=column,
            expected=expected,
            found=found,
            path=None,
        )
    key_at, value_at = positions.get(path, (0, 0))
    shown = format_path(path)
    return AddressPlanError(
        f"option {shown}: expected {expected}, found {found}",
        text=text,
        column=(key_at if at_key else value_at) + 1,
        expected=expected,
        found=found,
        path=shown,
    )


def _map(options: Mapping[str, OptionValue], key: str) -> Mapping[str, OptionValue]:
    value = options.get(key)
    return value if isinstance(value, Mapping) else _EMPTY


def _list(options: Mapping[str, OptionValue], key: str) -> Sequence[OptionValue]:
    value = options.get(key)
    return value if isinstance(value, tuple) else ()


def _str(options: Mapping[str, OptionValue], key: str) -> str | None:
    value = options.get(key)
    return value if isinstance(value, str) else None


def _enabled(options: Mapping[str, OptionValue], policy: str, role: Role) -> bool:
    return options.get(policy) in ("always", role)


def _bindings(
    fail: Callable[[Path | None, str, str], AddressPlanError],
    items: Sequence[OptionValue],
    path: Path,
    *,
    default_exchange: str | None,
    default_queue: str | None,
    topic: str | None,
) -> tuple[Binding, ...]:
    """Bindings with Qpid's defaults: the node's name is the default queue of a queue node and
    the default exchange of a topic node; a receiver's subscription queue is the default queue
    of its link bindings. On a topic node, a binding naming another exchange and no queue binds
    that exchange to the node (exchange to exchange)."""
    out: list[Binding] = []
    for i, item in enumerate(items):
        here = (*path, i)
        binding = item if isinstance(item, Mapping) else _EMPTY
        exchange = _str(binding, "exchange")
        queue = _str(binding, "queue")
        if queue is None:
            queue = default_queue
        if exchange is None:
            exchange = default_exchange
        if exchange is None:
            raise fail(here, "a binding with an exchange", "no exchange")
        if exchange == "":
            raise fail((*here, "exchange"), "an exchange name", "the default exchange ''")
        if queue is not None:
            destination = queue
        elif topic is not None and exchange != topic:
            destination = topic  # exchange to exchange: the node receives from `exchange`
        else:
            raise fail(here, "a binding with a queue", "no queue")
        out.append(
            Binding(
                exchange=exchange,
                queue=queue,
                destination=destination,
                key=_str(binding, "key") or "",
                arguments=_map(binding, "arguments"),
                path=here,
            )
        )
    return tuple(out)


def _default_bindings(
    name: str, queue: str, subject: str | None, exchange_type: str, path: Path
) -> tuple[Binding, ...]:
    """The subscription queue's own binding, as Qpid's C++ client makes it: the subject as the
    binding key (headers and XML exchanges match it as ``qpid.subject``), or without a subject
    whatever matches everything on the exchange type (``#`` on a topic exchange)."""
    arguments: dict[str, OptionValue] = {}
    if subject:
        key = subject
        if exchange_type == "headers":
            arguments = {"qpid.subject": subject, "x-match": "all"}
        elif exchange_type == "xml":
            arguments = {
                "xquery": f"declare variable $qpid.subject external; $qpid.subject = '{subject}'"
            }
    elif exchange_type == "topic":
        key = "#"
    elif exchange_type == "fanout":
        key = queue
    elif exchange_type == "headers":
        key, arguments = "match-all", {"x-match": "all"}
    elif exchange_type == "xml":
        key, arguments = "", {"xquery": "true()"}
    else:
        key = ""
    return (Binding(name, queue, queue, key, OptionMap(arguments), path),)


def read_link(
    address: Address,
    role: Role,
    *,
    node_type: NodeType | None,
    exchange_type: str | None,
    subscription_queue: str | None,
    consumer_tag: str | None,
) -> Link:
    """Read ``address`` for ``role`` into a :class:`Link` (validating its options first)."""
    validate(address)
    options = address.options
    node = _map(options, "node")
    link_options = _map(options, "link")
    text, positions = write(address.name, address.subject, options)

    def fail(path: Path | None, expected: str, found: str) -> AddressPlanError:
        return plan_error(text, positions, address.name, path, expected, found)

    if address.name == "":
        raise fail(None, "a node name", "the empty name")

    kind = _str(node, "type") or node_type or "queue"
    x_declare = _map(node, "x-declare")
    declared_type = _str(x_declare, "type")
    if kind == "topic":
        resolved_type = exchange_type or declared_type or "topic"
    else:
        resolved_type = ""
    reliability = _str(link_options, "reliability")
    link_durable = link_options.get("durable") is True
    unreliable = reliability in ("unreliable", "at-most-once")
    browse = options.get("mode") == "browse"

    name = address.name
    topic = name if kind == "topic" else None
    subscription: Subscription | None = None
    sub_queue = None
    if role == "receiver" and kind == "topic":
        sub_queue = _str(link_options, "name") or subscription_queue
        generated = sub_queue is None
        if sub_queue is None:
            digest = uuid.uuid5(_SUBSCRIPTION_NAMESPACE, f"{role} {text}").hex
            sub_queue = f"{name}_{digest}"
        # A subscription is reliable when asked for, or when the link is durable and
        # unreliability was not asked for (Qpid's C++ client).
        reliable = reliability in ("at-least-once", "exactly-once") or (
            link_durable and not unreliable
        )
        own: tuple[Binding, ...] = ()
        if address.subject or not _list(link_options, "x-bindings"):
            own = _default_bindings(name, sub_queue, address.subject, resolved_type, ("/",))
        subscription = Subscription(
            queue=sub_queue,
            generated=generated,
            durable=link_durable,
            reliable=reliable,
            x_declare=_map(link_options, "x-declare"),
            bindings=own,
        )
    default_queue = name if kind == "queue" else None
    node_bindings = _bindings(
        fail,
        _list(node, "x-bindings"),
        ("node", "x-bindings"),
        default_exchange=topic,
        default_queue=default_queue,
        topic=topic,
    )
    link_bindings = _bindings(
        fail,
        _list(link_options, "x-bindings"),
        ("link", "x-bindings"),
        default_exchange=topic,
        default_queue=sub_queue or default_queue,
        topic=None if sub_queue else topic,
    )
    tag = ""
    if role == "receiver":
        tag = consumer_tag if consumer_tag is not None else (sub_queue or name)
    return Link(
        address=address,
        text=text,
        positions=positions,
        role=role,
        name=name,
        subject=address.subject,
        node_type="topic" if kind == "topic" else "queue",
        exchange_type=resolved_type,
        create=_enabled(options, "create", role),
        assert_=_enabled(options, "assert", role),
        delete=_enabled(options, "delete", role),
        durable=node.get("durable") is True,
        x_declare=x_declare,
        node_bindings=node_bindings,
        link_bindings=link_bindings,
        browse=browse,
        unreliable=unreliable,
        x_subscribe=_map(link_options, "x-subscribe"),
        subscription=subscription,
        consumer_tag=tag,
    )


#: Planners by generated package: a function from a :class:`Link` to a :class:`Plan`.
Planner = Callable[[Link, ModuleType], Plan]
_PLANNERS: dict[str, str] = {
    "amqp_codec.v0_9_1": "amqp_codec.address._plan_0_9_1",
    "amqp_codec.v0_10_draft": "amqp_codec.address._plan_0_10_draft",
}
_PACKAGES_BY_SPEC_NAME = {"0-9-1": "amqp_codec.v0_9_1", "99-0": "amqp_codec.v0_10_draft"}


def _package(spec: ModuleType | ProtocolSpec) -> str:
    if isinstance(spec, ModuleType):
        return spec.__name__
    if isinstance(spec, ProtocolSpec):
        return _PACKAGES_BY_SPEC_NAME.get(spec.name, f"<spec {spec.name}>")
    raise TypeError(
        f"spec must be a generated package such as amqp_codec.v0_9_1, not {type(spec).__name__}"
    )


def plan(
    address: Address | str,
    role: Role = "receiver",
    spec: ModuleType | ProtocolSpec | None = None,
    *,
    node_type: NodeType | None = None,
    exchange_type: str | None = None,
    subscription_queue: str | None = None,
    consumer_tag: str | None = None,
) -> Plan:
    """The methods a client sends to resolve ``address`` for a sender or a receiver.

    The plan follows the reference's semantics as Qpid's clients carry them out, step by step:

    1. The node. When the ``create`` policy acts for this role, it is declared with the
       properties of ``node`` (``durable``, ``x-declare``; a topic is an exchange of type
       ``topic`` unless ``x-declare`` says otherwise), then bound as ``node.x-bindings`` say.
       Otherwise a passive declare checks that it exists and is of its kind, as Qpid's
       clients check when they do not create; ``assert`` asks for no more, since a passive
       declare cannot compare properties (and a create's declare already fails on an
       existing node with other properties). ``node.x-bindings`` are bound only on create.
    2. The link's ``x-bindings``, established whatever the policies say, and unbound on close.
       A binding's queue defaults to the queue node (or a receiver's subscription queue) and
       its exchange to the topic node; on a topic node, a binding that names another exchange
       and no queue binds that exchange to the node (exchange to exchange).
    3. A receiver on a topic gets a private queue: named by ``link.name``, else
       ``subscription_queue``, else generated; durable as ``link.durable``; exclusive unless
       ``link.x-declare`` says otherwise; auto-deleted unless reliable, where reliable means
       ``link.reliability`` at-least-once or exactly-once, or a durable link not asking for
       unreliable or at-most-once. It is bound to the topic with the subject as the binding
       key or, without a subject and without link bindings, with what matches everything
       (``#`` on a topic exchange). Consuming is ``no_ack`` unless reliable, and exclusive
       like the queue unless ``link.x-subscribe`` says otherwise.
    4. A receiver on a queue consumes from it, ``no_ack`` when ``link.reliability`` is
       unreliable or at-most-once; the subject filters nothing (as the reference says);
       ``mode: browse`` is planned where the protocol can express it (a no-acquire
       subscription in the 0-10 draft) and raises :class:`AddressPlanError` where it cannot
       (0-9-1). ``mode`` means nothing to senders
       and to receivers on topics.
    5. A sender publishes to the default exchange with the queue's name as routing key, or to
       the topic's exchange with the subject as routing key (:attr:`Plan.exchange`,
       :attr:`Plan.routing_key`); its plan ends before the first message.

    On close (:attr:`Plan.on_close`): the link's bindings are unbound, a receiver's
    subscription cancelled and its exclusive subscription queue deleted (``if_unused``), and
    the node deleted when the ``delete`` policy acts for this role.

    Args:
        address: an :class:`Address`, or an address string to :func:`parse` first.
        role: ``"sender"`` or ``"receiver"``; the ``create``, ``assert`` and ``delete``
            policies act for ``always`` and for their role.
        spec: the generated protocol package (``amqp_codec.v0_9_1``, the default, or
            ``amqp_codec.v0_10_draft``) or its ``SPEC``; a version without a planner raises
            :class:`UnsupportedSpecError`.
        node_type: the kind of node when the address does not say (``node.type`` wins). Qpid's
            clients ask the broker; a static plan cannot, so it takes this, and without it a
            queue, the reference's default node type.
        exchange_type: the type of the exchange behind a topic node, which picks a receiver's
            default binding (Qpid asks the broker); without it ``node.x-declare.type``, then
            ``topic``.
        subscription_queue: the name of a receiver's private queue on a topic when the link has
            no ``name``. Without either, a deterministic name: the node's name, ``_`` and a
            UUID derived from the address, so the same address plans the same methods. Give a
            unique name for two receivers of one address on one connection.
        consumer_tag: a receiver's consumer tag; without it the name of the queue it consumes.

    Raises:
        AddressOptionError: the options break the option tables.
        AddressPlanError: the address cannot be planned for this protocol version.
        UnsupportedSpecError: no planner for ``spec``.
    """
    if role not in _ROLES:
        raise ValueError(f"role must be 'sender' or 'receiver', not {role!r}")
    if node_type is not None and node_type not in _NODE_TYPES:
        raise ValueError(f"node_type must be 'queue', 'topic' or None, not {node_type!r}")
    package_name = "amqp_codec.v0_9_1" if spec is None else _package(spec)
    planner_module = _PLANNERS.get(package_name)
    if planner_module is None:
        supported = ", ".join(sorted(_PLANNERS))
        raise UnsupportedSpecError(
            f"no address planner for {package_name}; planners exist for {supported}"
        )
    for argument, value in (
        ("subscription_queue", subscription_queue),
        ("consumer_tag", consumer_tag),
    ):
        if value is not None:
            if not isinstance(value, str):
                raise TypeError(f"{argument} must be a str or None, not {type(value).__name__}")
            if len(value.encode("utf-8", "surrogateescape")) > 255:
                raise ValueError(f"{argument} must be at most 255 bytes of UTF-8")
    if exchange_type is not None and not isinstance(exchange_type, str):
        raise TypeError(f"exchange_type must be a str or None, not {type(exchange_type).__name__}")
    if isinstance(address, str):
        address = parse(address)
    elif not isinstance(address, Address):
        raise TypeError(f"address must be an Address or a str, not {type(address).__name__}")
    link = read_link(
        address,
        role,
        node_type=node_type,
        exchange_type=exchange_type,
        subscription_queue=subscription_queue,
        consumer_tag=consumer_tag,
    )
    planner: Planner = importlib.import_module(planner_module).plan_link
    return planner(link, importlib.import_module(package_name))
