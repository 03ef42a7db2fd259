"""`python -m codegen` treats a missing or malformed spec like any user mistake: one line
naming the file (and line), exit status 2, no traceback, nothing written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

MALFORMED = {
    "unclosed.xml": ('<amqp major="0" minor="9">\n<class name="x">\n</amqp>\n', ":3: "),
    "cut.xml": ("<amqp\n", ":2: "),
    "no-major.xml": ("<amqp/>\n", ":1: <amqp> has no 'major'"),
}


def codegen(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codegen", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )


def assert_one_line(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("codegen: "), result.stderr
    for word in words:
        assert word in result.stderr, (word, result.stderr)


def test_missing_spec(tmp_path: Path) -> None:
    result = codegen("--spec", str(tmp_path / "missing.xml"), "--out", str(tmp_path / "pkg"))
    assert_one_line(result, "missing.xml", "No such file")
    assert list(tmp_path.iterdir()) == []


def test_missing_overlay(tmp_path: Path) -> None:
    spec = REPO / "specs" / "amqp0-9-1.extended.xml"
    result = codegen(
        "--spec", str(spec), "--overlay", str(tmp_path / "nope.xml"), "--out", str(tmp_path / "p")
    )
    assert_one_line(result, "nope.xml")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_spec(tmp_path: Path, name: str) -> None:
    text, where = MALFORMED[name]
    (tmp_path / name).write_text(text)
    result = codegen("--spec", str(tmp_path / name), "--out", str(tmp_path / "pkg"))
    assert_one_line(result, name + where)
    assert not (tmp_path / "pkg").exists()


def test_spec_without_out() -> None:
    assert_one_line(codegen("--spec", "x.xml"), "--spec needs --out")
