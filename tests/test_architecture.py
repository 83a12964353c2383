"""ARCHITECTURE.md stays true and short: every test it names (`tests/…::name`) exists, every
module it names (`package/module.py`, `package/module.name`) exists and defines that name."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "ARCHITECTURE.md"
TEST_REF = re.compile(r"`(tests/[\w/]+\.py)::(\w+(?:::\w+)?)`")
# `ingest/pipeline.py`, `ledger/retention.derived_ttl_seconds`, `bench/RESULTS.md`: under
# sessions_app/ or the root.
MODULE_REF = re.compile(r"`((?:[\w.]+/)+\w+)(?:\.py|\.(\w+))`")


def _defined(tree: ast.Module, dotted: str) -> bool:
    """Whether `Name` or `Class::method` is defined at the top of a module."""
    scope: list[ast.stmt] = tree.body
    for part in dotted.split("::"):
        found = [
            node
            for node in scope
            if (
                isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and node.name == part
            )
            or (
                isinstance(node, (ast.Assign, ast.AnnAssign))
                and part in {t.id for t in ast.walk(node) if isinstance(t, ast.Name)}
            )
        ]
        if not found:
            return False
        node = found[0]
        scope = node.body if isinstance(node, ast.ClassDef) else []
    return True


def missing_tests(text: str) -> list[str]:
    missing = []
    for path, name in TEST_REF.findall(text):
        file = ROOT / path
        if not file.exists() or not _defined(ast.parse(file.read_text()), name):
            missing.append(f"{path}::{name}")
    return missing


def missing_modules(text: str) -> list[str]:
    missing = []
    for path, name in MODULE_REF.findall(text):
        if path.startswith("tests/") or (ROOT / f"{path}.{name}").is_file():
            continue  # TEST_REF's, or a file such as `bench/RESULTS.md`
        candidates = [ROOT / f"{path}.py", ROOT / "sessions_app" / f"{path}.py"]
        file = next((c for c in candidates if c.exists()), None)
        if file is None or (name and not _defined(ast.parse(file.read_text()), name)):
            missing.append(f"{path}.{name}" if name else f"{path}.py")
    return missing


def test_every_test_named_exists() -> None:
    text = DOC.read_text()
    assert len(TEST_REF.findall(text)) >= 30  # the invariants name their tests this way
    assert missing_tests(text) == []


def test_every_module_named_exists() -> None:
    text = DOC.read_text()
    assert len(MODULE_REF.findall(text)) >= 20
    assert missing_modules(text) == []


def test_a_moved_or_renamed_name_is_reported() -> None:
    text = (
        "`tests/test_architecture.py::test_every_test_named_exists` "
        "`tests/test_architecture.py::test_gone` `tests/nowhere/test_x.py::test_y` "
        "`tests/views/test_site_access.py::test_the_walk_finds_every_page_and_api_route_of_a_site`"
    )
    assert missing_tests(text) == [
        "tests/test_architecture.py::test_gone",
        "tests/nowhere/test_x.py::test_y",
    ]
    text = "`core/cql.py` `core/gone.py` `core/timebuckets.cover` `core/timebuckets.gone`"
    assert missing_modules(text) == ["core/gone.py", "core/timebuckets.gone"]
