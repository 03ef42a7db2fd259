"""Credentials are redacted by default wherever a method's fields are shown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from amqp_codec import encode_frame
from amqp_codec.analyze.streams import method_fields
from amqp_codec.cli import main
from amqp_codec.credentials import REDACTED, SECRET_FIELDS, is_secret, secret_fields
from amqp_codec.frames import MethodFrame
from amqp_codec.v0_8 import Connection as Connection08
from amqp_codec.v0_9_1 import Connection, Queue
from amqp_codec.v0_10_draft import Connection as Connection010

PASSWORD = b"hunter2-Pa55"
TOKEN = b"eyJhbGciOi.jwt-token-value"

STREAM = (
    b"AMQP\x00\x00\x09\x01"
    + encode_frame(
        MethodFrame(
            0,
            Connection.StartOk(
                client_properties={}, mechanism="PLAIN", response=b"\x00guest\x00" + PASSWORD
            ),
        )
    )
    + encode_frame(MethodFrame(0, Connection.SecureOk(response=PASSWORD)))
    + encode_frame(MethodFrame(0, Connection.UpdateSecret(new_secret=TOKEN, reason="refresh")))
)


def test_every_credential_field_of_every_version_is_known() -> None:
    assert secret_fields(Connection.StartOk) == {"response"}
    assert secret_fields(Connection.SecureOk) == {"response"}
    assert secret_fields(Connection.UpdateSecret) == {"new-secret"}
    assert secret_fields(Connection08.StartOk) == {"response"}
    assert secret_fields(Connection010.StartOk) == {"response"}
    assert secret_fields(Queue.Declare) == frozenset()
    # A field a later spec adds, named like a secret, is one too.
    assert is_secret("connection.login", "password")
    assert not is_secret("basic.publish", "routing-key")
    assert ("connection.update-secret", "new-secret") in SECRET_FIELDS


def test_frames_table_fields_redact_update_secret() -> None:
    fields = method_fields(Connection.UpdateSecret(new_secret=TOKEN, reason="refresh"))
    assert fields == {"new-secret": REDACTED, "reason": "refresh"}
    assert method_fields(Connection.SecureOk(response=PASSWORD))["response"] == REDACTED


@pytest.mark.parametrize("json_output", [False, True])
def test_decode_redacts_by_default_and_shows_on_request(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, json_output: bool
) -> None:
    path = tmp_path / "client.bin"
    path.write_bytes(STREAM)
    flags = ["--json"] if json_output else []
    assert main(["decode", *flags, str(path)]) == 0
    out = capsys.readouterr().out
    for secret in (PASSWORD, TOKEN):
        assert secret.decode() not in out
        assert secret.hex() not in out
    assert out.count(REDACTED) == 3
    if json_output:
        methods = [json.loads(line) for line in out.splitlines()]
        fields = [m["fields"] for m in methods if m.get("type") == "method"]
        assert fields[2] == {"new-secret": REDACTED, "reason": "refresh"}

    assert main(["decode", *flags, "--show-secrets", str(path)]) == 0
    out = capsys.readouterr().out
    assert REDACTED not in out
    for secret in (PASSWORD, TOKEN):
        assert (secret.hex() if json_output else secret.decode()) in out
