"""The records tasks and results carry by the thousand pickle by their fields."""

from __future__ import annotations

import copy
import pickle
from dataclasses import dataclass, field

import pytest

from amqp_codec.analyze.heads import HeadFacts
from amqp_codec.analyze.pickling import call_pickled, pickled_by_fields
from amqp_codec.analyze.plan import Connection, RegionPlan, Slice, StreamPlan
from amqp_codec.analyze.regions import PartWindow
from amqp_codec.analyze.rules import Negotiated, Pending

_KEY = ((("10.0.0.1", 40000), ("10.0.0.2", 5672)), 1, True)
RECORDS = [
    Slice(3, _KEY, -12, ((0, 1448), (2896, 4344))),
    RegionPlan(4, 1, 8192, None, 3, (Slice(3, _KEY, 0, ()),), 9000),
    PartWindow(7, 100, None, ((0, 10),)),
    Negotiated(2047, 131072, 60),
    Pending("heartbeat-missed", 8592, None, 1.5, None, ("c", None, "x")),
    HeadFacts("0-9-1", 131072, {"client": 40}, Negotiated(1, 4096, 0), 8192),
]


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: type(r).__name__)
def test_a_record_comes_back_equal(record: object) -> None:
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        again = pickle.loads(pickle.dumps(record, protocol))
        assert again == record and type(again) is type(record)
    assert copy.deepcopy(record) == record
    assert type(record).__reduce__ is not object.__reduce__


def test_a_record_with_a_field_the_constructor_does_not_take_is_refused() -> None:
    @dataclass(frozen=True, slots=True)
    class Derived:
        a: int
        b: int = field(init=False, default=0)

    with pytest.raises(TypeError, match="positional"):
        pickled_by_fields(Derived)


def test_streams_and_connections_pickle_by_their_fields() -> None:
    stream = StreamPlan(3, 1, "client", "a-b", True, None, None, 1.0, 2.0, False, False, "0-9-1")
    stream.slices.append(Slice(0, _KEY, 0, ((0, 8),)))
    connection = Connection(
        1, ("10.0.0.1", 40000, "10.0.0.2", 5672), "a-b", "c.pcap", {"client": 3}
    )
    for record in (stream, connection):
        again = pickle.loads(pickle.dumps(record, pickle.HIGHEST_PROTOCOL))
        assert again == record and type(again) is type(record)
        assert type(record).__reduce__ is not object.__reduce__


def test_a_task_runs_on_its_item_pickled_and_gives_its_result_pickled() -> None:
    result = call_pickled(len, pickle.dumps(RECORDS))
    assert pickle.loads(result) == len(RECORDS)
    with pytest.raises(ZeroDivisionError):  # what the function raises reaches Spark as it is
        call_pickled(lambda n: 1 // n, pickle.dumps(0))
