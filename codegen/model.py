"""The normalised protocol model the templates print.

Everything the templates need is computed here, once: Python names, resolved wire types,
defaults as Python literals, response classes, which peer sends each method, and the wire
plan (how fixed-size fields are grouped into struct calls and bits into octets).

One model serves every version: where wire formats differ (0-9's 7-byte frames and short
method ids; the 0-10 draft's octet ids, packed structs and own field tables), the model says
so (:attr:`Spec.wire_format` and the properties that follow from it) and the shared templates
print small conditional sections from it.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field

# AMQP primitive types (0-8 and 0-9-1) and their fixed struct codes; None = variable length.
PRIMITIVES: dict[str, str | None] = {
    "bit": None,
    "octet": "B",
    "short": "H",
    "long": "I",
    "longlong": "Q",
    "timestamp": "Q",
    "shortstr": None,
    "longstr": None,
    "table": None,
    # AMQP 0-10 draft (99-0) types; encoded by amqp_codec.wire010 (see CODEC_TYPES).
    "uuid": None,
    "rfc1982-long-set": None,
    "long-struct": None,
    "array": None,
    "content": None,
    "struct": None,  # a field whose domain is a <struct>
}

# Wire types encoded by runtime functions ``encode_<codec>``/``decode_<codec>``.
CODEC_TYPES = frozenset({"uuid", "rfc1982-long-set", "long-struct", "array", "content"})
# Default values of those types, as Python literals the generated code imports.
CODEC_DEFAULTS = {
    "uuid": "NIL_UUID",
    "rfc1982-long-set": "()",
    "long-struct": "None",
    "array": "EMPTY_ARRAY",
    "content": "EMPTY_CONTENT",
}

PY_TYPES = {
    "bit": "bool",
    "octet": "int",
    "short": "int",
    "long": "int",
    "longlong": "int",
    "timestamp": "Timestamp",
    "shortstr": "str",
    "longstr": "bytes",
    "table": "Mapping[str, Any]",
    "uuid": "UUID",
    "rfc1982-long-set": "RangeSet",
    "long-struct": "PackedStruct | None",
    "array": "Array",
    "content": "Content",
}

# What the encoders check for each wire type (the sentence after "Encoding takes"); a value
# they refuse raises AMQPEncodeError naming the field. Kept here, next to PY_TYPES, so that
# the generated docstrings say exactly what amqp_codec.encoding and amqp_codec.wire010 check.
ENCODE_CHECKS = {
    "bit": "any value (its truth is the bit)",
    "octet": "an int in 0..255",
    "short": "an int in 0..65535",
    "long": "an int in 0..4294967295",
    "longlong": "an int in 0..2**64-1",
    "timestamp": "an int (a Timestamp) in 0..2**64-1",
    "shortstr": "a str of at most 255 bytes as UTF-8 (surrogate escapes carry other bytes)",
    "longstr": "bytes, bytearray or memoryview, under 4 GiB",
    "table": (
        "a mapping with str keys of at most 255 bytes and values of the field-table types "
        '(a bad value is named by its path, such as ``arguments["x"][0]``)'
    ),
    "uuid": "a uuid.UUID",
    "rfc1982-long-set": "(lower, upper) pairs of ints in 0..4294967295, at most 8191 pairs",
    "long-struct": "a typed packed struct",
    "array": "an Array whose values all fit its type code",
    "content": "a Content (kind 0 or 1, bytes)",
    "struct": "an instance of the field's struct class",
}

# The wire formats the model knows: how frames, method ids and content headers are laid out.
WIRE_0_9 = "0-9"  # 0-8 and 0-9-1: 7-byte frame header, short class and method ids
WIRE_0_10_DRAFT = "0-10-draft"  # 99-0: 12-byte frame header, octet ids, packed structs


# One ``<assert>`` of the spec as data: ("length", 127), ("regexp", "^...$"), ("notnull", None).
Check = tuple[str, object]


class ModelError(Exception):
    """A problem in the spec or overlay, reported with file and line."""


def py_attr(name: str) -> str:
    """``"no-wait"`` / ``"routing key"`` → ``"no_wait"`` / ``"routing_key"``; ``global`` → ``global_``."""
    attr = re.sub(r"[- ]+", "_", name.strip()).lower()
    return attr + "_" if keyword.iskeyword(attr) else attr


def py_class(name: str) -> str:
    """``"start-ok"`` → ``"StartOk"``."""
    return "".join(part.capitalize() for part in re.split(r"[- ]+", name.strip()))


def sentence(text: str) -> str:
    """A label as a sentence: capitalised, ending with a full stop."""
    text = " ".join(text.split())
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."


def const_name(name: str) -> str:
    """``"frame-method"`` → ``"FRAME_METHOD"``."""
    return re.sub(r"[- ]+", "_", name.strip()).upper()


@dataclass
class Constant:
    name: str
    value: int
    error_class: str | None  # "soft-error", "hard-error" or None
    doc: str
    const: str = ""
    category: str = ""  # 99-0: "field-table-type" for the table type codes
    width: int = 0  # field-table-type: fixed value width in octets
    lfwidth: int = 0  # field-table-type: length-prefix width (variable-length values)
    datatype: str = ""  # field-table-type: the spec's datatype ("signed-integer", ...)

    def __post_init__(self) -> None:
        self.const = const_name(self.name)


@dataclass
class Field:
    name: str
    wire_type: str
    domain: str
    label: str
    doc: str
    default: object
    reserved: bool
    asserts: list[str]
    checks: list[Check] = field(default_factory=list)
    """The spec's checks as data: (check, value) pairs, see :class:`amqp_codec.FieldSpec`."""
    attr: str = ""
    flag: int = 0  # property flag bit (content properties only)
    struct: StructDef | None = None  # the struct of a struct-typed field

    def __post_init__(self) -> None:
        self.attr = py_attr(self.name)

    @property
    def py_type(self) -> str:
        if self.struct is not None:
            return self.struct.py_name
        return PY_TYPES[self.wire_type]

    @property
    def codec(self) -> str:
        """``encode_<codec>``/``decode_<codec>`` of a runtime-encoded type; "" otherwise."""
        return self.wire_type.replace("-", "_") if self.wire_type in CODEC_TYPES else ""

    @property
    def code(self) -> str | None:
        """The struct code of a fixed-size field; None for variable-length ones and bits."""
        return PRIMITIVES[self.wire_type]

    @property
    def encode_checks(self) -> str:
        """What encoding checks for this field, as a sentence."""
        return f"Encoding takes {ENCODE_CHECKS[self.wire_type]}."

    @property
    def spec_rules(self) -> str:
        """The spec's own rules for the field, which the codec leaves to the peer."""
        if not self.asserts:
            return ""
        rules = "; ".join(dict.fromkeys(self.asserts))
        return f"The spec also asks: {rules}. Not checked by this codec: the peer enforces it."

    @property
    def doc_text(self) -> str:
        """Label, documentation, what encoding checks and the spec's rules, for the docstring."""
        parts = [sentence(self.label), self.doc, self.encode_checks, self.spec_rules]
        return "\n\n".join(part for part in parts if part)

    @property
    def checks_literal(self) -> str:
        """:attr:`checks` as the Python literal of ``FieldSpec.checks``."""
        return repr(tuple(self.checks))

    @property
    def default_literal(self) -> str:
        if self.wire_type in CODEC_DEFAULTS:
            return CODEC_DEFAULTS[self.wire_type]
        if self.wire_type == "struct":
            return "None"
        if self.wire_type == "table":
            return "EMPTY_TABLE"
        if self.wire_type == "timestamp":
            return f"Timestamp({self.default!r})"
        return repr(self.default)


@dataclass
class Method:
    name: str
    index: int
    synchronous: bool
    content: bool
    response_names: list[str]
    sent_by: list[str]
    label: str
    doc: str
    fields: list[Field]
    class_name: str = ""
    class_index: int = 0
    py_name: str = ""
    responses: list[Method] = field(default_factory=list)
    decode_plan: list[Step] = field(default_factory=list)
    encode_plan: list[Step] = field(default_factory=list)
    result: StructDef | None = None  # 99-0: the struct an execution.result carries back

    def __post_init__(self) -> None:
        self.py_name = py_class(self.name)

    @property
    def full_name(self) -> str:
        return f"{self.class_name}.{self.name}"

    @property
    def qualname(self) -> str:
        return f"{py_class(self.class_name)}.{self.py_name}"

    @property
    def flat_name(self) -> str:
        """``"BasicDeliver"``: a module-level name for the method."""
        return f"{py_class(self.class_name)}{self.py_name}"

    @property
    def func_suffix(self) -> str:
        return f"{py_attr(self.class_name)}_{py_attr(self.name)}"

    @property
    def public_fields(self) -> list[Field]:
        return [f for f in self.fields if not f.reserved]

    @property
    def reserved_fields(self) -> list[Field]:
        return [f for f in self.fields if f.reserved]


@dataclass
class AmqpClass:
    name: str
    index: int
    label: str
    doc: str
    methods: list[Method]
    properties: list[Field]
    py_name: str = ""

    def __post_init__(self) -> None:
        self.py_name = py_class(self.name)

    @property
    def properties_name(self) -> str:
        return f"{self.py_name}Properties"

    @property
    def unused_flags(self) -> int:
        """Flag bits no property uses (bit 0 is the continuation bit, never used here)."""
        used = 0
        for p in self.properties:
            used |= p.flag
        return 0xFFFF & ~used


@dataclass
class StructDef:
    """A 99-0 packed struct: a ``<struct>`` domain, or the ``<result>`` of a method.

    Written as ``[size] [type code] packing-flags values``; field *i* owns bit *i mod 8* of
    flag octet *i div 8* (:attr:`masks` reads the flags as one big-endian number).
    """

    name: str
    label: str
    doc: str
    size_width: int  # 0 (no size), 1, 2 or 4
    pack_width: int  # 1, 2 or 4
    type_code: int | None
    fields: list[Field]
    py_name: str = ""

    def __post_init__(self) -> None:
        self.py_name = py_class(self.name.replace(".", "-"))

    @property
    def masks(self) -> list[int]:
        """Each field's bit in the flags, read as a big-endian number of ``pack_width`` octets."""
        return [1 << (8 * (self.pack_width - 1 - i // 8) + i % 8) for i in range(len(self.fields))]

    @property
    def unused_mask(self) -> int:
        """Flag bits no field owns: set on the wire, they are an error."""
        return ((1 << (8 * self.pack_width)) - 1) & ~sum(self.masks)

    @property
    def pack_code(self) -> str:
        return {1: "B", 2: "H", 4: "I"}[self.pack_width]

    @property
    def is_long(self) -> bool:
        """Typed with a long size: it can travel as a long-struct."""
        return self.type_code is not None and self.size_width == 4

    @property
    def fixed_codes(self) -> list[str]:
        return sorted({c for f in self.fields if (c := PRIMITIVES[f.wire_type])})


@dataclass
class Spec:
    source_name: str
    source_sha256: str
    overlay_name: str | None
    overlay_sha256: str | None
    major: int
    minor: int
    revision: int
    constants: list[Constant]
    classes: list[AmqpClass]
    struct_formats: list[str] = field(default_factory=list)
    wire_format: str = WIRE_0_9
    structs: list[StructDef] = field(default_factory=list)
    header_structs: list[StructDef] = field(default_factory=list)
    """99-0: the structs a header segment carries (struct domains with a type code)."""
    table_tags: str | None = None
    """The field-table value tags the version defines; None: every tag the codec knows."""

    @property
    def version(self) -> str:
        return f"{self.major}-{self.minor}" + (f"-{self.revision}" if self.revision else "")

    @property
    def methods(self) -> list[Method]:
        return [m for c in self.classes for m in c.methods]

    @property
    def content_classes(self) -> list[AmqpClass]:
        return [c for c in self.classes if c.properties]

    @property
    def method_wire_types(self) -> set[str]:
        return {f.wire_type for m in self.methods for f in m.fields}

    @property
    def property_formats(self) -> list[str]:
        return sorted(
            {
                c
                for cls in self.content_classes
                for p in cls.properties
                if (c := PRIMITIVES[p.wire_type])
            }
            | {"H"}
        )

    @property
    def error_constants(self) -> list[Constant]:
        return [c for c in self.constants if c.error_class]

    # -- what differs between wire formats -------------------------------------------------

    @property
    def method_id_code(self) -> str:
        """Struct code of the class and method ids that open a method payload."""
        return "B" if self.wire_format == WIRE_0_10_DRAFT else "H"

    @property
    def table_module(self) -> str:
        """The runtime module holding the version's field-table codec."""
        return "amqp_codec.wire010" if self.wire_format == WIRE_0_10_DRAFT else "amqp_codec.table"

    @property
    def channel_close(self) -> Method:
        """The method that closes one channel (99-0: session.closed) on a soft error."""
        name = "session.closed" if self.wire_format == WIRE_0_10_DRAFT else "channel.close"
        return next(m for m in self.methods if m.full_name == name)

    @property
    def connection_close(self) -> Method:
        return next(m for m in self.methods if m.full_name == "connection.close")

    @property
    def method_codecs(self) -> list[str]:
        """Runtime codecs (``encode_<codec>``) the method fields use."""
        return sorted({f.codec for m in self.methods for f in m.fields if f.codec})

    @property
    def method_runtime_names(self) -> list[str]:
        """What methods.py imports from the runtime for those codecs: types, defaults, encoders."""
        # 99-0's encode_failure checks values with its own table and value codecs.
        names = {"encode_failure"} if self.wire_format == WIRE_0_10_DRAFT else set()
        for codec in self.method_codecs:
            wire = codec.replace("_", "-")
            names.add(f"encode_{codec}")
            names.update(re.findall(r"[A-Za-z_]\w*", PY_TYPES[wire] + " " + CODEC_DEFAULTS[wire]))
        return sorted(names - {"None"})

    @property
    def field_table_types(self) -> list[Constant]:
        """99-0: the field-table type codes (constants of class ``field-table-type``)."""
        return [c for c in self.constants if c.category == "field-table-type"]

    @property
    def struct_runtime_names(self) -> list[str]:
        """What structs.py imports from the runtime: the value codecs and types its fields use."""
        names = {"PackedStruct", "encode_failure"}
        for struct in self.structs:
            for f in struct.fields:
                if f.wire_type == "timestamp":
                    names.add("Timestamp")
                if f.wire_type in ("bit", "struct") or PRIMITIVES[f.wire_type]:
                    continue
                codec = f.wire_type.replace("-", "_")
                names.update((f"encode_{codec}", f"decode_{codec}"))
                type_names = re.findall(r"[A-Za-z_]\w*", f.py_type)
                names.update(n for n in type_names if n not in ("None", "Mapping", "Any", "str"))
                if f.wire_type == "table" or f.wire_type in CODEC_DEFAULTS:  # FIELDS defaults
                    names.update(re.findall(r"[A-Z_][A-Z_]+", f.default_literal))
        return sorted(names - {"bytes", "int"})

    def renders(self, filename: str) -> bool:
        """Whether the generated package has ``filename`` (structs only where the spec has them)."""
        if filename == "structs.py":
            return bool(self.structs)
        if filename == "properties.py":
            return bool(self.content_classes) or self.wire_format == WIRE_0_9
        return True


# --------------------------------------------------------------------------------------------
# Wire plans: the straight-line steps a generated encoder or decoder performs.
# --------------------------------------------------------------------------------------------


@dataclass
class Step:
    """One step of a wire plan.

    kind "fixed": one struct call covering ``names`` (fields, or ``bitsN`` octets), ``fmt``
    without the ``>``; kind "bits": split octet ``octet`` into ``bits`` (attr, mask) pairs;
    kind "shortstr", "longstr", "table", "timestamp": one variable-length field ``names[0]``;
    kind "call": field ``names[0]`` encoded by the runtime's ``encode_<codec>``/``decode_<codec>``.
    """

    kind: str
    names: list[str] = field(default_factory=list)
    fmt: str = ""
    octet: str = ""
    bits: list[tuple[str, int]] = field(default_factory=list)
    args: list[str] = field(default_factory=list)  # encode plans: the Python expression per name
    octets: list[str] = field(default_factory=list)  # the names in a fixed step that are bit octets
    codec: str = ""  # kind "call": the runtime codec

    @property
    def size(self) -> int:
        return sum({"B": 1, "H": 2, "I": 4, "Q": 8}[c] for c in self.fmt)

    @property
    def is_bit_octet(self) -> bool:
        """A fixed step that is one octet of packed bits (always 0..255, so no range check)."""
        return len(self.names) == 1 and self.names == self.octets

    @property
    def used_mask(self) -> int:
        """The bits of a bit octet that fields use; any other bit set on the wire is an error."""
        return sum(mask for _attr, mask in self.bits)


def plan_fields(fields: list[Field], prefix: list[tuple[str, str]] | None = None) -> list[Step]:
    """Group ``fields`` into wire steps: consecutive fixed-size fields and bit octets share one
    struct call; consecutive bits share one octet (at most eight to an octet).

    ``prefix`` is a list of (name, struct code) leading the first fixed run (the class and
    method ids when encoding).
    """
    steps: list[Step] = []
    run: Step | None = None
    bits: Step | None = None
    octets = 0

    def fixed_run() -> Step:
        nonlocal run
        if run is None:
            run = Step("fixed")
            steps.append(run)
        return run

    if prefix:
        for name, code in prefix:
            r = fixed_run()
            r.names.append(name)
            r.fmt += code
    for f in fields:
        if f.wire_type == "bit":
            if bits is None or len(bits.bits) == 8:
                octet = f"bits{octets}"
                octets += 1
                r = fixed_run()
                r.names.append(octet)
                r.octets.append(octet)
                r.fmt += "B"
                bits = Step("bits", octet=octet)
                steps.append(bits)
            bits.bits.append((f.attr, 1 << len(bits.bits)))
            continue
        bits = None
        if f.codec:
            run = None
            steps.append(Step("call", names=[f.attr], codec=f.codec))
            continue
        fixed_code = PRIMITIVES[f.wire_type]
        if fixed_code is not None:
            r = fixed_run()
            r.names.append(f.attr)
            r.fmt += fixed_code
            if f.wire_type == "timestamp":
                steps.append(Step("timestamp", names=[f.attr]))
        else:
            run = None
            steps.append(Step(f.wire_type, names=[f.attr]))
    return steps


def attach_encode_args(steps: list[Step], constants: dict[str, int]) -> None:
    """Give each fixed step of an encode plan the expressions its struct call packs."""
    octets = {s.octet: s for s in steps if s.kind == "bits"}
    for step in steps:
        if step.kind != "fixed":
            continue
        for name in step.names:
            if name in constants:
                step.args.append(str(constants[name]))
            elif name in step.octets:
                step.args.append(
                    " | ".join(f"(self.{attr} and {mask} or 0)" for attr, mask in octets[name].bits)
                )
            else:
                step.args.append(f"self.{name}")
