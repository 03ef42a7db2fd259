"""The generator on the 99-0 draft: what the model learns from its XML, and shared templates."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from codegen.__main__ import ROOT, TARGETS
from codegen.loader import load
from codegen.model import WIRE_0_9, WIRE_0_10_DRAFT, ModelError
from codegen.render import FILES, render

DRAFT = ROOT / "specs" / "amqp0-10-draft.xml"


@pytest.fixture(scope="module")
def model():  # type: ignore[no-untyped-def]
    return load(DRAFT)


def test_target_is_generated_with_the_others() -> None:
    assert ("specs/amqp0-10-draft.xml", None, "amqp_codec/v0_10_draft") in TARGETS


def test_version_and_wire_format(model) -> None:  # type: ignore[no-untyped-def]
    assert (model.major, model.minor, model.version) == (99, 0, "99-0")
    assert model.wire_format == WIRE_0_10_DRAFT
    assert model.method_id_code == "B"
    assert model.channel_close.full_name == "session.closed"
    # Class-level <field>s (basic, file, stream, tunnel) are never encoded in 99-0.
    assert model.content_classes == []


def test_method_plans_use_octet_ids(model) -> None:  # type: ignore[no-untyped-def]
    tune = next(m for m in model.methods if m.full_name == "connection.tune")
    assert tune.encode_plan[0].fmt == "BBHIH"
    assert tune.encode_plan[0].args[:2] == ["10", "30"]
    complete = next(m for m in model.methods if m.full_name == "execution.complete")
    assert [(s.kind, s.codec) for s in complete.decode_plan] == [
        ("fixed", ""),
        ("call", "rfc1982_long_set"),
    ]


def test_result_type_codes(model) -> None:  # type: ignore[no-untyped-def]
    # The table in the wire note (§6.3): class index * 256 + <struct type>.
    codes = {s.name: s.type_code for s in model.structs if s.name.endswith("-result")}
    assert codes == {
        "exchange.query-result": 10271,
        "queue.query-result": 12861,
        "dtx-demarcation.start-result": 25621,
        "dtx-demarcation.end-result": 25631,
        "dtx-coordination.commit-result": 26891,
        "dtx-coordination.get-timeout-result": 26911,
        "dtx-coordination.prepare-result": 26921,
        "dtx-coordination.recover-result": 26931,
        "dtx-coordination.rollback-result": 26941,
        "binding.query-result": 33291,
    }
    assert all(
        s.pack_width == 2 and s.size_width == 4 for s in model.structs if s.name.endswith("-result")
    )


def test_struct_domains(model) -> None:  # type: ignore[no-untyped-def]
    by_name = {s.name: s for s in model.structs}
    layout = {
        name: (by_name[name].size_width, by_name[name].pack_width, by_name[name].type_code)
        for name in ("reply-to", "delivery-properties", "message-properties", "execution-header")
    }
    assert layout == {
        "reply-to": (2, 2, None),
        "delivery-properties": (4, 2, 0),
        "message-properties": (4, 2, 1),
        "execution-header": (1, 1, None),
    }
    assert [s.name for s in model.header_structs] == ["delivery-properties", "message-properties"]
    delivery = by_name["delivery-properties"]
    # Field i: bit i mod 8 of flag octet i div 8, read as a big-endian short.
    assert delivery.masks[:3] == [0x0100, 0x0200, 0x0400]
    assert delivery.masks[8] == 0x0001
    assert delivery.unused_mask == 0x00FE
    reply_to = by_name["message-properties"].fields[3]
    assert reply_to.wire_type == "struct" and reply_to.struct is by_name["reply-to"]


def test_field_table_types_follow_the_nibble_rule(model) -> None:  # type: ignore[no-untyped-def]
    fixed = {0: 1, 1: 2, 2: 4, 3: 8, 4: 16, 5: 32, 6: 64, 7: 128, 0xC: 5, 0xD: 9, 0xF: 0}
    prefixed = {8: 1, 9: 2, 0xA: 4}
    types = model.field_table_types
    assert len(types) == 46
    for c in types:
        nibble = c.value >> 4
        assert (c.width, c.lfwidth) == (fixed.get(nibble, 0), prefixed.get(nibble, 0)), c.name


def test_one_template_set_serves_every_version(model) -> None:  # type: ignore[no-untyped-def]
    names = {name for _template, name in FILES}
    draft_files = render(model)
    classic = render(load(ROOT / TARGETS[0][0], ROOT / TARGETS[0][1]))
    assert set(draft_files) == names - {"properties.py"}
    assert set(classic) == names - {"structs.py"}
    assert "from amqp_codec.wire010 import" in draft_files["methods.py"]
    assert "wire010" not in "".join(classic.values())
    assert render(model) == draft_files  # deterministic


MINI = """
<?xml version="1.0"?>
<amqp major="99" minor="0">
  <constant name="frame-end" value="206"/>
  <constant name="field-table-octet" value="0x00" width="1" datatype="binary"
    class="field-table-type"/>
  <domain name="short" type="short"/>
  <domain name="shortstr" type="shortstr"/>
  <domain name="bit" type="bit"/>
  {domains}
  <class name="connection" index="10">
    <method name="close" index="50">
      <field name="reply-code" domain="short"/>
      <field name="reply-text" domain="shortstr"/>
      <field name="class-id" domain="short"/>
      <field name="method-id" domain="short"/>
      {fields}
    </method>
  </class>
  <class name="session" index="20">
    <method name="closed" index="41">
      <field name="reply-code" domain="short"/>
      <field name="reply-text" domain="shortstr"/>
    </method>
  </class>
</amqp>
"""


def mini(tmp_path: Path, domains: str = "", fields: str = "") -> Path:
    path = tmp_path / "mini.xml"
    text = textwrap.dedent(MINI).lstrip().format(domains=domains, fields=fields)
    path.write_text(text, encoding="utf-8")
    return path


def test_mini_draft_loads(tmp_path: Path) -> None:
    spec = load(
        mini(
            tmp_path,
            '<domain name="s"><struct size="short"><field name="a" domain="bit"/></struct></domain>',
        )
    )
    assert spec.wire_format == WIRE_0_10_DRAFT
    assert spec.structs[0].pack_width == 2  # absent pack means short


@pytest.mark.parametrize(
    ("domains", "fields", "message"),
    [
        (
            '<domain name="s"><struct pack="octet">'
            + "".join(f'<field name="f{i}" domain="bit"/>' for i in range(9))
            + "</struct></domain>",
            "",
            "more fields than 8 packing flags",
        ),
        ('<domain name="s"><struct pack="word"/></domain>', "", "pack='word'"),
        (
            '<domain name="s"><struct/></domain>',
            '<field name="x" domain="s"/>',
            "struct-typed method fields are unsupported",
        ),
        (
            '<domain name="a"><struct size="long" type="1"/></domain>'
            '<domain name="b"><struct size="long" type="1"/></domain>',
            "",
            "reuses type code 1",
        ),
    ],
)
def test_mini_draft_errors(tmp_path: Path, domains: str, fields: str, message: str) -> None:
    with pytest.raises(ModelError, match=message):
        load(mini(tmp_path, domains, fields))


def test_classic_specs_keep_their_wire_format() -> None:
    assert load(ROOT / TARGETS[0][0], ROOT / TARGETS[0][1]).wire_format == WIRE_0_9
