"""Render the model with jinja2 and format the result with black.

Output is a dict of relative path → file text; it depends only on the inputs, so repeated runs
give identical bytes.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import black
import jinja2

from .model import Spec, sentence

TEMPLATES = Path(__file__).parent / "templates"

# (template, output file inside the package)
FILES = [
    ("init.py.j2", "__init__.py"),
    ("constants.py.j2", "constants.py"),
    ("methods.py.j2", "methods.py"),
    ("properties.py.j2", "properties.py"),
    ("decoders.py.j2", "decoders.py"),
    ("structs.py.j2", "structs.py"),
]

LINE_LENGTH = 100


def docstring(text: str, indent: int = 0, width: int = LINE_LENGTH - 4) -> str:
    """``text`` as the body of a triple-quoted docstring: escaped, wrapped and indented."""
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"').strip()
    pad = " " * indent
    paragraphs = []
    for para in text.split("\n\n"):
        lines = [line.strip() for line in para.splitlines()]
        if any(line.startswith(("-", "*", "|")) for line in lines) or "  " in para.strip():
            # Lists and preformatted blocks keep their lines.
            paragraphs.append("\n".join(pad + line for line in lines))
        else:
            wrapped = textwrap.fill(" ".join(lines), width=max(width - indent, 40))
            paragraphs.append(textwrap.indent(wrapped, pad))
    body = "\n\n".join(paragraphs).lstrip()
    if body.endswith('"'):
        body += " "
    return body


def struct_name(fmt: str, kind: str) -> str:
    return f"_{kind}_{fmt}"


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters["docstring"] = docstring
    env.filters["sentence"] = sentence
    env.filters["hex8"] = lambda n: f"0x{n:08X}"
    env.filters["hex4"] = lambda n: f"0x{n:04X}"
    env.globals["unpack"] = lambda fmt: struct_name(fmt, "UNPACK")
    env.globals["pack"] = lambda fmt: struct_name(fmt, "PACK")
    return env


def render(spec: Spec) -> dict[str, str]:
    """Every file of the generated package, formatted."""
    env = _environment()
    mode = black.Mode(line_length=LINE_LENGTH, target_versions={black.mode.TargetVersion.PY311})
    out = {}
    for template, name in FILES:
        if not spec.renders(name):
            continue
        source = env.get_template(template).render(spec=spec)
        try:
            out[name] = black.format_str(source, mode=mode)
        except black.parsing.InvalidInput as exc:  # a template bug: show the line black choked on
            raise RuntimeError(f"{template} rendered invalid Python: {exc}") from None
    return out
