"""Shared pytest configuration for the amqp-codec test suite.

* Makes ``tests/`` importable so test modules can ``import strategies``, and the repository
  root, for the example client in ``examples/``.
* The ``broker`` fixture for tests marked ``broker``.
* Registers hypothesis profiles. ``default`` keeps the whole suite fast on a small machine;
  ``thorough`` (``HYPOTHESIS_PROFILE=thorough``) runs many more examples. No example database
  is written into the repository.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# tests/ for `import strategies`; the repository root for the example client in examples/.
for _path in (Path(__file__).resolve().parent, Path(__file__).resolve().parent.parent):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

settings.register_profile(
    "default",
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
settings.register_profile(
    "thorough",
    max_examples=2000,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


# -- the RabbitMQ broker for tests marked `broker` ------------------------------------------

BROKER_ADDRESS = ("127.0.0.1", 5672)


@pytest.fixture(scope="session")
def broker() -> tuple[str, int]:
    """The broker's address; skips (or fails, with AMQP_CODEC_REQUIRE_BROKER=1) if unreachable."""
    try:
        socket.create_connection(BROKER_ADDRESS, timeout=3).close()
    except OSError as exc:
        reason = f"no AMQP broker on {BROKER_ADDRESS[0]}:{BROKER_ADDRESS[1]} ({exc})"
        if os.environ.get("AMQP_CODEC_REQUIRE_BROKER") == "1":
            pytest.fail(f"{reason}, but AMQP_CODEC_REQUIRE_BROKER=1")
        pytest.skip(reason)
    return BROKER_ADDRESS
