"""Read spec XML (and an optional overlay) with lxml into the validated model.

The overlay is a small XML file in the spec's own vocabulary, applied to the parsed upstream
tree before the model is built, so the upstream file stays byte-identical:

* ``<constant>``, ``<domain>`` and ``<class>`` elements are added, or replace the element of
  the same name;
* ``<class name="…">`` with ``merge="1"`` adds or replaces the ``<method>`` and property
  ``<field>`` children it holds;
* ``<patch class="…" method="…" field="…" attribute="value" …/>`` sets attributes on one
  existing field (``method`` omitted: a content property). ``rename="x"`` renames it.
* ``<table-tags value="SIDTF"/>`` names the field-table value tags the version defines
  (without it: every tag the codec knows, see :mod:`amqp_codec.table`).

The loader reads both XML dialects: 0-9-1's (hyphenated names, ``label`` attributes, rules
as ``<rule name><doc>``) and 0-8's (names with spaces, labels as an element's leading text,
``soft error`` classes, rules as ``<rule implement>`` text or ``<doc name="rule">``, and
the root's ``major=8 minor=0`` meaning AMQP 0-8). Names are normalised to hyphens first, so
the model, the generated ``NAME`` strings and overlays use one spelling for every version.

The 0-10 draft's XML (root ``major=99 minor=0``) adds what its wire format needs: domains
that are packed ``<struct>``s (size, pack and type attributes), methods with a ``<result>``
struct (type code ``class index * 256 + type``), constants of class ``field-table-type``
(the table value type codes with their ``width``/``lfwidth``) and the types uuid,
rfc1982-long-set, long-struct, array and content. Its class-level fields are not encoded.

Problems (duplicate index, unknown domain or type, bad overlay target) raise
:class:`~codegen.model.ModelError` with the file and line of the offending element.
"""

from __future__ import annotations

import hashlib
import re
import textwrap
from pathlib import Path

from lxml import etree
from lxml.etree import _Element

from .model import (
    PRIMITIVES,
    WIRE_0_9,
    WIRE_0_10_DRAFT,
    AmqpClass,
    Check,
    Constant,
    Field,
    Method,
    ModelError,
    Spec,
    StructDef,
    attach_encode_args,
    plan_fields,
)


def _where(el: _Element) -> str:
    source = el.get("_source")
    if source:
        return str(source)
    url = el.getroottree().docinfo.URL or "<spec>"
    return f"{Path(url).name}:{el.sourceline}"


def _fail(el: _Element, message: str) -> ModelError:
    return ModelError(f"{_where(el)}: {message}")


def _children(el: _Element, tag: str) -> list[_Element]:
    return [c for c in el if isinstance(c.tag, str) and etree.QName(c).localname == tag]


def _doc_text(el: _Element) -> str:
    """The element's untyped ``<doc>`` paragraphs, dedented, as plain text.

    Grammars, scenarios and rules (0-9-1 ``type="…"``; 0-8 ``name="grammar|rule"`` or
    ``test="…"``) are left out.
    """
    paragraphs = []
    for doc in _children(el, "doc"):
        if doc.get("type") or doc.get("name") or doc.get("test"):
            continue
        text = textwrap.dedent("".join(doc.itertext())).strip()
        text = re.sub(r"[ \t]+\n", "\n", text)
        if text:
            paragraphs.append(text)
    return "\n\n".join(paragraphs)


def _label(el: _Element) -> str:
    """The ``label`` attribute (0-9-1), or the element's leading text (0-8)."""
    label = el.get("label")
    if label is not None:
        return str(label)
    return " ".join((el.text or "").split())


# Elements whose name (and the attributes that refer to other names) 0-8 spells with spaces.
_NAMED = ("constant", "domain", "class", "method", "field", "response", "patch", "table-tags")
_NAME_ATTRS = ("name", "domain", "type", "class", "method", "field", "rename")


def normalise_names(root: _Element) -> None:
    """Spell every name with hyphens (0-8's ``routing key`` → ``routing-key``), in place."""
    for el in root.iter():
        if isinstance(el.tag, str) and etree.QName(el).localname in _NAMED:
            for attr in _NAME_ATTRS:
                value = el.get(attr)
                if value is not None and " " in value.strip():
                    el.set(attr, "-".join(value.split()))


# Root (major, minor) pairs that do not mean what they say: 0-8's XML (and its
# connection.start) carries major=8 minor=0 for AMQP 0-8.
_VERSION_ALIASES = {(8, 0): (0, 8)}


def _int(el: _Element, attr: str) -> int:
    value = el.get(attr)
    if value is None:
        raise _fail(el, f"<{etree.QName(el).localname}> has no {attr!r}")
    try:
        return int(value, 0)
    except ValueError:
        raise _fail(el, f"{attr}={value!r} is not a number") from None


def _flag(el: _Element, attr: str) -> bool:
    return el.get(attr, "0").strip().lower() in ("1", "true", "yes")


# --------------------------------------------------------------------------------------------
# Overlay
# --------------------------------------------------------------------------------------------


def _by_name(parent: _Element, tag: str, name: str) -> _Element | None:
    for c in _children(parent, tag):
        if c.get("name") == name:
            return c
    return None


def _add_or_replace(parent: _Element, new: _Element) -> None:
    tag = etree.QName(new).localname
    old = _by_name(parent, tag, new.get("name", ""))
    copy = _copy_with_source(new)
    if old is not None:
        parent.replace(old, copy)
    else:
        siblings = _children(parent, tag)
        if siblings:
            siblings[-1].addnext(copy)
        else:
            parent.append(copy)


def _copy_with_source(el: _Element) -> _Element:
    # The copy joins the upstream tree; remember where it came from for error messages.
    copy = etree.fromstring(etree.tostring(el))
    for src, dst in zip(el.iter(), copy.iter(), strict=True):
        if isinstance(src.tag, str):
            dst.set("_source", _where(src))
    return copy


def apply_overlay(root: _Element, overlay: _Element) -> None:
    """Apply ``overlay`` (see module docs) to the upstream ``root`` in place."""
    for el in overlay:
        if not isinstance(el.tag, str):
            continue
        tag = etree.QName(el).localname
        if tag in ("constant", "domain") or (tag == "class" and not _flag(el, "merge")):
            _add_or_replace(root, el)
        elif tag == "class":
            target = _by_name(root, "class", el.get("name", ""))
            if target is None:
                raise _fail(el, f"merge into unknown class {el.get('name')!r}")
            for child in el:
                if isinstance(child.tag, str) and etree.QName(child).localname in (
                    "method",
                    "field",
                ):
                    _add_or_replace(target, child)
        elif tag == "patch":
            _apply_patch(root, el)
        elif tag == "table-tags":
            _add_or_replace(root, el)
        elif tag != "doc":
            raise _fail(el, f"unknown overlay element <{tag}>")


def _apply_patch(root: _Element, patch: _Element) -> None:
    cls = _by_name(root, "class", patch.get("class", ""))
    if cls is None:
        raise _fail(patch, f"patch names unknown class {patch.get('class')!r}")
    owner = cls
    if patch.get("method"):
        method = _by_name(cls, "method", patch.get("method", ""))
        if method is None:
            raise _fail(patch, f"patch names unknown method {patch.get('method')!r}")
        owner = method
    target = _by_name(owner, "field", patch.get("field", ""))
    if target is None:
        raise _fail(patch, f"patch names unknown field {patch.get('field')!r}")
    for attr, value in patch.attrib.items():
        if attr in ("class", "method", "field"):
            continue
        target.set("name" if attr == "rename" else attr, value)
    target.set("_source", _where(patch))


# --------------------------------------------------------------------------------------------
# Model building
# --------------------------------------------------------------------------------------------


def _default(el: _Element, wire_type: str) -> object:
    raw = el.get("default")
    if wire_type == "bit":
        return raw is not None and raw.strip().lower() in ("1", "true")
    if wire_type in ("octet", "short", "long", "longlong", "timestamp"):
        return int(raw, 0) if raw else 0
    if wire_type == "longstr":
        return (raw or "").encode()
    if wire_type == "shortstr":
        return raw or ""
    return None  # table: always empty


# A domain's wire type and its <assert> elements, by domain name.
Domains = dict[str, tuple[str, list[_Element]]]


def _field(el: _Element, domains: Domains) -> Field:
    name = el.get("name")
    if not name:
        raise _fail(el, "<field> has no name")
    domain = el.get("domain") or el.get("type") or ""
    if domain not in domains:
        raise _fail(el, f"field {name!r} has unknown domain or type {domain!r}")
    wire_type, domain_asserts = domains[domain]
    assert_els = domain_asserts + _children(el, "assert")
    asserts = [_assert_text(a) for a in assert_els]
    checks = list(dict.fromkeys(c for a in assert_els if (c := _assert_check(a)) is not None))
    # 0-9-1 marks retired fields reserved="1"; an overlay can mark others deprecated="1".
    reserved = _flag(el, "reserved") or _flag(el, "deprecated")
    return Field(
        name=name,
        wire_type=wire_type,
        domain=domain,
        label=_label(el),
        doc=_doc_text(el),
        default=_default(el, wire_type),
        reserved=reserved,
        asserts=asserts,
        checks=checks,
    )


def _assert_text(el: _Element) -> str:
    """An ``<assert>`` as a phrase for the field's docs ("at most 127 bytes")."""
    check, value = el.get("check", ""), el.get("value", "")
    if check == "notnull":
        return "must not be empty"
    if check == "length":
        return f"at most {value} bytes"
    if check == "regexp":
        return f"matches {value}"
    if check in ("le", "ge", "eq", "ne", "lt", "gt") and el.get("field"):
        other = f"{el.get('method')}.{el.get('field')}" if el.get("method") else el.get("field")
        return f"{check} {other}"
    return " ".join(f"{k}={v}" for k, v in el.attrib.items() if k != "_source")


def _readable(path: Path) -> None:
    """A spec or overlay that cannot be read is a :class:`ModelError` naming it (lxml would
    raise a bare ``OSError`` from deep inside its parser)."""
    try:
        with open(path, "rb") as file:
            file.read(1)
    except OSError as exc:
        raise ModelError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _assert_check(el: _Element) -> Check | None:
    """An ``<assert>`` as data: ``(check, value)``, as :class:`amqp_codec.FieldSpec` documents.

    Values are typed here so generated code carries literals: ``length`` an int, ``regexp``
    the pattern, ``enum`` the allowed values (the ``<value>`` children, numbered in order),
    ``le``/``ge``/... on another field ``"method.field"`` (or the field alone).
    """
    check, value = el.get("check", ""), el.get("value")
    if check in ("notnull", "null"):
        return (check, None)
    if check == "length" and value is not None:
        return (check, int(value, 0))
    if check == "regexp" and value is not None:
        return (check, value)
    if check == "syntax":
        return (check, el.get("rule", ""))
    if check == "enum":
        return (check, tuple(range(len(_children(el, "value")))))
    if check in ("le", "ge", "eq", "ne", "lt", "gt"):
        if el.get("field"):
            method = el.get("method")
            return (check, f"{method}.{el.get('field')}" if method else el.get("field", ""))
        if value is not None:
            try:
                return (check, int(value, 0))
            except ValueError:  # 99-0's le value="channel-max": another field, by name
                return (check, value)
    return None


def load(spec_path: Path, overlay_path: Path | None = None) -> Spec:
    """Parse ``spec_path`` (plus ``overlay_path``) into a validated :class:`Spec`."""
    parser = etree.XMLParser(remove_blank_text=False, resolve_entities=False, no_network=True)
    _readable(spec_path)
    if overlay_path is not None:
        _readable(overlay_path)
    try:
        tree = etree.parse(str(spec_path), parser)
    except etree.XMLSyntaxError as exc:
        raise ModelError(f"{spec_path.name}:{exc.lineno}: {exc.msg}") from None
    root = tree.getroot()
    normalise_names(root)
    overlay_sha = None
    if overlay_path is not None:
        try:
            overlay = etree.parse(str(overlay_path), parser).getroot()
        except etree.XMLSyntaxError as exc:
            raise ModelError(f"{overlay_path.name}:{exc.lineno}: {exc.msg}") from None
        normalise_names(overlay)
        apply_overlay(root, overlay)
        overlay_sha = hashlib.sha256(overlay_path.read_bytes()).hexdigest()

    major, minor = _VERSION_ALIASES.get(
        (_int(root, "major"), _int(root, "minor")), (_int(root, "major"), _int(root, "minor"))
    )
    revision = int(root.get("revision", "0"))
    table_tags = None
    for el in _children(root, "table-tags"):
        table_tags = el.get("value", "")
        if not table_tags or len(set(table_tags)) != len(table_tags):
            raise _fail(el, f"table-tags value {table_tags!r} is not a list of distinct tags")

    constants = []
    seen_constants: dict[str, _Element] = {}
    for el in _children(root, "constant"):
        name = el.get("name", "")
        if name in seen_constants:
            raise _fail(el, f"duplicate constant {name!r}")
        seen_constants[name] = el
        error_class = el.get("class")
        if error_class == "field-table-type":  # 99-0: a field-table value type code
            constants.append(_table_type(el, name))
            continue
        if error_class not in (None, "soft-error", "hard-error"):
            raise _fail(el, f"constant {name!r} has unknown class {error_class!r}")
        constants.append(Constant(name, _int(el, "value"), error_class, _doc_text(el)))

    wire_format = _WIRE_FORMATS.get((major, minor), WIRE_0_9)
    domains: Domains = {t: (t, []) for t in PRIMITIVES}
    struct_domains: dict[str, _Element] = {}
    for el in _children(root, "domain"):
        name, base = el.get("name", ""), el.get("type", "")
        if not base and _children(el, "struct"):  # 99-0: the domain is a packed struct
            struct_domains[name] = _children(el, "struct")[0]
            base = "struct"
        if base not in PRIMITIVES:
            raise _fail(el, f"domain {name!r} has unknown type {base!r}")
        domains[name] = (base, _children(el, "assert"))

    classes = []
    class_ids: dict[int, str] = {}
    for cel in _children(root, "class"):
        cname = cel.get("name", "")
        cindex = _int(cel, "index")
        if cindex in class_ids:
            raise _fail(cel, f"class {cname!r} reuses index {cindex} of {class_ids[cindex]!r}")
        class_ids[cindex] = cname
        methods = []
        method_ids: dict[int, str] = {}
        for mel in _children(cel, "method"):
            mname = mel.get("name", "")
            mindex = _int(mel, "index")
            if mindex in method_ids:
                raise _fail(
                    mel, f"method {cname}.{mname} reuses index {mindex} of {method_ids[mindex]!r}"
                )
            method_ids[mindex] = mname
            fields = [_field(f, domains) for f in _children(mel, "field")]
            _check_unique_attrs(mel, fields)
            for f in fields:
                if f.wire_type == "struct":
                    raise _fail(
                        mel, f"field {f.name!r}: struct-typed method fields are unsupported"
                    )
            # A <chassis> names a peer that implements (receives) the method; the other sends.
            receivers = {c.get("name") for c in _children(mel, "chassis")}
            sent_by = sorted({"client", "server"} - receivers) or ["client", "server"]
            methods.append(
                Method(
                    name=mname,
                    index=mindex,
                    synchronous=_flag(mel, "synchronous"),
                    content=_flag(mel, "content"),
                    response_names=[r.get("name", "") for r in _children(mel, "response")],
                    sent_by=sent_by,
                    label=_label(mel),
                    doc=_doc_text(mel),
                    fields=fields,
                    class_name=cname,
                    class_index=cindex,
                    result=_result(mel, cname, cindex, domains),
                )
            )
        names = {m.name: m for m in methods}
        for method, mel in zip(methods, _children(cel, "method"), strict=True):
            for rname in method.response_names:
                if rname not in names:
                    raise _fail(mel, f"{cname}.{method.name} names unknown response {rname!r}")
                method.responses.append(names[rname])
        # 99-0 sends message headers as structs: its class-level fields are never encoded.
        field_els = _children(cel, "field") if wire_format == WIRE_0_9 else []
        properties = [_field(f, domains) for f in field_els]
        _check_unique_attrs(cel, properties, properties=True)
        if len(properties) > 15:
            raise _fail(cel, "more than 15 content properties need a second flag word")
        for position, prop in enumerate(properties):
            prop.flag = 1 << (15 - position)
        classes.append(AmqpClass(cname, cindex, _label(cel), _doc_text(cel), methods, properties))

    classes.sort(key=lambda c: c.index)
    full_names = {m.full_name for c in classes for m in c.methods}
    closes = ("connection.close", "session.closed" if wire_format != WIRE_0_9 else "channel.close")
    for required in closes:  # the frame decoder's error replies
        if required not in full_names:
            raise _fail(root, f"the spec has no {required} method")
    spec = Spec(
        source_name=spec_path.name,
        source_sha256=hashlib.sha256(spec_path.read_bytes()).hexdigest(),
        overlay_name=overlay_path.name if overlay_path else None,
        overlay_sha256=overlay_sha,
        major=major,
        minor=minor,
        revision=revision,
        constants=constants,
        classes=classes,
        table_tags=table_tags,
        wire_format=wire_format,
    )
    _structs(spec, struct_domains, domains)
    _plan(spec)
    return spec


# Local names of the generated encoders and decoders; a field of the same name would clash.
_METHOD_LOCALS = frozenset({"self", "buf", "o", "end", "depth", "n", "m", "s"})
_PROPERTY_LOCALS = _METHOD_LOCALS | {
    "flags",
    "present",
    "properties",
    "value",
    "raw",
    "parts",
    "append",
}


def _check_unique_attrs(el: _Element, fields: list[Field], *, properties: bool = False) -> None:
    seen = set()
    reserved = _PROPERTY_LOCALS if properties else _METHOD_LOCALS
    for f in fields:
        if f.attr in seen:
            raise _fail(el, f"two fields map to the Python name {f.attr!r}")
        if f.attr in reserved or re.fullmatch(r"bits\d+", f.attr):
            raise _fail(el, f"field {f.name!r} clashes with a name the generated code uses")
        seen.add(f.attr)


def _plan(spec: Spec) -> None:
    """Compute every method's wire plans and the struct formats they use."""
    formats: set[str] = set()
    for cls in spec.classes:
        for method in cls.methods:
            method.decode_plan = plan_fields(method.fields)
            method.encode_plan = plan_fields(
                method.fields,
                prefix=[("CLASS_ID", spec.method_id_code), ("METHOD_ID", spec.method_id_code)],
            )
            attach_encode_args(
                method.encode_plan, {"CLASS_ID": cls.index, "METHOD_ID": method.index}
            )
            for step in method.decode_plan + method.encode_plan:
                if step.kind == "fixed":
                    formats.add(step.fmt)
    spec.struct_formats = sorted(formats)


# --------------------------------------------------------------------------------------------
# 99-0: packed structs and field-table type codes
# --------------------------------------------------------------------------------------------

# Root (major, minor) → wire format, where it is not 0-9's.
_WIRE_FORMATS = {(99, 0): WIRE_0_10_DRAFT}
_WIDTHS = {"octet": 1, "short": 2, "long": 4}
# Locals of the generated struct codecs; a field of the same name would clash.
_STRUCT_LOCALS = _PROPERTY_LOCALS | {"cls", "flags"}


def _table_type(el: _Element, name: str) -> Constant:
    """A ``field-table-type`` constant: one type code, its width or length-prefix width."""
    width, lfwidth = el.get("width"), el.get("lfwidth")
    if (width is None) == (lfwidth is None):
        raise _fail(el, f"field-table type {name!r} needs exactly one of width and lfwidth")
    return Constant(
        name,
        _int(el, "value"),
        None,
        _doc_text(el),
        category="field-table-type",
        width=_int(el, "width") if width is not None else 0,
        lfwidth=_int(el, "lfwidth") if lfwidth is not None else 0,
        datatype=el.get("datatype", "binary"),
    )


def _struct_def(el: _Element, name: str, label: str, doc: str, domains: Domains) -> StructDef:
    """A ``<struct>``: its size, packing and type attributes and its fields."""
    for attr in ("size", "pack"):
        if el.get(attr) is not None and el.get(attr) not in _WIDTHS:
            raise _fail(el, f"struct {name!r} has {attr}={el.get(attr)!r}")
    fields = [_field(f, domains) for f in _children(el, "field")]
    _check_unique_attrs(el, fields, properties=True)
    for f in fields:
        if f.attr in _STRUCT_LOCALS:
            raise _fail(el, f"field {f.name!r} clashes with a name the generated code uses")
    pack = _WIDTHS[el.get("pack", "short")]  # absent pack means short in every implementation
    if len(fields) > 8 * pack:
        raise _fail(el, f"struct {name!r} has more fields than {8 * pack} packing flags")
    return StructDef(
        name=name,
        label=label,
        doc=doc,
        size_width=_WIDTHS.get(el.get("size", ""), 0),
        pack_width=pack,
        type_code=_int(el, "type") if el.get("type") is not None else None,
        fields=fields,
    )


def _result(mel: _Element, cname: str, cindex: int, domains: Domains) -> StructDef | None:
    """A method's ``<result>`` struct; its type code is ``class index * 256 + type``."""
    results = _children(mel, "result")
    if not results:
        return None
    structs = _children(results[0], "struct")
    if not structs:
        raise _fail(results[0], "<result> without a <struct>")
    name = f"{cname}.{mel.get('name', '')}-result"
    label = f"the result of {cname}.{mel.get('name', '')}, carried by execution.result"
    result = _struct_def(structs[0], name, label, "", domains)
    if result.type_code is None:
        raise _fail(structs[0], f"{name} has no type code")
    result.type_code += cindex * 256
    return result


def _structs(spec: Spec, struct_domains: dict[str, _Element], domains: Domains) -> None:
    """Build the struct domains, link struct-typed fields and check type codes are unique."""
    by_name: dict[str, StructDef] = {}
    for name, el in struct_domains.items():
        parent = el.getparent()
        assert parent is not None
        by_name[name] = _struct_def(el, name, _label(parent), _doc_text(parent), domains)
    structs = list(by_name.values()) + [m.result for m in spec.methods if m.result]
    codes: dict[int, str] = {}
    for struct in structs:
        if struct.type_code is not None and struct.is_long:
            if struct.type_code in codes:
                raise ModelError(
                    f"{spec.source_name}: {struct.name} reuses type code {struct.type_code} "
                    f"of {codes[struct.type_code]}"
                )
            codes[struct.type_code] = struct.name
        for f in struct.fields:
            if f.wire_type == "struct":
                f.struct = by_name[f.domain]
    spec.structs = structs
    spec.header_structs = [s for s in by_name.values() if s.is_long]
