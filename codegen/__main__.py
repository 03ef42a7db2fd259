"""``python -m codegen``: write (or with ``--check``, verify) generated protocol packages.

With no arguments every package in :data:`TARGETS` is regenerated,
``docs/protocol-versions.md`` compares their models and ``docs/tables.md`` describes the
analysis tables from their schema (``amqp_codec/analyze/tables.py``). ``--spec FILE --out DIR``
(plus an optional ``--overlay FILE``) generates one package from any spec XML.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NoReturn

from .compare import render_versions
from .loader import load
from .model import ModelError, Spec
from .render import render

ROOT = Path(__file__).resolve().parent.parent

# (spec, overlay, output package directory), relative to the repository root.
TARGETS = [
    ("specs/amqp0-9-1.extended.xml", "specs/amqp0-9-1.rabbitmq-overlay.xml", "amqp_codec/v0_9_1"),
    ("specs/amqp0-8.xml", "specs/amqp0-8.rabbitmq-overlay.xml", "amqp_codec/v0_8"),
    ("specs/amqp0-10-draft.xml", None, "amqp_codec/v0_10_draft"),
]

# The comparison of every target's model (see compare.py), written with the packages.
VERSIONS_DOC = ROOT / "docs" / "protocol-versions.md"
# The analysis tables' columns, from their schema (amqp_codec/analyze/tables.py).
TABLES_DOC = ROOT / "docs" / "tables.md"


def generate(
    spec: Path, overlay: Path | None, out: Path, check: bool, models: list[Spec] | None = None
) -> list[str]:
    """Write the package for ``spec`` into ``out``; return the files that differ (or changed).

    The loaded model is appended to ``models`` if given.
    """
    model = load(spec, overlay)
    if models is not None:
        models.append(model)
    return write_files(render(model), out, check)


def write_files(files: dict[str, str], out: Path, check: bool) -> list[str]:
    """Write ``files`` (name → text) into ``out`` unless ``check``; return those that differ."""
    stale = []
    for name, text in files.items():
        path = out / name
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        stale.append(str(path))
        if not check:
            out.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    return stale


class _Parser(argparse.ArgumentParser):
    """A usage error is one line and exit status 2, like a problem in the spec."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"codegen: {message} (see python -m codegen --help)\n")


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="python -m codegen", description=__doc__)
    parser.add_argument("--spec", type=Path, help="spec XML (default: every built-in target)")
    parser.add_argument("--overlay", type=Path, help="overlay XML applied on top of --spec")
    parser.add_argument("--out", type=Path, help="package directory to write (with --spec)")
    parser.add_argument(
        "--check", action="store_true", help="write nothing; fail if any output is stale"
    )
    args = parser.parse_args(argv)
    if args.spec is not None:
        if args.out is None:
            parser.error("--spec needs --out")
        jobs = [(args.spec, args.overlay, args.out)]
    else:
        jobs = [(ROOT / s, ROOT / o if o else None, ROOT / d) for s, o, d in TARGETS]
    try:
        models: list[Spec] = []
        stale = [
            p
            for spec, overlay, out in jobs
            for p in generate(spec, overlay, out, args.check, models)
        ]
        if args.spec is None:  # the built-in targets: also the version comparison
            from amqp_codec.analyze.tables import markdown

            docs = {VERSIONS_DOC.name: render_versions(models), TABLES_DOC.name: markdown()}
            stale += write_files(docs, VERSIONS_DOC.parent, args.check)
    except ModelError as exc:
        print(f"codegen: {exc}", file=sys.stderr)
        return 2
    if args.check:
        for path in stale:
            print(f"codegen: stale: {path} (run `python -m codegen`)", file=sys.stderr)
        return 1 if stale else 0
    for path in stale:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
