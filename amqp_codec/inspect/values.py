"""Decoded values in the pieces the decode command shows, and in JSON-ready form.

Field tables as (key, wire tag, value) entries and arrays as (tag, value) items, for both
framings (a 99-0 type code is shown by its spec name, ``str16``); a 99-0 struct's present
fields; the names of a 99-0 frame's segment flags. :func:`json_value` and its kin give the
JSON form that ``amqp-codec decode --json`` prints and the analysis tables store: bytes as
``{"hex": ...}``, tables as lists of entries with their tags.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any
from uuid import UUID

from ..base import FieldSpec, Properties
from ..table import FieldArray, FieldTable, tag_for
from ..wire010 import frames as wire010
from ..wire010.structs import PackedStruct
from ..wire010.table import Array as DraftArray
from ..wire010.table import FieldTable as DraftFieldTable
from ..wire010.table import Typed, type_info

__all__ = [
    "array_items",
    "code_tag",
    "draft_flag_names",
    "is_utf8",
    "json_field",
    "json_properties",
    "json_properties_and_flags",
    "json_struct",
    "json_value",
    "struct_fields",
    "table_entries",
]


def is_utf8(text: str) -> bool:
    if text.isascii():  # known without a scan: the usual case
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def code_tag(code: int) -> str:
    """A 99-0 type code as shown in place of a 0-9 tag: its spec name (``str16``)."""
    info = type_info(code)
    return info.name if info is not None else f"0x{code:02x}"


def table_entries(value: Mapping[str, Any]) -> list[tuple[str, str, Any]]:
    if isinstance(value, FieldTable):
        return value.entries()
    if isinstance(value, DraftFieldTable):
        return [(k, code_tag(code), v) for k, code, v in value.entries()]
    return [(k, tag_for(v), v) for k, v in value.items()]


def array_items(value: Sequence[Any] | DraftArray) -> list[tuple[str, Any]]:
    if isinstance(value, FieldArray):
        return list(zip(value.tags, value, strict=True))
    if isinstance(value, DraftArray):
        return [(code_tag(value.code), v) for v in value.values]
    return [(code_tag(v.code), v.value) if isinstance(v, Typed) else (tag_for(v), v) for v in value]


def struct_fields(obj: PackedStruct) -> list[tuple[FieldSpec, Any]]:
    """A 99-0 struct's present fields (a clear bit is absent, as its packing flag says)."""
    return [
        (spec, value)
        for spec in obj.FIELDS
        if (value := getattr(obj, spec.attr)) is not None and value is not False
    ]


def draft_flag_names(flags: int) -> list[str]:
    """The segment flags set in a 99-0 frame header's flags octet, B E b e order."""
    names = (
        (wire010.FIRST_SEGMENT, "first-segment"),
        (wire010.LAST_SEGMENT, "last-segment"),
        (wire010.FIRST_FRAME, "first-frame"),
        (wire010.LAST_FRAME, "last-frame"),
    )
    return [name for bit, name in names if flags & bit]


def _json_str(text: str) -> Any:
    if is_utf8(text):
        return text
    try:  # a decoded string: its undecodable bytes are held as surrogate escapes
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # other lone surrogates: a string made by hand, not decoded
        raw = text.encode("utf-8", "surrogatepass")
    return {"hex": raw.hex()}


def json_value(value: Any) -> Any:
    """A JSON-ready value: bytes become {"hex": ...}, tables lists of entries with tags."""
    kind = type(value)
    # The usual values first, by exact type (subclasses such as IntEnum go the long way).
    if kind is str:
        return value if value.isascii() else _json_str(value)
    if kind is int or kind is bool or value is None:
        return value
    if isinstance(value, PackedStruct):
        return json_struct(value)
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, str):
        return _json_str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"hex": bytes(value).hex()}
    if isinstance(value, Mapping):
        return [
            {"key": _json_str(k), "tag": t, "value": json_value(v)}
            for k, t, v in table_entries(value)
        ]
    if isinstance(value, (FieldArray, DraftArray, list, tuple)):
        return [{"tag": t, "value": json_value(v)} for t, v in array_items(value)]
    return repr(value)


def json_field(spec: FieldSpec, value: Any) -> Any:
    if spec.wire_type == "rfc1982-long-set" and value is not None:
        return [[lo, hi] for lo, hi in value]
    return json_value(value)


def json_struct(struct: PackedStruct) -> dict[str, Any]:
    """A 99-0 struct as JSON: its name, type code, packing flags and present fields."""
    return {
        "struct": struct.NAME,
        "type_code": struct.TYPE_CODE,
        "packing_flags": struct.flags,
        "fields": {spec.name: json_field(spec, value) for spec, value in struct_fields(struct)},
    }


def json_properties(props: Properties) -> dict[str, Any]:
    """The present properties by spec name, as JSON values."""
    return json_properties_and_flags(props)[1]


def json_properties_and_flags(props: Properties) -> tuple[int, dict[str, Any]]:
    """The property flag word (``props.flags``) and :func:`json_properties`, in one pass
    over the properties."""
    cls = type(props)
    word = 0
    present: dict[str, Any] = {}
    for spec, bit in zip(cls.FIELDS, cls.FLAGS, strict=True):
        value = getattr(props, spec.attr)
        if value is not None:
            word |= bit
            present[spec.name] = json_value(value)
    return word, present
