"""docs/protocol-versions.md: generated from every target's model, and current."""

from __future__ import annotations

from codegen.__main__ import ROOT, TARGETS, VERSIONS_DOC
from codegen.compare import render_versions
from codegen.loader import load


def _models():  # type: ignore[no-untyped-def]
    return [load(ROOT / s, ROOT / o if o else None) for s, o, _out in TARGETS]


def test_versions_doc_matches_the_models():
    models = _models()
    text = VERSIONS_DOC.read_text(encoding="utf-8")
    assert text == render_versions(models), "stale: run `python -m codegen`"
    header = text.splitlines()[text.splitlines().index("## Overview") + 2]
    for model in models:
        assert f"AMQP {model.version}" in header


def test_versions_doc_shows_what_differs():
    models = {m.version: m for m in _models()}
    text = render_versions([models["0-9-1"], models["0-8"]])
    lines = text.splitlines()
    assert "| connection.close | 10.50 | 10.60 |" in lines
    assert "| protocol header | AMQP 0 0 9 1 | AMQP 1 1 8 0 |" in lines
    assert "| test | — | 120: 8 |" in lines
    assert "| confirm | 85: 2 | — |" in lines
    field_types = next(line for line in lines if line.startswith("| field-table value types"))
    assert "S I D T F" in field_types
