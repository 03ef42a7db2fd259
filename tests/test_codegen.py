"""The generator: model building, validation errors, determinism and --check."""

from __future__ import annotations

import importlib
import sys
import textwrap
from pathlib import Path

import pytest

from codegen.__main__ import ROOT, TARGETS, main
from codegen.loader import load
from codegen.model import ModelError, plan_fields
from codegen.render import render

SPEC = ROOT / "specs" / "amqp0-9-1.extended.xml"
OVERLAY = ROOT / "specs" / "amqp0-9-1.rabbitmq-overlay.xml"


@pytest.fixture(scope="module")
def model():  # type: ignore[no-untyped-def]
    return load(SPEC, OVERLAY)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


MINI_SPEC = """
<?xml version="1.0"?>
<amqp major="0" minor="9" revision="1" port="5672">
  <constant name="frame-end" value="206"/>
  <constant name="not-found" value="404" class="soft-error"/>
  <constant name="frame-error" value="501" class="hard-error"/>
  <domain name="bit" type="bit"/>
  <domain name="short" type="short"/>
  <domain name="shortstr" type="shortstr"/>
  <domain name="table" type="table"/>
  <domain name="reply-code" type="short"/>
  <class name="connection" index="10">
    <method name="close" index="50" synchronous="1">
      <chassis name="server" implement="MUST"/>
      <chassis name="client" implement="MUST"/>
      <response name="close-ok"/>
      <field name="reply-code" domain="reply-code"/>
      <field name="reply-text" domain="shortstr"/>
      <field name="class-id" domain="short"/>
      <field name="method-id" domain="short"/>
    </method>
    <method name="close-ok" index="51" synchronous="1">
      <chassis name="server" implement="MUST"/>
      <chassis name="client" implement="MUST"/>
    </method>
  </class>
  <class name="channel" index="20">
    <method name="close" index="40" synchronous="1">
      <chassis name="server" implement="MUST"/>
      <field name="reply-code" domain="reply-code"/>
      <field name="reply-text" domain="shortstr"/>
      <field name="class-id" domain="short"/>
      <field name="method-id" domain="short"/>
    </method>
  </class>
  <class name="widget" index="99">
    <field name="colour" domain="shortstr"/>
    <method name="spin" index="10" content="1">
      <chassis name="server" implement="MUST"/>
      <field name="reserved-1" type="short" reserved="1"/>
      <field name="fast" domain="bit"/>
      <field name="loud" domain="bit"/>
      <field name="name" domain="shortstr"/>
      <field name="args" domain="table"/>
    </method>
  </class>
</amqp>
"""


def test_model_resolves_domains_chassis_and_responses(model) -> None:  # type: ignore[no-untyped-def]
    methods = {m.full_name: m for m in model.methods}
    start = methods["connection.start"]
    assert start.sent_by == ["server"]
    assert [r.full_name for r in start.responses] == ["connection.start-ok"]
    assert methods["connection.close"].sent_by == ["client", "server"]
    publish = methods["basic.publish"]
    assert publish.content and not publish.synchronous
    assert [(f.attr, f.wire_type, f.reserved) for f in publish.fields] == [
        ("reserved_1", "short", True),
        ("exchange", "shortstr", False),
        ("routing_key", "shortstr", False),
        ("mandatory", "bit", False),
        ("immediate", "bit", False),
    ]
    assert methods["basic.qos"].fields[2].attr == "global_"  # a keyword gets a trailing _


def test_constants_keep_error_classes(model) -> None:  # type: ignore[no-untyped-def]
    by_name = {c.name: c for c in model.constants}
    assert by_name["not-found"].error_class == "soft-error"
    assert by_name["frame-error"].error_class == "hard-error"
    assert by_name["frame-end"].value == 206


def test_overlay_adds_rabbitmq_dialect(model) -> None:  # type: ignore[no-untyped-def]
    classes = {c.name: c for c in model.classes}
    access = classes["access"]
    assert access.index == 30
    assert [m.name for m in access.methods] == ["request", "request-ok"]
    props = [p.name for p in classes["basic"].properties]
    assert len(props) == 14 and props[-1] == "cluster-id"
    defaults = {
        (m.full_name, f.name): f.default for m in model.methods for f in m.fields if f.default
    }
    assert defaults[("connection.open", "virtual-host")] == "/"
    assert defaults[("exchange.declare", "type")] == "direct"
    assert defaults[("basic.nack", "requeue")] is True
    assert [c.index for c in model.classes] == sorted(c.index for c in model.classes)


def test_wire_plan_groups_fixed_fields_and_bits(model) -> None:  # type: ignore[no-untyped-def]
    deliver = next(m for m in model.methods if m.full_name == "basic.deliver")
    kinds = [(s.kind, s.fmt, s.names) for s in deliver.decode_plan]
    # delivery-tag and the redelivered bit share one struct call
    assert kinds[1] == ("fixed", "QB", ["delivery_tag", "bits0"])
    encode = next(m for m in model.methods if m.full_name == "basic.publish").encode_plan
    assert encode[0].fmt == "HHH" and encode[0].args[:2] == ["60", "40"]
    fixed = [step for step in encode if step.kind == "fixed"]
    assert fixed[-1].args == ["(self.mandatory and 1 or 0) | (self.immediate and 2 or 0)"]


def test_more_than_eight_bits_start_a_new_octet() -> None:
    from codegen.model import Field

    fields = [Field(f"b{i}", "bit", "bit", "", "", False, False, []) for i in range(10)]
    steps = plan_fields(fields)
    assert steps[0].fmt == "BB"
    assert [len(s.bits) for s in steps if s.kind == "bits"] == [8, 2]


def test_output_is_deterministic_and_headed(model) -> None:  # type: ignore[no-untyped-def]
    first = render(model)
    second = render(load(SPEC, OVERLAY))
    assert first == second
    for text in first.values():
        lines = text.splitlines()
        assert "amqp0-9-1.extended.xml" in lines[0]
        assert model.source_sha256 in lines[0]
        assert "generated — do not edit" in text.split('"""')[0]


def test_committed_output_is_current() -> None:
    assert main(["--check"]) == 0


def test_check_detects_stale_output(tmp_path: Path) -> None:
    spec = write(tmp_path, "mini.xml", MINI_SPEC)
    out = tmp_path / "pkg" / "mini091"
    assert main(["--spec", str(spec), "--out", str(out)]) == 0
    assert main(["--spec", str(spec), "--out", str(out), "--check"]) == 0
    (out / "methods.py").write_text("# edited by hand\n", encoding="utf-8")
    assert main(["--spec", str(spec), "--out", str(out), "--check"]) == 1
    assert (out / "methods.py").read_text(encoding="utf-8") == "# edited by hand\n"


def test_users_own_spec_generates_a_working_package(tmp_path: Path) -> None:
    spec = write(tmp_path, "mini.xml", MINI_SPEC)
    (tmp_path / "userpkg").mkdir()
    (tmp_path / "userpkg" / "__init__.py").write_text("", encoding="utf-8")
    assert main(["--spec", str(spec), "--out", str(tmp_path / "userpkg" / "mini")]) == 0
    sys.path.insert(0, str(tmp_path))
    try:
        pkg = importlib.import_module("userpkg.mini")
        spin = pkg.Widget.Spin(fast=False, loud=True, name="x", args={"k": 1})
        payload = spin.encode()
        assert payload == (
            b"\x00\x63\x00\x0a"
            + b"\x00\x00"
            + b"\x02"
            + b"\x01x"
            + b"\x00\x00\x00\x07"
            + b"\x01kI\x00\x00\x00\x01"
        )
        from amqp_codec import FrameDecoder, MethodFrame, decode_method, encode_frame

        assert decode_method(payload, pkg) == spin
        assert pkg.WidgetProperties(colour="red").encode() == b"\x80\x00\x03red"
        decoder = FrameDecoder(pkg)
        decoder.receive_data(encode_frame(MethodFrame(1, spin)))
        frame = decoder.next_frame()
        assert isinstance(frame, MethodFrame) and frame.method == spin
    finally:
        sys.path.remove(str(tmp_path))
        for name in list(sys.modules):
            if name.startswith("userpkg"):
                del sys.modules[name]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            ('<method name="close-ok" index="51"', '<method name="close-ok" index="50"'),
            "reuses index 50",
        ),
        (
            (
                'domain="shortstr"/>\n    <method name="spin"',
                'domain="nosuch"/>\n    <method name="spin"',
            ),
            "unknown domain or type 'nosuch'",
        ),
        (('<response name="close-ok"/>', '<response name="close-nope"/>'), "unknown response"),
        (
            ('<class name="channel" index="20">', '<class name="channel" index="10">'),
            "reuses index 10",
        ),
    ],
)
def test_model_problems_name_file_and_line(
    tmp_path: Path, change: tuple[str, str], message: str
) -> None:
    text = textwrap.dedent(MINI_SPEC).lstrip()
    assert change[0] in text
    spec = write(tmp_path, "broken.xml", text.replace(change[0], change[1]))
    with pytest.raises(ModelError, match=message) as info:
        load(spec)
    lines = spec.read_text(encoding="utf-8").splitlines()
    culprit = change[1].splitlines()[0].strip()
    expected = next(i for i, line in enumerate(lines, 1) if culprit in line)
    if "response" in message:  # reported at the method that names the response
        expected = next(i for i, line in enumerate(lines, 1) if '<method name="close"' in line)
    assert str(info.value).startswith(f"broken.xml:{expected}: ")


def test_overlay_problems_name_the_overlay(tmp_path: Path) -> None:
    spec = write(tmp_path, "mini.xml", MINI_SPEC)
    overlay = write(
        tmp_path,
        "fix.xml",
        """
        <overlay>
          <patch class="widget" method="spin" field="nosuch" default="1"/>
        </overlay>
        """,
    )
    with pytest.raises(ModelError, match=r"^fix.xml:2: patch names unknown field"):
        load(spec, overlay)


def test_cli_reports_model_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = write(tmp_path, "bad.xml", MINI_SPEC.replace('type="short"/>', 'type="float"/>', 1))
    assert main(["--spec", str(spec), "--out", str(tmp_path / "o")]) == 2
    assert "bad.xml:" in capsys.readouterr().err


def test_every_target_exists() -> None:
    for spec, overlay, out in TARGETS:
        assert (ROOT / spec).is_file()
        assert overlay is None or (ROOT / overlay).is_file()
        assert (ROOT / out / "__init__.py").is_file()


def test_spec_without_close_methods_is_rejected(tmp_path: Path) -> None:
    text = (
        textwrap.dedent(MINI_SPEC)
        .lstrip()
        .replace('<method name="close" index="40"', '<method name="shut" index="40"')
    )
    spec = write(tmp_path, "noclose.xml", text)
    with pytest.raises(ModelError, match=r"^noclose.xml:2: the spec has no channel.close method"):
        load(spec)


@pytest.mark.parametrize("name", ["end", "buf", "bits0"])
def test_field_names_that_clash_with_generated_locals_are_rejected(
    tmp_path: Path, name: str
) -> None:
    text = textwrap.dedent(MINI_SPEC).lstrip().replace('name="fast"', f'name="{name}"')
    spec = write(tmp_path, "clash.xml", text)
    with pytest.raises(ModelError, match=f"field '{name}' clashes"):
        load(spec)
