"""The report's page and charts from figures alone (no Spark): integer count axes, words
for missing data, counts of different things never added up."""

from __future__ import annotations

import re
from typing import Any

import pytest

from amqp_codec.analyze.charts import bars, byte_ticks, lines, nice_ticks
from amqp_codec.analyze.report import render


@pytest.mark.parametrize("top", [1, 2, 3, 7, 10, 13, 999, 123_456])
def test_count_ticks_are_whole_numbers_reaching_the_top(top: int) -> None:
    ticks = nice_ticks(top, integer=True)
    assert ticks[0] == 0 and ticks[-1] >= top
    assert all(float(t).is_integer() for t in ticks)
    assert len(set(ticks)) == len(ticks) <= 12


def test_byte_ticks_are_whole_binary_units() -> None:
    ticks = byte_ticks(12_000)
    assert ticks[-1] >= 12_000
    assert all(t % 1024 == 0 for t in ticks)


def _axis_labels(svg: str) -> list[str]:
    return re.findall(r'text-anchor="middle">([^<]*)</text>', svg)


def test_bars_show_each_count_and_no_sum() -> None:
    svg = bars([("events", {"published": 1, "delivered": 2})], ["published", "delivered"], "n")
    assert ">1</text>" in svg and ">2</text>" in svg
    assert ">3</text>" not in svg  # a publish and two deliveries are not three messages
    assert not [t for t in _axis_labels(svg) if "." in t]  # no 0.2 ticks on a count axis


def test_stacked_bars_show_the_whole() -> None:
    svg = bars([("basic.ack", {"client": 3, "server": 4})], ["client", "server"], "n", stacked=True)
    assert ">7</text>" in svg


def test_lines_mark_a_single_bucket() -> None:
    svg = lines(1_700_000_000.0, 1.0, {"published": [5.0]}, "messages per second")
    assert "<circle" in svg and "<polyline" in svg


def _empty_summary() -> dict[str, Any]:
    return {
        "generated_by": "amqp-codec test",
        "tables": {"frames": 0, "messages": 0, "connections": 0, "problems": 0},
        "inputs": {
            "capture_files": 1,
            "capture_bytes": 24,
            "first_timestamp": None,
            "last_timestamp": None,
            "files": [
                {
                    "path": "a.pcap",
                    "bytes": 24,
                    "first_timestamp": None,
                    "last_timestamp": None,
                    "frames": 0,
                    "problems": 0,
                }
            ],
            "skipped": [{"path": "in/pipe", "kind": "named-pipe", "detail": "skipped"}],
        },
        "messages": {},
        "message_labels": {},
        "message_rate": None,
        "top_exchanges": {"by_messages": [], "by_bytes": []},
        "top_routing_keys": {"by_messages": [], "by_bytes": []},
        "method_mix": [],
        "reply_codes": [],
        "largest_messages": [],
        "clients": [],
        "problems_by_kind": [],
        "problems": [],
    }


def test_no_data_is_said_in_words() -> None:
    page = render(_empty_summary())
    assert "<svg" not in page  # no empty boxes
    assert "No messages in the capture." in page
    assert "No method frames in the capture." in page
    assert "No problems found." in page
    assert "1 capture file (" in page  # and not "1 capture files"
    assert "a.pcap" in page and "in/pipe" in page and "named-pipe" in page
