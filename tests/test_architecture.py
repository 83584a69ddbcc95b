"""The package keeps its layers (docs/architecture.md): each imports only the layers below it.

Read from the source with ``ast`` (imports inside functions count too), so a shortcut
through a layer, or one analysis importing another, fails here rather than in review.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "workflow" / "wmdeval"

#: layer -> the layers its modules may import (itself included where siblings may).
ALLOWED = {
    "core": {"core"},
    "ingest": {"core", "ingest"},
    "cleaning": {"core", "cleaning"},
    "distances": {"core", "ingest", "distances"},
    "planning": {"core", "ingest", "distances", "planning"},
    "classification": {"core", "distances", "classification"},
    "reporting": {"core", "distances", "classification", "reporting"},
    "analyses": {"core", "distances", "classification", "reporting", "analyses"},
}
#: The one analyses module that combines the others (the per-variant job).
ANALYSES_COMBINER = "per_variant"


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def wmdeval_imports(path: Path) -> set[str]:
    """Dotted names of the wmdeval modules (or packages) ``path`` imports."""
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "wmdeval"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            if stem.split(".")[0] != "wmdeval":
                continue
            for alias in node.names:  # "from . import n2o" imports a module
                candidate = f"{stem}.{alias.name}"
                is_module = (PACKAGE.parent / candidate.replace(".", "/")).with_suffix(".py")
                is_package = PACKAGE.parent / candidate.replace(".", "/") / "__init__.py"
                found.add(candidate if is_module.exists() or is_package.exists() else stem)
    return found


def layer(name: str) -> str | None:
    parts = name.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in ALLOWED) else None


def test_every_module_belongs_to_a_layer():
    loose = [
        module_name(p)
        for p in modules()
        if layer(module_name(p)) is None and module_name(p) not in ("wmdeval", "wmdeval.cli")
    ]
    assert not loose, f"modules outside every layer: {loose}"


@pytest.mark.parametrize("path", modules(), ids=module_name)
def test_imports_go_down_the_layers(path):
    own = layer(module_name(path))
    if own is None:  # wmdeval/__init__.py and the CLI sit above every layer
        return
    wrong = sorted(i for i in wmdeval_imports(path) if layer(i) not in ALLOWED[own])
    assert not wrong, f"{module_name(path)} ({own}) imports {wrong}"


@pytest.mark.parametrize("path", sorted((PACKAGE / "analyses").glob("*.py")), ids=module_name)
def test_analyses_do_not_import_each_other(path):
    if path.stem in (ANALYSES_COMBINER, "__init__"):
        return
    siblings = sorted(
        i for i in wmdeval_imports(path) if layer(i) == "analyses" and i != module_name(path)
    )
    assert not siblings, (
        f"{module_name(path)} imports the analyses {siblings}: move what they "
        "share below the analyses layer"
    )


def test_the_import_reader_sees_relative_and_absolute_imports():
    """The reader itself: a test that cannot see imports would pass anything."""
    found = wmdeval_imports(PACKAGE / "analyses" / f"{ANALYSES_COMBINER}.py")
    assert "wmdeval.core.io" in found and "wmdeval.analyses.n2o" in found


def test_the_architecture_page_names_every_layer_and_only_modules_that_exist():
    page = (PACKAGE.parents[1] / "docs" / "architecture.md").read_text()
    for name in ALLOWED:
        assert f"| `{name}` |" in page, f"docs/architecture.md has no row for the layer {name}"
    layers = "|".join(ALLOWED)
    cited = set(re.findall(rf"`((?:{layers})/(?:[a-z_]+/)*[a-z_]+\.py)`", page))
    assert cited, "docs/architecture.md cites no module"
    for module in cited:
        assert (PACKAGE / module).exists(), f"docs/architecture.md cites {module}, not in wmdeval/"


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports (a package's ``__init__`` stands for it)."""
    names = {module_name(p) for p in modules()}
    return {
        module_name(p): {i for i in wmdeval_imports(p) if i in names and i != module_name(p)}
        for p in modules()
    }


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of two or more modules (Tarjan), each sorted: modules
    that import each other, directly or around a loop of any length."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(groups)


def test_no_modules_import_each_other_in_a_cycle():
    """Imports inside functions count: a deferred import hides a cycle from Python at load
    time, not from a reader who must know which module is the lower one."""
    cycles = import_cycles(import_graph())
    assert not cycles, "modules that import each other in a cycle: " + "; ".join(
        " <-> ".join(group) for group in cycles
    )


def test_the_cycle_finder_finds_cycles_of_any_length():
    """The finder itself, on made-up graphs: a finder that sees nothing would pass anything."""
    assert import_cycles({"a": {"b"}, "b": {"a"}}) == [["a", "b"]]
    ring = {"a": {"b"}, "b": {"c"}, "c": {"d"}, "d": {"e"}, "e": {"f"}, "f": {"a"}}
    assert import_cycles(ring) == [["a", "b", "c", "d", "e", "f"]]
    assert import_cycles({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def test_the_error_type_imports_nothing_of_the_package():
    assert not wmdeval_imports(PACKAGE / "core" / "errors.py")
