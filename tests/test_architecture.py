"""ARCHITECTURE.md and docs/invariants.md stay true: every test they name (`tests/…::name`)
exists, every module they name (`package/module.py`, `package/module.name`) exists and
defines that name, and the floors picture is the contracts' own."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from ops import floors

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "ARCHITECTURE.md"
INVARIANTS = ROOT / "docs" / "invariants.md"
TEST_REF = re.compile(r"`(tests/[\w/]+\.py)::(\w+(?:::\w+)?)`")
# `domain/ingest/pipeline.py`, `ledger/retention.derived_ttl_seconds`, `bench/RESULTS.md`: under
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
    assert len(TEST_REF.findall(INVARIANTS.read_text())) >= 30  # each invariant names its test
    for doc in (DOC, INVARIANTS):
        assert (doc.name, missing_tests(doc.read_text())) == (doc.name, [])


def test_every_module_named_exists() -> None:
    assert len(MODULE_REF.findall(DOC.read_text())) >= 20
    for doc in (DOC, INVARIANTS):
        assert (doc.name, missing_modules(doc.read_text())) == (doc.name, [])


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
    text = (
        "`foundation/core/cql.py` `foundation/core/gone.py` "
        "`foundation/core/timebuckets.cover` `foundation/core/timebuckets.gone`"
    )
    assert missing_modules(text) == [
        "foundation/core/gone.py",
        "foundation/core/timebuckets.gone",
    ]


def test_the_floors_picture_is_the_one_the_contracts_print():
    """ARCHITECTURE.md opens with the floors as pyproject.toml's contracts declare them."""
    assert floors.diagram() in DOC.read_text()


def test_the_floors_picture_follows_a_changed_contract(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        (ROOT / "pyproject.toml").read_text().replace('"tasks",', '"tasks",\n    "newfloor",', 1)
    )
    picture = floors.diagram(pyproject)
    assert "  tasks\n  newfloor\n  features/" in picture
    assert picture != floors.diagram()
