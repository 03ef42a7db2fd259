"""Project hygiene that CI relies on: lint, types, and the README's commands."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def _tool(name: str) -> str:
    path = BIN / name
    if path.exists():
        return str(path)
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed (it is part of the test extra)")
    return found


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_check() -> None:
    result = _run(_tool("ruff"), "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format() -> None:
    result = _run(_tool("ruff"), "format", "--check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict() -> None:
    result = _run(_tool("mypy"))
    assert result.returncode == 0, result.stdout + result.stderr


def quick_start() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block is not None, "the Quick start has no sh block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_quick_start_has_exactly_two_commands() -> None:
    commands = quick_start()
    assert len(commands) == 2
    assert "amqp-codec analyze samples/" in commands[0]
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert quick_start()[1] in ci.splitlines()


def test_main_job_runs_on_the_shipped_samples(tmp_path: Path) -> None:
    command = quick_start()[0].split("&&")[-1].split()
    assert command[0].endswith("amqp-codec") and command[1] == "analyze"
    out = command.index("--out")
    captures = command[2:out]
    assert captures and all((ROOT / c).exists() for c in captures)
    # As documented, with only the output folder moved out of the checkout.
    args = [*command[1:out], "--out", str(tmp_path / "analysis"), *command[out + 2 :]]
    result = _run(sys.executable, "-m", "amqp_codec", *args)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    for table in ("frames", "messages", "connections", "problems"):
        assert any((tmp_path / "analysis" / table).glob("*.parquet")), table
    assert (tmp_path / "analysis" / "report.html").stat().st_size > 0


@pytest.mark.parametrize(
    ("page", "at_least"),
    [("README.md", 1), ("docs/getting-started.md", 4), ("docs/commands/decode.md", 1)],
)
def test_documented_python_examples_run(
    page: str, at_least: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = (ROOT / page).read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= at_least
    monkeypatch.chdir(ROOT)
    for block in blocks:
        exec(compile(block, page, "exec"), {"print": lambda *args: None})
