"""The package's import structure, read from the source: one way down, no circles.

The codec core (everything in ``amqp_codec`` but the tools built on it) uses the standard
library only and never imports a tool; tools, benchmarks and generated code stand on the
core; no two modules import each other, directly or around a circle. The old import paths of
moved modules still work for one release, with a DeprecationWarning.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "amqp_codec"

#: Built on the core and never imported by it: the decode command, the Spark analysis,
#: the capture reader, the command line, the hypothesis strategies and the aliases of moved
#: modules.
TOOLS = (
    "amqp_codec.analyze",
    "amqp_codec.capture",
    "amqp_codec.inspect",
    "amqp_codec.testing",
    "amqp_codec.cli",
    "amqp_codec.__main__",
    "amqp_codec.dissect",
    "amqp_codec.report",
)

#: The generated packages: the runtime hands them nothing to import back.
GENERATED = ("amqp_codec.v0_9_1", "amqp_codec.v0_8", "amqp_codec.v0_10_draft")
#: The package's front door re-exports generated packages on purpose
#: (``amqp_codec.v0_9_1`` works after ``import amqp_codec``).
FRONT_DOOR = "amqp_codec"


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def source_files(top: str, root: Path = ROOT) -> list[Path]:
    return sorted((root / top).rglob("*.py"))


def imports_of(path: Path, known: set[str], root: Path = ROOT) -> set[str]:
    """The modules that ``path`` imports at run time, anywhere in it (functions too), as
    dotted names.

    ``from package import name`` counts as importing ``package.name`` when that is a module
    in ``known``, else ``package``.
    """
    name = module_name(path, root)
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    # Imports under ``if TYPE_CHECKING:`` never run: they are neither dependencies nor circles.
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING")
        for stmt in node.body
        for inner in ast.walk(stmt)
    }
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = name.split(".")
                base_parts = parts if is_package else parts[:-1]
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join([*base_parts, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in known else base)
    return found


def import_graph(tops: Iterable[str], root: Path = ROOT) -> dict[str, set[str]]:
    files = [path for top in tops for path in source_files(top, root)]
    known = {module_name(path, root) for path in files}
    return {module_name(path, root): imports_of(path, known, root) & known for path in files}


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (or importing itself)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(start: str) -> None:
        # Tarjan's algorithm, iterative: a deep chain of imports must not hit the recursion limit.
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph[node]:
                    found.append(frozenset(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _within(module: str, packages: Iterable[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def is_tool(module: str) -> bool:
    return _within(module, TOOLS)


def is_generated(module: str) -> bool:
    return _within(module, GENERATED)


def core_modules(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        m for m in graph if m.startswith(PACKAGE) and not is_tool(m) and not is_generated(m)
    )


# -- the checks, on the package as it is ---------------------------------------------------------


def test_no_import_circle() -> None:
    found = circles(import_graph([PACKAGE, "benchmarks", "tools", "codegen", "examples"]))
    assert not found, f"import circles: {[sorted(c) for c in found]}"


def test_the_core_never_imports_a_tool() -> None:
    graph = import_graph([PACKAGE])
    wrong = {m: sorted(t for t in graph[m] if is_tool(t)) for m in core_modules(graph)}
    assert not {m: t for m, t in wrong.items() if t}


def test_the_runtime_never_imports_generated_code() -> None:
    """Generated code stands on the runtime; the 0-10 draft's package hands the wire format its
    registries (``register_structs``, ``register_table_types``) instead."""
    graph = import_graph([PACKAGE])
    found = {
        (m, t) for m in core_modules(graph) if m != FRONT_DOOR for t in graph[m] if is_generated(t)
    }
    assert not found, f"runtime modules importing generated code: {sorted(found)}"


def _passes_in_a_fresh_interpreter(code: str) -> None:
    """Run ``code`` in a new Python process (nothing imported yet); it must exit 0."""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr


def test_the_draft_wire_format_works_before_its_generated_package_is_imported() -> None:
    """Used first, the wire format has the generated package hand its registries over."""
    code = (
        "import sys\n"
        "from amqp_codec.wire010.structs import decode_long_struct\n"
        "from amqp_codec.wire010.table import type_info\n"
        "assert 'amqp_codec.v0_10_draft' not in sys.modules\n"
        "assert type_info(0xA8).datatype == 'field-table', type_info(0xA8)\n"
        "buf = bytes([0, 0, 0, 4, 0, 1, 0, 0])\n"
        "value, end = decode_long_struct(buf, 0, len(buf), 8)\n"
        "assert type(value).__name__ == 'MessageProperties' and end == len(buf), value\n"
    )
    _passes_in_a_fresh_interpreter(code)


def test_the_core_uses_the_standard_library_only() -> None:
    files = source_files(PACKAGE)
    known = {module_name(path) for path in files}
    outside: dict[str, list[str]] = {}
    for path in files:
        name = module_name(path)
        if is_tool(name):
            continue
        top_levels = {m.split(".")[0] for m in imports_of(path, known)}
        extra = sorted(t for t in top_levels if t not in sys.stdlib_module_names | {PACKAGE, ""})
        if extra:
            outside[name] = extra
    assert not outside


def test_the_package_and_benchmarks_never_import_the_repository_scripts() -> None:
    graph = import_graph([PACKAGE, "benchmarks", "tools"])
    wrong = {
        m: sorted(t for t in targets if t.split(".")[0] in ("tools", "tests"))
        for m, targets in graph.items()
        if not m.startswith("tools")
    }
    assert not {m: t for m, t in wrong.items() if t}


# -- the checks catch what they are for: the same functions on a package made to break them -----


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_a_circle_through_a_package_front_door_is_found(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/gen/__init__.py": "",
            "pkg/gen/structs.py": "from ..wire import PackedStruct\n",
            "pkg/wire/__init__.py": "from .structs import PackedStruct\n",
            "pkg/wire/structs.py": (
                "def registry():\n    from pkg.gen.structs import HEADER_STRUCTS\n"
            ),
            "pkg/plain.py": "from . import wire\n",
        },
    )
    found = circles(import_graph(["pkg"], tmp_path))
    assert found == [frozenset({"pkg.gen.structs", "pkg.wire", "pkg.wire.structs"})]


def test_a_core_module_importing_a_tool_is_found(tmp_path: Path) -> None:
    _write(tmp_path, {"amqp_codec/decoder.py": "from .inspect.dissector import Problem\n"})
    _write(tmp_path, {"amqp_codec/inspect/dissector.py": "from ..decoder import X\n"})
    graph = import_graph([PACKAGE], tmp_path)
    assert graph["amqp_codec.decoder"] == {"amqp_codec.inspect.dissector"}
    assert core_modules(graph) == ["amqp_codec.decoder"]  # the tool is not core
    assert is_tool("amqp_codec.inspect.dissector") and not is_tool("amqp_codec.inspector")


# -- the old import paths ------------------------------------------------------------------------

MOVED = [
    ("amqp_codec.dissect", "StreamDissector", "amqp_codec.inspect"),
    ("amqp_codec.dissect", "ProblemEvent", "amqp_codec.inspect.dissector"),
    ("amqp_codec.report", "HumanReporter", "amqp_codec.inspect.text"),
    ("amqp_codec.report", "JsonReporter", "amqp_codec.inspect.jsonlines"),
]


@pytest.mark.parametrize(("old", "name", "new"), MOVED)
def test_an_old_import_path_works_and_warns(old: str, name: str, new: str) -> None:
    sys.modules.pop(old, None)
    namespace: dict[str, object] = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(compile(f"from {old} import {name}", "users_code.py", "exec"), namespace)
    deprecations = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    assert len(deprecations) == 1
    assert old in str(deprecations[0].message) and "amqp_codec.inspect" in str(
        deprecations[0].message
    )
    assert deprecations[0].filename == "users_code.py"  # the warning points at the import
    assert namespace[name] is getattr(importlib.import_module(new), name)


def test_the_new_paths_do_not_warn() -> None:
    code = (
        "import amqp_codec, amqp_codec.inspect.text, amqp_codec.inspect.jsonlines, amqp_codec.cli"
    )
    result = subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning", "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr


# -- the pictures of the layout ------------------------------------------------------------------

#: Aliases of moved modules: named where they are described, not in the layout.
DEPRECATED = ("dissect", "report")


def test_the_readme_and_the_architecture_page_name_every_package() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    layout = readme.split("## Layout", 1)[1]
    architecture = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    packages = sorted(
        p.parent.name
        for p in (ROOT / PACKAGE).glob("*/__init__.py")
        if p.parent.name not in DEPRECATED
    )
    assert "inspect" in packages and "wire010" in packages
    for name in packages:
        assert f"{name}/" in layout, f"README's layout table lacks {name}/"
        assert f"{name}/" in architecture, f"docs/architecture.md lacks {name}/"
    tools = [p.name for p in (ROOT / PACKAGE / "inspect").glob("*.py") if p.name != "__init__.py"]
    for module in tools:
        assert f"`{module}`" in architecture, f"docs/architecture.md lacks inspect/{module}"


def test_versions_other_than_the_default_are_imported_when_first_named() -> None:
    """``import amqp_codec`` (and the command line) leave 0-8 and the 0-10 draft unimported:
    each costs a tenth of a second in every process; ``amqp_codec.v0_8`` still works, and so
    does a stream that turns out to speak 0-8."""
    code = (
        "import sys\n"
        "import amqp_codec, amqp_codec.cli\n"
        "lazy = ('amqp_codec.v0_8', 'amqp_codec.v0_10_draft')\n"
        "assert not [m for m in lazy if m in sys.modules], sorted(sys.modules)\n"
        "decoder = amqp_codec.FrameDecoder()\n"
        "decoder.receive_data(b'AMQP\\x01\\x01\\x08\\x00')\n"
        "decoder.next_frame()\n"
        "assert decoder.spec.name == '0-8', decoder.spec\n"
        "assert amqp_codec.v0_8.SPEC is decoder.spec\n"
        "assert amqp_codec.v0_10_draft.SPEC.name == '99-0'\n"
        "assert 'v0_10_draft' in amqp_codec.__all__ and 'v0_8' in amqp_codec.__all__\n"
        "try:\n"
        "    amqp_codec.v0_7\n"
        "except AttributeError as e:\n"
        "    assert 'v0_7' in str(e)\n"
        "else:\n"
        "    raise AssertionError('amqp_codec.v0_7 exists')\n"
    )
    _passes_in_a_fresh_interpreter(code)
