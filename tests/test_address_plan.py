"""Planning the AMQP 0-9-1 methods that resolve Qpid Messaging addresses: the reference's
examples and every option, checked method by method; the errors for what 0-9-1 cannot do; and
a hypothesis property that every plan encodes and decodes back to the same methods."""

from __future__ import annotations

import re
import types
import uuid
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

import pytest
from broker_support import run as run_live
from conftest import BROKER_ADDRESS
from hypothesis import event, given
from hypothesis import strategies as st

from amqp_codec import (
    AMQPError,
    FrameDecoder,
    Message,
    MethodFrame,
    encode_frame,
    v0_9_1,
)
from amqp_codec.address import (
    Address,
    AddressError,
    AddressOptionError,
    AddressPlanError,
    Plan,
    UnsupportedSpecError,
    parse,
    plan,
)
from amqp_codec.base import Method
from amqp_codec.v0_9_1 import Basic, BasicProperties, Exchange, Queue
from examples.amqp_client import AMQPClient, ChannelClosed
from examples.amqp_client import Channel as AMQPChannel

XQUERY = "let $w := ./weather return $w/station = 'KRDU' and $w/wind_speed_mph > 7"


def assert_points_at(error: AddressPlanError) -> None:
    """The error's column is at its option: the key, or the value after ``key: ``."""
    assert error.path is not None
    before, at = error.text[: error.offset], error.text[error.offset :]
    if error.path.endswith("]"):
        assert at.startswith("{")
    else:
        key = error.path.rsplit(".", 1)[-1]
        assert at.startswith(key) or before.endswith(f"{key}: ")


def passive_queue(name: str) -> Queue.Declare:
    return Queue.Declare(queue=name, passive=True)


def passive_exchange(name: str) -> Exchange.Declare:
    return Exchange.Declare(exchange=name, passive=True)


def consume(queue: str, **fields: Any) -> Basic.Consume:
    fields.setdefault("consumer_tag", queue)
    return Basic.Consume(queue=queue, **fields)


def subscription(
    queue: str, *, durable: bool = False, auto_delete: bool = True, **fields: Any
) -> Queue.Declare:
    fields.setdefault("exclusive", True)
    return Queue.Declare(queue=queue, durable=durable, auto_delete=auto_delete, **fields)


def topic_receiver(
    exchange: str, key: str, queue: str = "sub", *, declare: Method | None = None
) -> tuple[Method, ...]:
    """A receiver on an existing topic: check it, declare and bind a private queue, consume."""
    return (
        declare or passive_exchange(exchange),
        subscription(queue),
        Queue.Bind(queue=queue, exchange=exchange, routing_key=key),
        consume(queue, no_ack=True, exclusive=True),
    )


def topic_receiver_close(queue: str = "sub") -> tuple[Method, ...]:
    return (Basic.Cancel(consumer_tag=queue), Queue.Delete(queue=queue, if_unused=True))


def planned(
    *,
    role: Any,
    node_type: Any,
    methods: tuple[Method, ...],
    on_close: tuple[Method, ...],
    queue: str | None = None,
    exchange: str | None = None,
    routing_key: str | None = None,
    subject: str | None = None,
    consumer_tag: str | None = None,
) -> Plan:
    """A :class:`Plan`, fields by name, ``None`` where not given."""
    return Plan(
        role=role,
        node_type=node_type,
        methods=methods,
        on_close=on_close,
        queue=queue,
        exchange=exchange,
        routing_key=routing_key,
        subject=subject,
        consumer_tag=consumer_tag,
    )


def queue_receiver(name: str, declare: Method | None = None) -> tuple[Method, ...]:
    return (declare or passive_queue(name), consume(name))


# --------------------------------------------------------------------------------------------
# Every example of the reference, for the programs that use it (drain receives, spout sends).
# The node type of an existing node comes from qpid-config in the examples; a static plan gets
# it as node_type (and the exchange type as exchange_type).

TOPIC = {"node_type": "topic", "subscription_queue": "sub"}

REFERENCE_PLANS: list[tuple[str, str, dict[str, Any], Plan]] = [
    # Example 1.4, Queues: qpid-config add queue hello-world
    (
        "hello-world",
        "sender",
        {},
        planned(
            role="sender",
            node_type="queue",
            methods=(passive_queue("hello-world"),),
            on_close=(),
            queue="hello-world",
            exchange="",
            routing_key="hello-world",
        ),
    ),
    (
        "hello-world",
        "receiver",
        {},
        planned(
            role="receiver",
            node_type="queue",
            methods=queue_receiver("hello-world"),
            on_close=(Basic.Cancel(consumer_tag="hello-world"),),
            queue="hello-world",
            consumer_tag="hello-world",
        ),
    ),
    # Example 1.5, Topics: qpid-config add exchange topic hello-world
    (
        "hello-world",
        "sender",
        TOPIC,
        planned(
            role="sender",
            node_type="topic",
            methods=(passive_exchange("hello-world"),),
            on_close=(),
            exchange="hello-world",
            routing_key="",
        ),
    ),
    (
        "hello-word",
        "receiver",
        TOPIC,
        planned(
            role="receiver",
            node_type="topic",
            methods=topic_receiver("hello-word", "#"),
            on_close=topic_receiver_close(),
            queue="sub",
            consumer_tag="sub",
        ),
    ),
    # Footnote 2: amq.topic, the default address of spout and drain
    (
        "amq.topic",
        "receiver",
        TOPIC,
        planned(
            role="receiver",
            node_type="topic",
            methods=topic_receiver("amq.topic", "#"),
            on_close=topic_receiver_close(),
            queue="sub",
            consumer_tag="sub",
        ),
    ),
    (
        "amq.topic",
        "sender",
        TOPIC,
        planned(
            role="sender",
            node_type="topic",
            methods=(passive_exchange("amq.topic"),),
            on_close=(),
            exchange="amq.topic",
            routing_key="",
        ),
    ),
    # Example 1.6, Using subjects
    (
        "news-service/sports",
        "receiver",
        TOPIC,
        planned(
            role="receiver",
            node_type="topic",
            methods=topic_receiver("news-service", "sports"),
            on_close=topic_receiver_close(),
            queue="sub",
            subject="sports",
            consumer_tag="sub",
        ),
    ),
    *[
        (
            f"news-service/{subject}",
            "sender",
            TOPIC,
            planned(
                role="sender",
                node_type="topic",
                methods=(passive_exchange("news-service"),),
                on_close=(),
                exchange="news-service",
                routing_key=subject,
                subject=subject,
            ),
        )
        for subject in (
            "sports",
            "news",
            "usa.news",
            "usa.sports",
            "europe.sports",
            "europe.news",
            "usa.faux.news",
            "usa.faux.sports",
        )
    ],
    # Example 1.7, Subjects with multi-word keys: wildcards are binding keys
    *[
        (
            f"news-service/{pattern}",
            "receiver",
            TOPIC,
            planned(
                role="receiver",
                node_type="topic",
                methods=topic_receiver("news-service", pattern),
                on_close=topic_receiver_close(),
                queue="sub",
                subject=pattern,
                consumer_tag="sub",
            ),
        )
        for pattern in ("*.news", "#.news", "europe.#")
    ],
    # Example 1.8, Assertions on Nodes: a passive declare of the asserted kind
    (
        "my-queue; {assert: always, node:{ type: queue }}",
        "receiver",
        {},
        planned(
            role="receiver",
            node_type="queue",
            methods=queue_receiver("my-queue"),
            on_close=(Basic.Cancel(consumer_tag="my-queue"),),
            queue="my-queue",
            consumer_tag="my-queue",
        ),
    ),
    (
        "my-queue; {assert: always, node:{ type: topic }}",
        "receiver",
        {"subscription_queue": "sub"},
        planned(
            role="receiver",
            node_type="topic",
            methods=topic_receiver("my-queue", "#"),
            on_close=topic_receiver_close(),
            queue="sub",
            consumer_tag="sub",
        ),
    ),
    (
        "my-topic; {assert: always, node:{ type: topic }}",
        "receiver",
        {"subscription_queue": "sub"},
        planned(
            role="receiver",
            node_type="topic",
            methods=topic_receiver("my-topic", "#"),
            on_close=topic_receiver_close(),
            queue="sub",
            consumer_tag="sub",
        ),
    ),
    (
        "my-topic; {assert: always, node:{ type: queue }}",
        "receiver",
        {},
        planned(
            role="receiver",
            node_type="queue",
            methods=queue_receiver("my-topic"),
            on_close=(Basic.Cancel(consumer_tag="my-topic"),),
            queue="my-topic",
            consumer_tag="my-topic",
        ),
    ),
    # Example 1.9, Creating a Queue Automatically
    (
        "xoxox ; {create: always}",
        "receiver",
        {},
        planned(
            role="receiver",
            node_type="queue",
            methods=queue_receiver("xoxox", Queue.Declare(queue="xoxox")),
            on_close=(Basic.Cancel(consumer_tag="xoxox"),),
            queue="xoxox",
            consumer_tag="xoxox",
        ),
    ),
    (
        "xoxox ; {create: always}",
        "sender",
        {},
        planned(
            role="sender",
            node_type="queue",
            methods=(Queue.Declare(queue="xoxox"),),
            on_close=(),
            queue="xoxox",
            exchange="",
            routing_key="xoxox",
        ),
    ),
    # Example 1.10, Browsing a Queue: spout fills the queue (drain's browse is an error below)
    (
        "my-queue",
        "sender",
        {},
        planned(
            role="sender",
            node_type="queue",
            methods=(passive_queue("my-queue"),),
            on_close=(),
            queue="my-queue",
            exchange="",
            routing_key="my-queue",
        ),
    ),
    # The XML exchange (qpid-config add exchange xml xml): x-bindings replace the default binding
    *[
        (
            text,
            "receiver",
            {**TOPIC, "exchange_type": "xml"},
            planned(
                role="receiver",
                node_type="topic",
                methods=(
                    passive_exchange("xml"),
                    subscription("sub"),
                    Queue.Bind(
                        queue="sub",
                        exchange="xml",
                        routing_key="weather",
                        arguments={"xquery": query},
                    ),
                    consume("sub", no_ack=True, exclusive=True),
                ),
                on_close=(
                    Queue.Unbind(
                        queue="sub",
                        exchange="xml",
                        routing_key="weather",
                        arguments={"xquery": query},
                    ),
                    *topic_receiver_close(),
                ),
                queue="sub",
                consumer_tag="sub",
            ),
        )
        for text, query in (
            (
                "xml; { link: { x-bindings: [{exchange:xml, key:weather,"
                ' arguments:{xquery:"./weather"} }] } }',
                "./weather",
            ),
            (
                "xml; {link:{x-bindings:[{key:'weather', arguments:{xquery:\"" + XQUERY + '"}}]}}',
                XQUERY,
            ),
            (
                "xml; {link:{x-bindings:[{exchange:'xml', key:'weather', arguments:{xquery:\""
                + XQUERY
                + '"}}]}}',
                XQUERY,
            ),
        )
    ],
    (
        "xml/weather",
        "sender",
        TOPIC,
        planned(
            role="sender",
            node_type="topic",
            methods=(passive_exchange("xml"),),
            on_close=(),
            exchange="xml",
            routing_key="weather",
            subject="weather",
        ),
    ),
]


@pytest.mark.parametrize(("text", "role", "kwargs", "expected"), REFERENCE_PLANS)
def test_reference_examples(text: str, role: str, kwargs: dict[str, Any], expected: Plan) -> None:
    got = plan(text, role, **kwargs)
    assert list(got.methods) == list(expected.methods)
    assert list(got.on_close) == list(expected.on_close)
    assert got == expected
    assert plan(parse(text), role, v0_9_1, **kwargs) == got


def test_reference_browse_example_is_an_error() -> None:
    # Example 1.10: drain 'my-queue; {mode: browse}'. 0-9-1 has no non-acquiring consumer.
    with pytest.raises(AddressPlanError) as caught:
        plan("my-queue; {mode: browse}", "receiver")
    error = caught.value
    assert error.path == "mode"
    assert error.column == len("my-queue; {mode: ") + 1
    assert error.found == "'browse'"
    assert "browse" in error.expected
    assert str(error).splitlines()[1:] == ["  my-queue; {mode: browse}", "  " + " " * 17 + "^"]


def test_reference_xml_example_needs_the_node_type() -> None:
    # Qpid finds out that "xml" is an exchange by asking the broker; a static plan defaults to
    # a queue, where a binding without an exchange names nothing to bind to.
    with pytest.raises(AddressPlanError) as caught:
        plan("xml; {link:{x-bindings:[{key:'weather'}]}}", "receiver")
    assert caught.value.path == "link.x-bindings[0]"
    assert caught.value.expected == "a binding with an exchange"


def test_reference_option_template() -> None:
    # Section "Address String Options", every key filled in, for both roles.
    text = (
        "news-service/usa.* ; { create: receiver, delete: sender, assert: never, mode: consume,"
        " node: { type: topic, durable: True, x-declare: { type: fanout, auto-delete: true },"
        " x-bindings: [{ exchange: 'amq.direct', queue: q, key: k }] },"
        " link: { name: my-link, durable: False, reliability: at-least-once,"
        " x-declare: { exclusive: false, arguments: {'qpid.max_count': 1000} },"
        " x-bindings: [{ exchange: 'amq.topic', key: '#', arguments: {} }],"
        " x-subscribe: { exclusive: True } } }"
    )
    receiver = plan(text, "receiver")
    assert list(receiver.methods) == [
        Exchange.Declare(exchange="news-service", type="fanout", durable=True, auto_delete=True),
        Queue.Bind(queue="q", exchange="amq.direct", routing_key="k"),
        Queue.Declare(
            queue="my-link",
            durable=False,
            exclusive=False,
            auto_delete=False,  # at-least-once: reliable
            arguments={"qpid.max_count": 1000},
        ),
        Queue.Bind(queue="my-link", exchange="news-service", routing_key="usa.*"),
        Queue.Bind(queue="my-link", exchange="amq.topic", routing_key="#"),
        Basic.Consume(queue="my-link", consumer_tag="my-link", no_ack=False, exclusive=True),
    ]
    assert list(receiver.on_close) == [
        Queue.Unbind(queue="my-link", exchange="amq.topic", routing_key="#"),
        Basic.Cancel(consumer_tag="my-link"),
    ]
    assert (receiver.queue, receiver.exchange, receiver.routing_key) == ("my-link", None, None)

    sender = plan(text, "sender")
    # the sender's link binding on a topic: exchange to exchange, amq.topic feeds news-service
    assert list(sender.methods) == [
        passive_exchange("news-service"),
        Exchange.Bind(destination="news-service", source="amq.topic", routing_key="#"),
    ]
    with pytest.raises(AddressPlanError):  # a binding from the node to itself has no queue
        plan(text.replace("exchange: 'amq.topic', key", "key"), "sender")
    assert list(sender.on_close) == [
        Exchange.Unbind(destination="news-service", source="amq.topic", routing_key="#"),
        Exchange.Delete(exchange="news-service"),
    ]
    assert (sender.exchange, sender.routing_key, sender.queue) == ("news-service", "usa.*", None)


# --------------------------------------------------------------------------------------------
# create, assert, delete: who acts


@pytest.mark.parametrize("policy", ["always", "sender", "receiver", "never", None])
@pytest.mark.parametrize("role", ["sender", "receiver"])
def test_create_policy(policy: str | None, role: str) -> None:
    options = f"{{create: {policy}}}" if policy else "{}"
    got = plan(f"q; {options}", role)
    creates = policy in ("always", role)
    assert got.methods[0] == (Queue.Declare(queue="q") if creates else passive_queue("q"))
    topic = plan(f"t; {{create: {policy or 'never'}, node: {{type: topic}}}}", role)
    expected = Exchange.Declare(exchange="t", type="topic") if creates else passive_exchange("t")
    assert topic.methods[0] == expected


@pytest.mark.parametrize("policy", ["always", "sender", "receiver", "never"])
def test_assert_policy_is_the_passive_declare(policy: str) -> None:
    # 0-9-1 checks existence and kind with a passive declare (which ignores every other field);
    # a create's active declare already fails on a node with other properties (406).
    for role in ("sender", "receiver"):
        asserted = plan(f"q; {{assert: {policy}, node: {{durable: True}}}}", role)
        assert asserted.methods[0] == passive_queue("q")
        created = plan(f"q; {{assert: {policy}, create: always, node: {{durable: True}}}}", role)
        assert created.methods[0] == Queue.Declare(queue="q", durable=True)
        assert len(created.methods) == len(asserted.methods)


@pytest.mark.parametrize("policy", ["always", "sender", "receiver", "never"])
@pytest.mark.parametrize("role", ["sender", "receiver"])
def test_delete_policy(policy: str, role: str) -> None:
    deletes = policy in ("always", role)
    queue = plan(f"q; {{delete: {policy}}}", role)
    cancel = [Basic.Cancel(consumer_tag="q")] if role == "receiver" else []
    assert list(queue.on_close) == cancel + ([Queue.Delete(queue="q")] if deletes else [])
    topic = plan(f"t; {{delete: {policy}, node: {{type: topic}}}}", role, subscription_queue="s")
    tail = [Exchange.Delete(exchange="t")] if deletes else []
    assert (
        list(topic.on_close)
        == (list(topic_receiver_close("s")) if role == "receiver" else []) + tail
    )


def test_reserved_names_are_declared_passively_and_never_deleted() -> None:
    got = plan(
        "amq.direct; {create: always, node: {type: topic, x-declare: {type: direct}}}", "sender"
    )
    assert list(got.methods) == [passive_exchange("amq.direct")]
    got = plan("amq.q; {create: always}", "sender")
    assert list(got.methods) == [passive_queue("amq.q")]
    with pytest.raises(AddressPlanError) as caught:
        plan("amq.direct; {delete: always, node: {type: topic}}", "sender")
    assert caught.value.path == "delete"
    assert caught.value.column == len("amq.direct; {delete: ") + 1


# --------------------------------------------------------------------------------------------
# node: type, durable, x-declare, x-bindings


def test_node_type_defaults_to_queue_and_the_address_wins() -> None:
    assert plan("n", "sender").node_type == "queue"
    assert plan("n", "sender", node_type="topic").node_type == "topic"
    assert plan("n; {node: {type: queue}}", "sender", node_type="topic").node_type == "queue"
    assert plan("n; {node: {type: topic}}", "sender", node_type="queue").node_type == "topic"


def test_node_durable() -> None:
    got = plan("q; {create: always, node: {durable: True}}", "sender")
    assert got.methods == (Queue.Declare(queue="q", durable=True),)
    got = plan("t; {create: always, node: {type: topic, durable: True}}", "sender")
    assert got.methods == (Exchange.Declare(exchange="t", type="topic", durable=True),)


def test_queue_x_declare() -> None:
    got = plan(
        "q; {create: always, node: {x-declare: {exclusive: True, auto_delete: True, no-wait: True,"
        " queue: q, arguments: {x-max-length: 10, 'x-queue-type': classic},"
        " 'qpid.max_count': 5, x-message-ttl: 1.5, x-list: [1, 'a', {k: None}]}}}",
        "sender",
    )
    assert got.methods == (
        Queue.Declare(
            queue="q",
            exclusive=True,
            auto_delete=True,
            no_wait=True,
            arguments={
                "x-max-length": 10,
                "x-queue-type": "classic",
                "qpid.max_count": 5,
                "x-message-ttl": 1.5,
                "x-list": [1, "a", {"k": None}],
            },
        ),
    )


def test_exchange_x_declare() -> None:
    got = plan(
        "t; {create: always, node: {type: topic, durable: True, x-declare: {type: headers,"
        " durable: True, auto-delete: True, internal: True, alternate-exchange: ae, exchange: t,"
        " arguments: {a: 1}, x-delayed-type: direct}}}",
        "sender",
    )
    assert got.methods == (
        Exchange.Declare(
            exchange="t",
            type="headers",
            durable=True,
            auto_delete=True,
            internal=True,
            arguments={"a": 1, "alternate-exchange": "ae", "x-delayed-type": "direct"},
        ),
    )


def test_x_declare_is_checked_without_create() -> None:
    # The same address plans (or fails) the same way whoever creates the node.
    with pytest.raises(AddressPlanError):
        plan("q; {node: {x-declare: {durable: yes}}}", "sender")
    assert plan("q; {node: {x-declare: {durable: True}}}", "sender").methods == (
        passive_queue("q"),
    )


X_DECLARE_ERRORS = [
    ("q; {node: {x-declare: {durable: 1}}}", "node.x-declare.durable", "True or False"),
    ("q; {node: {x-declare: {auto-delete: 'yes'}}}", "node.x-declare.auto-delete", "True or False"),
    ("q; {node: {x-declare: {arguments: [1]}}}", "node.x-declare.arguments", "a map"),
    ("q; {node: {x-declare: {passive: True}}}", "node.x-declare.passive", None),
    ("q; {node: {x-declare: {alternate-exchange: ae}}}", "node.x-declare.alternate-exchange", None),
    ("q; {node: {x-declare: {type: fanout}}}", "node.x-declare.type", None),
    ("q; {node: {x-declare: {internal: True}}}", "node.x-declare.internal", None),
    ("q; {node: {x-declare: {queue: other}}}", "node.x-declare.queue", None),
    (
        "q; {node: {x-declare: {auto-delete: True, auto_delete: True}}}",
        "node.x-declare.auto_delete",
        None,
    ),
    ("q; {node: {x-declare: {a: 1, arguments: {a: 2}}}}", "node.x-declare.a", None),
    ("q; {node: {durable: True, x-declare: {durable: False}}}", "node.x-declare.durable", None),
    ("t; {node: {type: topic, x-declare: {exclusive: True}}}", "node.x-declare.exclusive", None),
    ("t; {node: {type: topic, x-declare: {type: ''}}}", "node.x-declare.type", "an exchange type"),
    ("t; {node: {type: topic, x-declare: {type: 7}}}", "node.x-declare.type", "an exchange type"),
    ("t; {node: {type: topic, x-declare: {exchange: u}}}", "node.x-declare.exchange", None),
    (
        "t; {node: {type: topic, x-declare: {alternate-exchange: 1}}}",
        "node.x-declare.alternate-exchange",
        None,
    ),
    (
        "q; {node: {x-declare: {arguments: {big: 9223372036854775808}}}}",
        "node.x-declare.arguments.big",
        None,
    ),
    (
        "q; {node: {x-declare: {arguments: {" + "k" * 256 + ": 1}}}}",
        "node.x-declare.arguments." + "k" * 256,
        None,
    ),
]


@pytest.mark.parametrize(("text", "path", "expected"), X_DECLARE_ERRORS)
def test_x_declare_errors(text: str, path: str, expected: str | None) -> None:
    with pytest.raises(AddressPlanError) as caught:
        plan(text, "sender")
    error = caught.value
    assert error.path == path
    if expected is not None:
        assert error.expected == expected
    assert_points_at(error)


def test_node_x_bindings_on_a_queue() -> None:
    got = plan(
        "q; {create: always, node: {x-bindings: [{exchange: 'amq.direct'}, {exchange: e, queue:"
        " other, key: k, arguments: {x-match: any}}]}}",
        "sender",
    )
    assert got.methods == (
        Queue.Declare(queue="q"),
        Queue.Bind(queue="q", exchange="amq.direct", routing_key=""),
        Queue.Bind(queue="other", exchange="e", routing_key="k", arguments={"x-match": "any"}),
    )
    assert got.on_close == ()  # node bindings belong to the node, not the link


def test_node_x_bindings_on_a_topic() -> None:
    got = plan(
        "t; {create: always, node: {type: topic, x-bindings: [{queue: q, key: 'a.*'},"
        " {exchange: 'amq.topic', key: '#'}, {exchange: e, queue: q2}]}}",
        "sender",
    )
    assert got.methods == (
        Exchange.Declare(exchange="t", type="topic"),
        Queue.Bind(queue="q", exchange="t", routing_key="a.*"),
        Exchange.Bind(destination="t", source="amq.topic", routing_key="#"),
        Queue.Bind(queue="q2", exchange="e", routing_key=""),
    )


def test_node_x_bindings_need_create() -> None:
    text = "q; {create: receiver, node: {x-bindings: [{exchange: e}]}}"
    assert plan(text, "sender").methods == (passive_queue("q"),)
    assert plan(text, "receiver").methods[:2] == (
        Queue.Declare(queue="q"),
        Queue.Bind(queue="q", exchange="e"),
    )


BINDING_ERRORS = [
    (
        "q; {create: always, node: {x-bindings: [{key: k}]}}",
        "node.x-bindings[0]",
        "a binding with an exchange",
    ),
    (
        "q; {node: {x-bindings: [{exchange: ''}]}}",
        "node.x-bindings[0].exchange",
        "an exchange name",
    ),
    (
        "t; {node: {type: topic, x-bindings: [{key: k}]}}",
        "node.x-bindings[0]",
        "a binding with a queue",
    ),
    (
        "t; {node: {type: topic, x-bindings: [{exchange: t}]}}",
        "node.x-bindings[0]",
        "a binding with a queue",
    ),
    (
        "q; {link: {x-bindings: [{exchange: e}, {queue: q}]}}",
        "link.x-bindings[1]",
        "a binding with an exchange",
    ),
    (
        "q; {link: {x-bindings: [{exchange: e, key: " + "k" * 256 + "}]}}",
        "link.x-bindings[0].key",
        None,
    ),
    (
        "q; {link: {x-bindings: [{exchange: e, arguments: {x: 99999999999999999999}}]}}",
        "link.x-bindings[0].arguments.x",
        None,
    ),
]


@pytest.mark.parametrize(("text", "path", "expected"), BINDING_ERRORS)
def test_binding_errors(text: str, path: str, expected: str | None) -> None:
    with pytest.raises(AddressPlanError) as caught:
        plan(text, "sender")
    assert caught.value.path == path
    if expected is not None:
        assert caught.value.expected == expected
    assert_points_at(caught.value)


# --------------------------------------------------------------------------------------------
# link: name, durable, reliability, x-declare, x-subscribe, x-bindings


def test_link_x_bindings_on_a_queue() -> None:
    text = (
        "q; {link: {x-bindings: [{exchange: 'amq.fanout'},"
        " {exchange: e, key: k, arguments: {a: 1}}]}}"
    )
    binds = (
        Queue.Bind(queue="q", exchange="amq.fanout"),
        Queue.Bind(queue="q", exchange="e", routing_key="k", arguments={"a": 1}),
    )
    unbinds = (
        Queue.Unbind(queue="q", exchange="amq.fanout"),
        Queue.Unbind(queue="q", exchange="e", routing_key="k", arguments={"a": 1}),
    )
    sender = plan(text, "sender")
    assert sender.methods == (passive_queue("q"), *binds)
    assert sender.on_close == unbinds
    receiver = plan(text, "receiver")
    assert receiver.methods == (passive_queue("q"), *binds, consume("q"))
    assert receiver.on_close == (*unbinds, Basic.Cancel(consumer_tag="q"))


def test_link_x_bindings_on_a_topic_receiver_default_to_its_queue() -> None:
    got = plan(
        "t; {node: {type: topic}, link: {x-bindings: [{key: 'a.#'}, {exchange: x, key: b}]}}",
        "receiver",
        subscription_queue="s",
    )
    assert got.methods == (
        passive_exchange("t"),
        subscription("s"),
        Queue.Bind(queue="s", exchange="t", routing_key="a.#"),
        Queue.Bind(queue="s", exchange="x", routing_key="b"),
        consume("s", no_ack=True, exclusive=True),
    )


def test_link_name_names_the_subscription_queue() -> None:
    got = plan(
        "t/k; {node: {type: topic}, link: {name: mine}}", "receiver", subscription_queue="ignored"
    )
    assert got.queue == got.consumer_tag == "mine"
    assert got.methods[1] == subscription("mine")
    # and means nothing to a queue's receiver or to a sender (Qpid's clients ignore it)
    assert plan("q; {link: {name: mine}}", "receiver").queue == "q"
    assert plan("t; {node: {type: topic}, link: {name: mine}}", "sender").methods == (
        passive_exchange("t"),
    )


def test_generated_subscription_queue_is_deterministic() -> None:
    first = plan("news/sports", "receiver", node_type="topic")
    assert first == plan("news/sports", "receiver", node_type="topic")
    assert re.fullmatch(r"news_[0-9a-f]{32}", first.queue or "")
    others = {
        plan(text, "receiver", node_type="topic").queue
        for text in ("news/news", "news", "news; {link: {durable: True}}")
    }
    assert first.queue not in others and len(others) == 3
    with pytest.raises(AddressPlanError) as caught:
        plan("n" * 223, "receiver", node_type="topic")
    assert caught.value.path is None and caught.value.column == 1
    assert plan("n" * 222, "receiver", node_type="topic").queue is not None


@pytest.mark.parametrize(
    ("link", "no_ack", "auto_delete", "durable"),
    [
        ("", True, True, False),
        ("reliability: unreliable", True, True, False),
        ("reliability: at-most-once", True, True, False),
        ("reliability: at-least-once", False, False, False),
        ("reliability: exactly-once", False, False, False),
        ("durable: True", False, False, True),
        ("durable: True, reliability: unreliable", True, True, True),
        ("durable: True, reliability: at-most-once", True, True, True),
        ("durable: False, reliability: at-least-once", False, False, False),
    ],
)
def test_topic_reliability_and_durability(
    link: str, no_ack: bool, auto_delete: bool, durable: bool
) -> None:
    got = plan(
        f"t; {{node: {{type: topic}}, link: {{{link}}}}}", "receiver", subscription_queue="s"
    )
    assert got.methods[1] == subscription("s", durable=durable, auto_delete=auto_delete)
    assert got.methods[3] == consume("s", no_ack=no_ack, exclusive=True)


@pytest.mark.parametrize(
    ("reliability", "no_ack"),
    [
        (None, False),
        ("unreliable", True),
        ("at-most-once", True),
        ("at-least-once", False),
        ("exactly-once", False),
    ],
)
def test_queue_reliability(reliability: str | None, no_ack: bool) -> None:
    options = f"{{link: {{reliability: {reliability}}}}}" if reliability else "{}"
    assert plan(f"q; {options}", "receiver").methods[-1] == consume("q", no_ack=no_ack)
    assert plan(f"q; {options}", "sender").methods == (passive_queue("q"),)


def test_link_x_declare_shapes_the_subscription_queue() -> None:
    got = plan(
        "t; {node: {type: topic}, link: {durable: True,"
        " x-declare: {exclusive: False, auto-delete: True,"
        " arguments: {x-expires: 60000}, x-max-priority: 3}}}",
        "receiver",
        subscription_queue="s",
    )
    assert got.methods[1] == Queue.Declare(
        queue="s",
        durable=True,
        exclusive=False,
        auto_delete=True,
        arguments={"x-expires": 60000, "x-max-priority": 3},
    )
    # a shared (not exclusive) queue is consumed shared and kept at close
    assert got.methods[3] == consume("s", exclusive=False)
    assert got.on_close == (Basic.Cancel(consumer_tag="s"),)
    with pytest.raises(AddressPlanError) as caught:
        plan(
            "t; {node: {type: topic}, link: {durable: True, x-declare: {durable: False}}}",
            "receiver",
        )
    assert caught.value.path == "link.x-declare.durable"


def test_x_subscribe() -> None:
    text = (
        "q; {link: {x-subscribe: {exclusive: True, no-local: True,"
        " arguments: {x-priority: 5}, x-stream-offset: first}}}"
    )
    got = plan(text, "receiver")
    assert got.methods[-1] == consume(
        "q", exclusive=True, no_local=True, arguments={"x-priority": 5, "x-stream-offset": "first"}
    )
    got = plan(
        "t; {node: {type: topic}, link: {x-subscribe: {exclusive: False}}}",
        "receiver",
        subscription_queue="s",
    )
    assert got.methods[-1] == consume("s", no_ack=True, exclusive=False)
    # x-subscribe means nothing to a sender
    assert plan(text, "sender").methods == (passive_queue("q"),)


@pytest.mark.parametrize(
    ("options", "path"),
    [
        ("{exclusive: 1}", "link.x-subscribe.exclusive"),
        ("{arguments: 1}", "link.x-subscribe.arguments"),
        ("{acquire-mode: not-acquired}", "link.x-subscribe.acquire-mode"),
        ("{accept-mode: none}", "link.x-subscribe.accept-mode"),
        ("{destination: d}", "link.x-subscribe.destination"),
        ("{queue: q}", "link.x-subscribe.queue"),
        ("{resume-id: r}", "link.x-subscribe.resume-id"),
        ("{no_local: True, no-local: True}", "link.x-subscribe.no-local"),
        ("{a: 1, arguments: {a: 1}}", "link.x-subscribe.a"),
    ],
)
def test_x_subscribe_errors(options: str, path: str) -> None:
    with pytest.raises(AddressPlanError) as caught:
        plan(f"q; {{link: {{x-subscribe: {options}}}}}", "receiver")
    assert caught.value.path == path
    assert_points_at(caught.value)


# --------------------------------------------------------------------------------------------
# subjects and exchange types


def test_sender_subject() -> None:
    queue = plan("q/anything", "sender")
    assert (queue.exchange, queue.routing_key, queue.subject) == ("", "q", "anything")
    topic = plan("t/a.b", "sender", node_type="topic")
    assert (topic.exchange, topic.routing_key, topic.subject) == ("t", "a.b", "a.b")
    assert plan("t", "sender", node_type="topic").routing_key == ""
    with pytest.raises(AddressPlanError) as caught:
        plan("t/" + "k" * 256, "sender", node_type="topic")
    assert caught.value.path is None and caught.value.column == 3


def test_receiver_on_a_queue_ignores_the_subject() -> None:
    # "a receiver bound to a queue ignores subjects"
    assert plan("q/news", "receiver").methods == queue_receiver("q")


@pytest.mark.parametrize(
    ("exchange_type", "subject", "key", "arguments"),
    [
        ("topic", None, "#", {}),
        ("topic", "a.*", "a.*", {}),
        ("direct", None, "", {}),
        ("direct", "k", "k", {}),
        ("fanout", None, "s", {}),
        ("fanout", "k", "k", {}),
        ("headers", None, "match-all", {"x-match": "all"}),
        ("headers", "k", "k", {"qpid.subject": "k", "x-match": "all"}),
        ("xml", None, "", {"xquery": "true()"}),
        (
            "xml",
            "k",
            "k",
            {"xquery": "declare variable $qpid.subject external; $qpid.subject = 'k'"},
        ),
        ("x-consistent-hash", None, "", {}),
    ],
)
def test_default_binding_by_exchange_type(
    exchange_type: str, subject: str | None, key: str, arguments: dict[str, str]
) -> None:
    text = "t" + (f"/{subject}" if subject else "")
    got = plan(
        text, "receiver", node_type="topic", exchange_type=exchange_type, subscription_queue="s"
    )
    assert got.methods[2] == Queue.Bind(
        queue="s", exchange="t", routing_key=key, arguments=arguments
    )
    # the type the node is created with counts when the caller does not say
    declared = plan(
        f"{text}; {{create: always, node: {{type: topic, x-declare: {{type: {exchange_type}}}}}}}",
        "receiver",
        subscription_queue="s",
    )
    assert declared.methods[0] == Exchange.Declare(exchange="t", type=exchange_type)
    assert declared.methods[2] == got.methods[2]


def test_mode_matters_only_to_receivers_on_queues() -> None:
    assert plan("q; {mode: browse}", "sender").methods == (passive_queue("q"),)
    assert plan("q; {mode: consume}", "receiver").methods == queue_receiver("q")
    topic = plan("t; {mode: browse, node: {type: topic}}", "receiver", subscription_queue="sub")
    assert topic.methods == topic_receiver("t", "#")


# --------------------------------------------------------------------------------------------
# arguments, versions, errors


def test_consumer_tag_and_subscription_queue_arguments() -> None:
    got = plan("q", "receiver", consumer_tag="c1")
    assert got.methods[-1] == consume("q", consumer_tag="c1")
    assert got.on_close == (Basic.Cancel(consumer_tag="c1"),)
    assert got.consumer_tag == "c1"
    with pytest.raises(ValueError):
        plan("q", "receiver", consumer_tag="c" * 256)
    with pytest.raises(ValueError):
        plan("t", "receiver", node_type="topic", subscription_queue="s" * 256)
    with pytest.raises(TypeError):
        plan("q", "receiver", consumer_tag=1)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        plan("q", "both")
    with pytest.raises(ValueError):
        plan("q", "sender", node_type="exchange")
    with pytest.raises(TypeError):
        plan(42, "sender")
    with pytest.raises(TypeError):
        plan("q", "sender", spec="0-9-1")


def test_spec_selects_the_planner() -> None:
    assert plan("q", "sender", v0_9_1) == plan("q", "sender", v0_9_1.SPEC) == plan("q", "sender")
    with pytest.raises(UnsupportedSpecError, match=r"amqp_codec\.v9_9"):
        plan("q", "sender", types.ModuleType("amqp_codec.v9_9"))
    assert issubclass(UnsupportedSpecError, AMQPError)
    assert issubclass(UnsupportedSpecError, ValueError)


def test_plan_errors_are_address_errors() -> None:
    assert issubclass(AddressPlanError, AddressError)
    assert issubclass(AddressPlanError, ValueError)
    assert not issubclass(AddressPlanError, AddressOptionError)
    with pytest.raises(AddressOptionError):  # the option tables are checked first
        plan(Address("q", None, {"mode": "skim"}), "receiver")
    with pytest.raises(AddressPlanError) as caught:
        plan('""', "sender")
    assert caught.value.path is None and caught.value.column == 1
    with pytest.raises(AddressPlanError) as caught:
        plan(Address("q" * 256), "sender")
    assert caught.value.expected == "at most 255 bytes (a short string)"


def test_plan_is_frozen() -> None:
    got = plan("q", "sender")
    with pytest.raises(AttributeError):
        got.queue = "other"
    assert got == plan("q", "sender")


# --------------------------------------------------------------------------------------------
# Every plan encodes and decodes back to the same methods.

names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=40)
words = st.sampled_from(["q", "t", "amq.topic", "news-service", "x.y", "k", "#", "a.*"])
texts = st.one_of(words, names)
policies = st.sampled_from(["always", "never", "sender", "receiver"])
scalars = st.one_of(
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    texts,
    st.none(),
)
tables = st.dictionaries(
    texts,
    st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
        max_leaves=6,
    ),
    max_size=3,
)
declare_keys = st.sampled_from(
    [
        "durable",
        "auto-delete",
        "auto_delete",
        "exclusive",
        "type",
        "internal",
        "no-wait",
        "arguments",
        "alternate-exchange",
        "passive",
        "queue",
        "exchange",
        "x-max-length",
        "x-other",
    ]
)
subscribe_keys = st.sampled_from(
    ["exclusive", "no-local", "arguments", "acquire-mode", "x-priority"]
)


def x_maps(keys: st.SearchStrategy[str]) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(
        keys, st.one_of(st.booleans(), texts, tables, st.integers(-5, 5)), max_size=4
    )


bindings = st.lists(
    st.fixed_dictionaries(
        {},
        optional={"exchange": texts, "queue": texts, "key": texts, "arguments": tables},
    ),
    max_size=3,
)
node_options = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["queue", "topic"]),
        "durable": st.booleans(),
        "x-declare": x_maps(declare_keys),
        "x-bindings": bindings,
    },
)
link_options = st.fixed_dictionaries(
    {},
    optional={
        "name": texts,
        "durable": st.booleans(),
        "reliability": st.sampled_from(
            ["unreliable", "at-most-once", "at-least-once", "exactly-once"]
        ),
        "x-declare": x_maps(declare_keys),
        "x-subscribe": x_maps(subscribe_keys),
        "x-bindings": bindings,
    },
)
addresses = st.builds(
    Address,
    texts,
    st.none() | texts,
    st.fixed_dictionaries(
        {},
        optional={
            "create": policies,
            "assert": policies,
            "delete": policies,
            "mode": st.sampled_from(["browse", "consume"]),
            "node": node_options,
            "link": link_options,
        },
    ),
)


def round_trip(method: Method) -> Method:
    decoder = FrameDecoder(v0_9_1)
    decoder.receive_data(encode_frame(MethodFrame(1, method)))
    frame = decoder.next_frame()
    assert isinstance(frame, MethodFrame)
    return frame.method


@given(
    address=addresses,
    role=st.sampled_from(["sender", "receiver"]),
    node_type=st.sampled_from([None, "queue", "topic"]),
    exchange_type=st.sampled_from([None, "topic", "direct", "fanout", "headers", "xml"]),
)
def test_every_plan_encodes_and_decodes_back(
    address: Address, role: str, node_type: str | None, exchange_type: str | None
) -> None:
    try:
        got = plan(address, role, node_type=node_type, exchange_type=exchange_type)
    except AddressPlanError as error:
        event(f"refused: {error.expected[:30]}")
        assert 1 <= error.column <= len(error.text) + 1
        assert error.text == str(address)
        return
    event("planned")
    check_plan(got, role)


def check_plan(got: Plan, role: str) -> None:
    for method in (*got.methods, *got.on_close):
        assert round_trip(method) == method
    assert got.methods, "a plan always checks or creates its node"
    if role == "receiver":
        assert isinstance(got.methods[-1], Basic.Consume)
        assert got.methods[-1].queue == got.queue
    else:
        assert got.exchange is not None and got.routing_key is not None


# Addresses whose every option 0-9-1 can express: these always plan.
clean_tables = st.dictionaries(
    words, st.one_of(st.booleans(), st.integers(-(2**63), 2**63 - 1), texts), max_size=2
)
clean_bindings = st.lists(
    st.fixed_dictionaries(
        {"exchange": st.sampled_from(["amq.topic", "amq.direct", "e"]), "queue": words},
        optional={"key": texts, "arguments": clean_tables},
    ),
    max_size=2,
)
clean_declare = st.fixed_dictionaries(
    {},
    optional={
        "auto-delete": st.booleans(),
        "arguments": clean_tables,
        "x-max-length": st.integers(0, 9),
    },
)
clean_addresses = st.builds(
    Address,
    words,
    st.none() | words,
    st.fixed_dictionaries(
        {},
        optional={
            "create": policies,
            "assert": policies,
            "delete": st.sampled_from(["never", "sender"]),
            "mode": st.just("consume"),
            "node": st.fixed_dictionaries(
                {},
                optional={
                    "durable": st.booleans(),
                    "x-declare": clean_declare,
                    "x-bindings": clean_bindings,
                },
            ),
            "link": st.fixed_dictionaries(
                {},
                optional={
                    "name": words,
                    "durable": st.booleans(),
                    "reliability": st.sampled_from(["unreliable", "at-least-once"]),
                    "x-declare": clean_declare,
                    "x-subscribe": st.fixed_dictionaries(
                        {}, optional={"exclusive": st.booleans(), "arguments": clean_tables}
                    ),
                    "x-bindings": clean_bindings,
                },
            ),
        },
    ),
)


@given(
    address=clean_addresses,
    role=st.sampled_from(["sender", "receiver"]),
    node_type=st.sampled_from(["queue", "topic"]),
)
def test_expressible_addresses_always_plan(address: Address, role: str, node_type: str) -> None:
    if node_type == "topic" and address.name.startswith("amq."):
        address = Address("t" + address.name, address.subject, address.options)  # deletable
    check_plan(plan(address, role, node_type=node_type), role)


# --------------------------------------------------------------------------------------------
# Live: RabbitMQ carries out the plans, through the example client (examples/amqp_client.py).


class Broker:
    """One connection and a channel on which plans run; a refused plan opens a new channel."""

    def __init__(self, client: AMQPClient, channel: AMQPChannel) -> None:
        self.client = client
        self.channel = channel

    async def run(self, methods: Sequence[Method]) -> None:
        """Send each method, waiting for its answer when it has one."""
        try:
            for method in methods:
                await self.channel.call(method)
        except ChannelClosed:
            self.channel = await self.client.channel()
            raise

    async def publish(self, exchange: str, routing_key: str, body: bytes) -> None:
        publish = Basic.Publish(exchange=exchange, routing_key=routing_key)
        await self.channel.publish(publish, BasicProperties(), body)


def live(scenario: Callable[[Broker], Coroutine[Any, Any, None]]) -> None:
    """Run ``scenario`` on a fresh connection to the broker."""

    async def main() -> None:
        client = await AMQPClient.connect(*BROKER_ADDRESS)
        try:
            await scenario(Broker(client, await client.channel()))
        finally:
            await client.close()

    run_live(main())


@pytest.mark.broker
@pytest.mark.usefixtures("broker")
def test_broker_runs_plans_and_routes_by_subject() -> None:
    async def scenario(broker: Broker) -> None:
        news = f"news-{uuid.uuid4().hex[:8]}"
        receiver = plan(
            f"{news}/*.news; {{create: always, delete: receiver, node: {{type: topic}}}}",
            "receiver",
        )
        await broker.run(receiver.methods)
        sender = plan(f"{news}/usa.news; {{node: {{type: topic}}}}", "sender")
        await broker.run(sender.methods)
        assert (sender.exchange, sender.routing_key) == (news, "usa.news")
        await broker.publish(news, "usa.sports", b"not for *.news")  # would arrive first if bound
        await broker.publish(sender.exchange, sender.routing_key, b"for *.news")
        message = await broker.channel.next_event()
        assert isinstance(message, Message)
        assert message.body == b"for *.news"
        assert message.method.consumer_tag == receiver.consumer_tag
        assert message.method.routing_key == "usa.news"
        await broker.run(receiver.on_close)  # cancel, delete the subscription queue and topic
        with pytest.raises(ChannelClosed) as caught:
            await broker.run([passive_exchange(news)])
        assert caught.value.reply_code == 404

    live(scenario)


@pytest.mark.broker
@pytest.mark.usefixtures("broker")
def test_broker_runs_every_kind_of_plan() -> None:
    tag = uuid.uuid4().hex[:8]
    q, t = f"q-{tag}", f"t-{tag}"
    steps = [
        (
            f"{q}; {{create: always, delete: receiver, node: {{durable: False,"
            " x-declare: {arguments: {x-max-length: 10}},"
            f" x-bindings: [{{exchange: 'amq.direct', key: {q}}}]}},"
            " link: {reliability: unreliable, x-bindings: [{exchange: 'amq.fanout'}],"
            " x-subscribe: {exclusive: True, arguments: {x-priority: 3}}}}",
            "receiver",
        ),
        (f"{q}", "sender"),
        (
            f"{t}; {{create: sender, delete: sender, node: {{type: topic,"
            " x-declare: {type: fanout, auto-delete: False},"
            f" x-bindings: [{{exchange: 'amq.topic', key: 'a.#'}}]}}}}",
            "sender",
        ),
        (
            f"{t}; {{create: always, node: {{type: topic, x-declare: {{type: fanout}}}},"
            f" link: {{name: {t}-sub, durable: True,"
            f" x-declare: {{arguments: {{x-expires: 60000}}}}}}}}",
            "receiver",
        ),
        (f"{t}", "sender"),
    ]
    plans = [
        plan(text, role, node_type="topic" if text.startswith(t) else None) for text, role in steps
    ]

    async def scenario(broker: Broker) -> None:
        for got in plans:
            await broker.run(got.methods)
        for got in reversed(plans):
            await broker.run(got.on_close)
        for gone in (passive_queue(q), passive_queue(f"{t}-sub"), passive_exchange(t)):
            with pytest.raises(ChannelClosed) as caught:
                await broker.run([gone])
            assert caught.value.reply_code == 404

    live(scenario)


@pytest.mark.broker
@pytest.mark.usefixtures("broker")
def test_broker_refuses_what_the_address_asserts_wrongly() -> None:
    async def scenario(broker: Broker) -> None:
        # Example 1.8: asserting that a queue is a topic fails (not-found, as on Qpid's broker).
        q = f"my-queue-{uuid.uuid4().hex[:8]}"
        await broker.run(plan(f"{q}; {{create: always, delete: always}}", "sender").methods)
        await broker.run(
            plan(f"{q}; {{assert: always, node: {{type: queue}}}}", "receiver").methods
        )
        with pytest.raises(ChannelClosed) as caught:
            wrong = plan(f"{q}; {{assert: always, node: {{type: topic}}}}", "receiver")
            await broker.run(wrong.methods)
        assert caught.value.reply_code == 404
        # creating asserts too: an active declare of an existing node with other properties fails
        with pytest.raises(ChannelClosed) as caught:
            other = plan(f"{q}; {{create: always, node: {{durable: True}}}}", "sender")
            await broker.run(other.methods)
        assert caught.value.reply_code == 406
        await broker.run([Queue.Delete(queue=q)])

    live(scenario)


# --------------------------------------------------------------------------------------------
# The AMQP 0-10 draft (99-0): the same steps, with its own methods; browsing is expressible.


@pytest.fixture
def draft() -> types.ModuleType:
    return pytest.importorskip("amqp_codec.v0_10_draft")


def test_draft_reference_examples(draft: types.ModuleType) -> None:
    Q, E, M = draft.Queue, draft.Exchange, draft.Message
    # Example 1.10: browsing a queue is a no-acquire subscription
    got = plan("my-queue; {mode: browse}", "receiver", draft)
    assert got.methods == (
        Q.Declare(queue="my-queue", passive=True),
        M.Subscribe(queue="my-queue", destination="my-queue", confirm_mode=1, acquire_mode=0),
    )
    assert got.on_close == (M.Cancel(destination="my-queue"),)
    # Example 1.7: a subscription queue bound with the subject, unconfirmed (unreliable)
    got = plan("news-service/*.news", "receiver", draft, node_type="topic", subscription_queue="s")
    assert got.methods == (
        E.Declare(exchange="news-service", passive=True),
        Q.Declare(queue="s", exclusive=True, auto_delete=True),
        Q.Bind(queue="s", exchange="news-service", routing_key="*.news"),
        M.Subscribe(queue="s", destination="s", confirm_mode=0, acquire_mode=1, exclusive=True),
    )
    assert got.on_close == (M.Cancel(destination="s"), Q.Delete(queue="s", if_unused=True))
    # Example 1.9, and a sender's publishing target
    got = plan("xoxox ; {create: always}", "sender", draft)
    assert got.methods == (Q.Declare(queue="xoxox"),)
    assert (got.exchange, got.routing_key) == ("", "xoxox")
    # The XML exchange example
    got = plan(
        "xml; {link:{x-bindings:[{key:'weather', arguments:{xquery:\"./weather\"}}]}}",
        "receiver",
        draft,
        node_type="topic",
        exchange_type="xml",
        subscription_queue="s",
    )
    bind = {"queue": "s", "exchange": "xml", "routing_key": "weather"}
    assert got.methods[2] == Q.Bind(**bind, arguments={"xquery": "./weather"})
    assert got.on_close[0] == Q.Unbind(**bind, arguments={"xquery": "./weather"})


def test_draft_options(draft: types.ModuleType) -> None:
    Q, E, M = draft.Queue, draft.Exchange, draft.Message
    got = plan(
        "t; {create: always, delete: always, node: {type: topic, durable: True, x-declare:"
        " {type: fanout, alternate-exchange: ae, auto-delete: True, x-a: 1}}, link: {reliability:"
        " at-least-once, x-declare: {alternate-exchange: dead, exclusive: False},"
        " x-subscribe: {no-local: True, arguments: {f: 18446744073709551615}}}}",
        "receiver",
        draft,
        subscription_queue="s",
    )
    assert got.methods == (
        E.Declare(
            exchange="t",
            type="fanout",
            alternate_exchange="ae",
            durable=True,
            auto_delete=True,
            arguments={"x-a": 1},
        ),
        Q.Declare(queue="s", alternate_exchange="dead", exclusive=False, auto_delete=False),
        Q.Bind(queue="s", exchange="t", routing_key="s"),
        M.Subscribe(
            queue="s",
            destination="s",
            confirm_mode=1,
            acquire_mode=1,
            no_local=True,
            filter={"f": 2**64 - 1},
        ),
    )
    assert got.on_close == (M.Cancel(destination="s"), E.Delete(exchange="t"))
    # mode means nothing on a topic; unreliable queues are unconfirmed
    topic = plan(
        "t; {mode: browse, node: {type: topic}}", "receiver", draft, subscription_queue="s"
    )
    assert topic.methods[-1].acquire_mode == 1
    queue = plan("q; {link: {reliability: unreliable}}", "receiver", draft, consumer_tag="c")
    assert queue.methods[-1] == M.Subscribe(queue="q", destination="c", acquire_mode=1)


@pytest.mark.parametrize(
    ("text", "path"),
    [
        # the draft has no exchange-to-exchange binding
        (
            "t; {create: always, node: {type: topic, x-bindings: [{exchange: x}]}}",
            "node.x-bindings[0]",
        ),
        ("q; {node: {x-declare: {no-wait: True}}}", "node.x-declare.no-wait"),
        ("t; {node: {type: topic, x-declare: {internal: True}}}", "node.x-declare.internal"),
        ("q; {node: {x-declare: {alternate-exchange: 1}}}", "node.x-declare.alternate-exchange"),
        ("q; {link: {x-subscribe: {acquire-mode: 0}}}", "link.x-subscribe.acquire-mode"),
        ("q; {link: {x-subscribe: {confirm-mode: 1}}}", "link.x-subscribe.confirm-mode"),
        (
            "q; {link: {x-subscribe: {arguments: {big: 18446744073709551616}}}}",
            "link.x-subscribe.arguments.big",
        ),
    ],
)
def test_draft_errors(draft: types.ModuleType, text: str, path: str) -> None:
    with pytest.raises(AddressPlanError) as caught:
        plan(text, "receiver", draft)
    assert caught.value.path == path
    assert_points_at(caught.value)


def draft_round_trip(draft: types.ModuleType, method: Method) -> Method:
    from amqp_codec.wire010.frames import DraftMethodFrame, encode_draft_frame

    decoder = FrameDecoder(draft)
    decoder.receive_data(encode_draft_frame(DraftMethodFrame(1, method)))
    frame = decoder.next_frame()
    assert isinstance(frame, DraftMethodFrame)
    return frame.method


@given(
    address=addresses,
    role=st.sampled_from(["sender", "receiver"]),
    node_type=st.sampled_from([None, "queue", "topic"]),
)
def test_every_draft_plan_encodes_and_decodes_back(
    address: Address, role: str, node_type: str | None
) -> None:
    draft = pytest.importorskip("amqp_codec.v0_10_draft")
    try:
        got = plan(address, role, draft, node_type=node_type)
    except AddressPlanError as error:
        assert 1 <= error.column <= len(error.text) + 1
        return
    for method in (*got.methods, *got.on_close):
        back = draft_round_trip(draft, method)
        # lists in tables come back as typed sequences: compare what goes on the wire
        assert type(back) is type(method)
        assert back.encode() == method.encode()
    assert isinstance(got.methods[-1], draft.Message.Subscribe if role == "receiver" else Method)
