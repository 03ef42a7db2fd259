"""Shared pytest configuration for the amqp-codec test suite.

* Makes ``tests/`` importable so test modules can ``import strategies``.
* Registers hypothesis profiles. ``default`` keeps the whole suite fast on a small machine;
  ``thorough`` (``HYPOTHESIS_PROFILE=thorough``) runs many more examples. No example database
  is written into the repository.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from hypothesis import HealthCheck, settings

_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

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
