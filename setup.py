"""Setuptools hook for the optional compiled build; everything else is in pyproject.toml.

With ``AMQP_CODEC_COMPILE=1`` the modules named in ``amqp_codec/_compiled.py`` are compiled
with mypyc into C extensions next to their sources (which stay in the package as the
fallback); without it the package is pure Python and needs no compiler.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

from setuptools import setup

ROOT = Path(__file__).resolve().parent


def _compiled_module_paths() -> list[str]:
    # Read the list from the package without importing the package (its __init__ imports
    # everything): _compiled.py imports only the standard library.
    spec = importlib.util.spec_from_file_location(
        "_amqp_codec_compiled", ROOT / "amqp_codec" / "_compiled.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return [name.replace(".", "/") + ".py" for name in module.COMPILED_MODULES]


def _ext_modules() -> list[Any]:
    sys.path.insert(0, str(ROOT / "build_backend"))
    from backend import compiling  # the same test as the build backend's

    if not compiling():
        return []
    from mypyc.build import mypycify

    os.chdir(ROOT)  # mypyc reads pyproject.toml's [tool.mypy] and takes paths from the root
    return mypycify(_compiled_module_paths(), opt_level="3", group_name="amqp_codec")


setup(ext_modules=_ext_modules())
