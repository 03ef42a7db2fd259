"""Sphinx configuration: the amqp-codec documentation site.

Build it as CI does (warnings are errors)::

    pip install -e '.[docs]'
    sphinx-build -W --keep-going -b html docs docs/_build/html
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # autodoc imports the checkout's package

project = "amqp-codec"
author = "amqp-codec contributors"
copyright = "amqp-codec contributors"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build"]
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3

# The API reference: classes as they are written, members in source order, with their types
# in the signature (the generated classes' fields are their constructor's keywords).
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"members": True, "show-inheritance": True}
# The Spark job's modules import pyspark and pyarrow only where they run; the reference
# needs neither.
autodoc_mock_imports = ["pyspark", "pyarrow"]
# Builtin names in annotations (``type[Method]``) would otherwise be matched against the
# generated classes' fields of the same name (``Exchange.Declare.type``) and reported as
# ambiguous: they are the builtins, never those fields.
suppress_warnings = ["ref.python"]
napoleon_google_docstring = True
napoleon_numpy_docstring = False

html_theme = "furo"
html_title = "amqp-codec"


# The spec's field checks quote regular expressions (``matches ^[a-zA-Z0-9-_.:]*$.``), which
# reStructuredText would read as link targets: shown as literals instead.
_SPEC_PATTERN = re.compile(r"(matches )(\S+?)([.;]?)(?=\s|$)")


def _spec_patterns_as_literals(
    app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]
) -> None:
    if name.startswith("amqp_codec.v0_"):
        lines[:] = [_SPEC_PATTERN.sub(r"\1``\2``\3", line) for line in lines]


def setup(app: Any) -> None:
    app.connect("autodoc-process-docstring", _spec_patterns_as_literals)
