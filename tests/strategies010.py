"""What the 0-10 draft tests use of amqp_codec.testing, under the names they know."""

from __future__ import annotations

import os
from typing import Any

from hypothesis import strategies as st

from amqp_codec import v0_10_draft
from amqp_codec.testing import _draft, _model
from amqp_codec.testing._version import resolve

DRAFT = resolve(v0_10_draft)
SCALE = max(1, int(os.environ.get("AMQP_TEST_SCALE", "1")))


def examples(n: int) -> int:
    """``n`` hypothesis examples, times AMQP_TEST_SCALE."""
    return n * SCALE


def methods(cls: type) -> st.SearchStrategy[Any]:
    """Instances of a generated method class with every field drawn (checks ignored)."""
    return _model.methods(DRAFT, cls, valid=False)


def structs(cls: type) -> st.SearchStrategy[Any]:
    """Instances of a generated struct class: each non-bit field present or absent."""
    return _model.structs(DRAFT, cls)


def tables() -> st.SearchStrategy[Any]:
    """Field tables over every type code the spec names, nested."""
    return _draft.tables(DRAFT, max_depth=3)


def plain_tables() -> st.SearchStrategy[dict[str, Any]]:
    """Plain Python values, encoded with the codes the implementations agreed on."""
    plain = st.one_of(
        st.integers(-(2**63), 2**64 - 1),
        st.text(max_size=20),
        st.booleans(),
        st.none(),
        st.binary(max_size=20),
        st.floats(allow_nan=False),
        st.uuids(),
    )
    keys = _draft.texts(20)
    return st.recursive(
        st.dictionaries(keys, plain, max_size=4),
        lambda children: st.dictionaries(keys, st.one_of(plain, children), max_size=4),
        max_leaves=8,
    )


ALL_METHODS = list(DRAFT.methods)
ALL_STRUCTS = sorted(DRAFT.structs.values(), key=lambda c: c.NAME)
