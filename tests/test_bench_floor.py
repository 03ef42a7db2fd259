"""The layers ``python -m benchmarks.floor`` times decode workload 1's frame, each to the
frame the fixture encoded: a layer that decoded less would time less."""

from __future__ import annotations

import sys

import pytest

from benchmarks import fixtures as fx
from benchmarks.floor import checked, layers, main
from benchmarks.peers import Bench


@pytest.mark.parametrize("name", sorted(layers()))
def test_each_layer_decodes_the_deliver_frame(name: str) -> None:
    checked(layers()[name])


def test_a_layer_with_a_wrong_result_is_refused() -> None:
    wrong = fx.DELIVER_FRAME.replace(b"orders.created", b"orders.CREATED")
    bench = layers()["1 floor"]
    with pytest.raises(SystemExit, match="wrong result"):
        checked(Bench(bench.stmt, {**bench.ns, "data": wrong}))


def test_without_pika_one_line_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "pika", None)
    monkeypatch.setitem(sys.modules, "pika.frame", None)
    assert main([]) == 2
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "pip install -e '.[bench]'" in out
