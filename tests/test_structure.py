"""The package's shape: no import cycles, the write path apart from reads;
the tests' helpers in tests/support/, never borrowed from another test module or a conftest."""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "sessions_app"
TESTS = ROOT / "tests"
# The analyst read modules; nothing the collector runs may import them.
READ_MODULES = (
    "sessions_app.domain.sessions",
    "sessions_app.domain.aggregates.report",
    "sessions_app.domain.aggregates.rolling",
    "sessions_app.domain.partitions.partition_report",
    "sessions_app.features",
)
WRITE_PATH = (
    "sessions_app.domain.ingest",
    "sessions_app.foundation.core",
    "sessions_app.foundation.tables",
)


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        if "migrations" in path.parts:
            continue
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


def _import_targets(tree: ast.AST, package: str) -> Iterator[str]:
    """Yield every name an import of the tree targets (a module, or a module's member),
    relative imports resolved against `package`, at any depth of its code."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            yield base
            yield from (f"{base}.{a.name}" for a in node.names)


def _imports(path: Path, name: str, known: set[str]) -> Iterator[str]:
    """Yield the sessions_app modules a module imports, at any depth of its code."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for target in _import_targets(ast.parse(path.read_text()), package):
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != name:
            yield target


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: set(_imports(path, name, known)) for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Return the strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles_inside_the_package():
    """A package __init__ re-exporting its own modules is not a cycle of code."""
    graph = _graph()
    for name in graph:
        graph[name] = {t for t in graph[name] if not name.startswith(t + ".")}
    assert _cycles(graph) == []


def test_the_cycle_check_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


FLOORS = ("foundation", "domain", "features")


def _package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Collapse modules to their package: the one under a floor (sessions_app.domain.ingest.rows
    -> domain.ingest), or a package or module at the top (sessions_app.tasks -> tasks)."""

    def package(name: str) -> str:
        parts = name.split(".")
        if len(parts) > 2 and parts[1] in FLOORS:
            return ".".join(parts[1:3])
        return parts[1] if len(parts) > 1 else name

    packages: dict[str, set[str]] = {}
    for name, targets in graph.items():
        packages.setdefault(package(name), set()).update(
            package(t) for t in targets if package(t) != package(name)
        )
    return packages


def test_no_package_knots():
    """No two packages import each other, however many modules the loop runs through."""
    assert _cycles(_package_graph(_graph())) == []


def test_the_knot_check_finds_a_package_knot():
    modules = {
        "sessions_app.low.a": {"sessions_app.high.b"},
        "sessions_app.high.c": {"sessions_app.low.d"},
        "sessions_app.low.d": set(),
        "sessions_app.high.b": set(),
    }
    assert _cycles(modules) == []  # no module cycle ...
    assert _cycles(_package_graph(modules)) == [["high", "low"]]  # ... but a package knot


def _contracts() -> dict[str, list[set[str]]]:
    """Each layers contract's container and its layers, as sets of names."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    return {
        container: [set(re.split(r"\s*[|:]\s*", layer)) for layer in contract["layers"]]
        for contract in config["contracts"]
        if contract["type"] == "layers"
        for container in contract["containers"]
    }


def _children(package: Path) -> set[str]:
    return {
        path.stem if path.is_file() else path.name
        for path in package.iterdir()
        if (path.suffix == ".py" or (path / "__init__.py").exists())
        and path.name not in {"__init__.py", "migrations"}
    }


def test_every_package_has_a_floor_in_the_layers_contract():
    """A new package or top-level module is placed on a floor, and a package on a floor in
    that floor's own layers, so lint-imports checks it."""
    contracts = _contracts()
    assert set(contracts) == {"sessions_app", *(f"sessions_app.{f}" for f in FLOORS)}
    for container, layers in contracts.items():
        placed = set().union(*layers)
        present = _children(ROOT.joinpath(*container.split(".")))
        assert (container, present - placed) == (container, set())
        assert (container, placed - present) == (container, set())


def test_the_write_path_imports_no_analyst_read_module():
    graph = _graph()
    seen: set[str] = set()
    todo = [name for name in graph if name.startswith(WRITE_PATH)]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(graph.get(name, ()))
    assert sorted(m for m in seen if m.startswith(READ_MODULES)) == []


def test_the_core_imports_nothing_of_the_domains():
    graph = _graph()
    outside = {
        (name, target)
        for name, targets in graph.items()
        if name.startswith("sessions_app.foundation.core")
        for target in targets
        if not target.startswith("sessions_app.foundation.core")
    }
    assert outside == set()


def _borrowed(source: str, name: str) -> list[str]:
    """The test modules (test_*) and conftest files a module of the tests imports, at any
    depth of its code: helpers shared between tests belong in tests/support/."""
    found = {
        target
        for target in _import_targets(ast.parse(source), name.rpartition(".")[0])
        if target.split(".")[0] == "tests"
        and any(p == "conftest" or p.startswith("test_") for p in target.split(".")[1:])
    }
    return sorted(found)


def test_no_test_module_or_conftest_imports_another_test_module_or_a_conftest():
    borrowed = {}
    for path in TESTS.rglob("*.py"):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        found = _borrowed(path.read_text(), name)
        if found:
            borrowed[name] = found
    assert borrowed == {}


def test_the_borrow_check_finds_a_borrowed_helper():
    source = (
        "from tests.api.test_api import auth\n"
        "from tests.ingest.conftest import event\n"
        "from tests.support.events import post\n"
        "from tests.paths import test_reads\n"
        "from . import conftest\n"
        "def f():\n    import tests.e2e.conftest\n"
    )
    assert _borrowed(source, "tests.goals.test_counts") == [
        "tests.api.test_api",
        "tests.api.test_api.auth",
        "tests.e2e.conftest",
        "tests.goals.conftest",
        "tests.ingest.conftest",
        "tests.ingest.conftest.event",
        "tests.paths.test_reads",
    ]
