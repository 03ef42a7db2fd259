"""Read spec XML (and an optional overlay) with lxml into the validated model.

The overlay is a small XML file in the spec's own vocabulary, applied to the parsed upstream
tree before the model is built, so the upstream file stays byte-identical:

* ``<constant>``, ``<domain>`` and ``<class>`` elements are added, or replace the element of
  the same name;
* ``<class name="…">`` with ``merge="1"`` adds or replaces the ``<method>`` and property
  ``<field>`` children it holds;
* ``<patch class="…" method="…" field="…" attribute="value" …/>`` sets attributes on one
  existing field (``method`` omitted: a content property). ``rename="x"`` renames it.

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
    AmqpClass,
    Constant,
    Field,
    Method,
    ModelError,
    Spec,
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
    """The element's untyped ``<doc>`` paragraphs, dedented, as plain text."""
    paragraphs = []
    for doc in _children(el, "doc"):
        if doc.get("type"):
            continue
        text = textwrap.dedent("".join(doc.itertext())).strip()
        text = re.sub(r"[ \t]+\n", "\n", text)
        if text:
            paragraphs.append(text)
    return "\n\n".join(paragraphs)


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


def _field(el: _Element, domains: dict[str, tuple[str, list[str]]]) -> Field:
    name = el.get("name")
    if not name:
        raise _fail(el, "<field> has no name")
    domain = el.get("domain") or el.get("type") or ""
    if domain not in domains:
        raise _fail(el, f"field {name!r} has unknown domain or type {domain!r}")
    wire_type, domain_asserts = domains[domain]
    asserts = domain_asserts + [_assert_text(a) for a in _children(el, "assert")]
    # 0-9-1 marks retired fields reserved="1"; an overlay can mark others deprecated="1".
    reserved = _flag(el, "reserved") or _flag(el, "deprecated")
    return Field(
        name=name,
        wire_type=wire_type,
        domain=domain,
        label=el.get("label", ""),
        doc=_doc_text(el),
        default=_default(el, wire_type),
        reserved=reserved,
        asserts=asserts,
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


def load(spec_path: Path, overlay_path: Path | None = None) -> Spec:
    """Parse ``spec_path`` (plus ``overlay_path``) into a validated :class:`Spec`."""
    parser = etree.XMLParser(remove_blank_text=False, resolve_entities=False, no_network=True)
    try:
        tree = etree.parse(str(spec_path), parser)
    except etree.XMLSyntaxError as exc:
        raise ModelError(f"{spec_path.name}:{exc.lineno}: {exc.msg}") from None
    root = tree.getroot()
    overlay_sha = None
    if overlay_path is not None:
        try:
            overlay = etree.parse(str(overlay_path), parser).getroot()
        except etree.XMLSyntaxError as exc:
            raise ModelError(f"{overlay_path.name}:{exc.lineno}: {exc.msg}") from None
        apply_overlay(root, overlay)
        overlay_sha = hashlib.sha256(overlay_path.read_bytes()).hexdigest()

    major, minor = _int(root, "major"), _int(root, "minor")
    revision = int(root.get("revision", "0"))

    constants = []
    seen_constants: dict[str, _Element] = {}
    for el in _children(root, "constant"):
        name = el.get("name", "")
        if name in seen_constants:
            raise _fail(el, f"duplicate constant {name!r}")
        seen_constants[name] = el
        error_class = el.get("class")
        if error_class not in (None, "soft-error", "hard-error"):
            raise _fail(el, f"constant {name!r} has unknown class {error_class!r}")
        constants.append(Constant(name, _int(el, "value"), error_class, _doc_text(el)))

    domains: dict[str, tuple[str, list[str]]] = {t: (t, []) for t in PRIMITIVES}
    for el in _children(root, "domain"):
        name, base = el.get("name", ""), el.get("type", "")
        if base not in PRIMITIVES:
            raise _fail(el, f"domain {name!r} has unknown type {base!r}")
        domains[name] = (base, [_assert_text(a) for a in _children(el, "assert")])

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
                    label=mel.get("label", ""),
                    doc=_doc_text(mel),
                    fields=fields,
                    class_name=cname,
                    class_index=cindex,
                )
            )
        names = {m.name: m for m in methods}
        for method, mel in zip(methods, _children(cel, "method"), strict=True):
            for rname in method.response_names:
                if rname not in names:
                    raise _fail(mel, f"{cname}.{method.name} names unknown response {rname!r}")
                method.responses.append(names[rname])
        properties = [_field(f, domains) for f in _children(cel, "field")]
        _check_unique_attrs(cel, properties, properties=True)
        if len(properties) > 15:
            raise _fail(cel, "more than 15 content properties need a second flag word")
        for position, prop in enumerate(properties):
            prop.flag = 1 << (15 - position)
        classes.append(
            AmqpClass(cname, cindex, cel.get("label", ""), _doc_text(cel), methods, properties)
        )

    classes.sort(key=lambda c: c.index)
    full_names = {m.full_name for c in classes for m in c.methods}
    for required in ("connection.close", "channel.close"):  # the frame decoder's error replies
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
    )
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
                method.fields, prefix=[("CLASS_ID", "H"), ("METHOD_ID", "H")]
            )
            attach_encode_args(
                method.encode_plan, {"CLASS_ID": cls.index, "METHOD_ID": method.index}
            )
            for step in method.decode_plan + method.encode_plan:
                if step.kind == "fixed":
                    formats.add(step.fmt)
    spec.struct_formats = sorted(formats)
