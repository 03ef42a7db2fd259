"""The package's build backend: setuptools, plus mypy when the compiled build is asked for.

``AMQP_CODEC_COMPILE=1 pip install .`` (or ``pip wheel .``) compiles the hot modules listed
in ``amqp_codec/_compiled.py`` with mypyc (see ``setup.py``); the compiler is then fetched as
a build requirement. Without the variable nothing changes: a pure-Python package that needs
no compiler, and mypy is not installed to build it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403  (the whole PEP 517/660 interface)

#: The build variable, and the compiler the compiled build needs: 1.16 is the first mypyc
#: that keeps classes marked ``native_class=False`` ordinary Python classes.
COMPILE_ENV = "AMQP_CODEC_COMPILE"
COMPILER_REQUIREMENT = "mypy>=1.16"


def compiling() -> bool:
    """Whether this build compiles (``AMQP_CODEC_COMPILE`` set to anything but ``0``)."""
    return os.environ.get(COMPILE_ENV, "0").strip() not in ("", "0")


def _with_compiler(hook: Callable[[Any], list[str]], config_settings: Any) -> list[str]:
    if not compiling():
        return hook(config_settings)
    # setuptools runs setup.py to find its requirements; the compiler is not there yet, so
    # that run must not compile.
    saved = os.environ.pop(COMPILE_ENV)
    try:
        return [*hook(config_settings), COMPILER_REQUIREMENT]
    finally:
        os.environ[COMPILE_ENV] = saved


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    return _with_compiler(_setuptools.get_requires_for_build_wheel, config_settings)


def get_requires_for_build_editable(config_settings: dict[str, Any] | None = None) -> list[str]:
    return _with_compiler(_setuptools.get_requires_for_build_editable, config_settings)
