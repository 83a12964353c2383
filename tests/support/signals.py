"""Size figures a reviewer reads, printed at the end of every run: never a failure.

A long module or function, or a long document, is worth a second look: it may read
better split. It is not wrong in itself, and code is never packed or cut to move one.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.support.repo import ROOT

MODULE_LINES = 400
FUNCTION_LINES = 60
DOCS = {"README.md": 15_000, "ARCHITECTURE.md": 30_000}
CODE = ("sessions_app", "clickstream", "ops")


@dataclass(frozen=True)
class Signal:
    what: str  # "module", "function" or "doc"
    name: str
    size: int
    unit: str

    def __str__(self) -> str:
        return f"{self.what} {self.name}: {self.size} {self.unit}"


def _sources(root: Path) -> Iterator[Path]:
    for top in CODE:
        for path in sorted((root / top).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path


def _functions(tree: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def signals(root: Path = ROOT) -> list[Signal]:
    """Return every module, function and document over its review size, largest first."""
    found = []
    for path in _sources(root):
        text = path.read_text()
        name = str(path.relative_to(root))
        lines = len(text.splitlines())
        if lines > MODULE_LINES:
            found.append(Signal("module", name, lines, "lines"))
        for function in _functions(ast.parse(text)):
            length = (function.end_lineno or function.lineno) - function.lineno + 1
            if length > FUNCTION_LINES:
                found.append(Signal("function", f"{name}:{function.name}", length, "lines"))
    for doc, limit in DOCS.items():
        path = root / doc
        if path.exists() and (size := len(path.read_bytes())) > limit:
            found.append(Signal("doc", doc, size, "bytes"))
    return sorted(found, key=lambda s: (s.what, -s.size))


def report(root: Path = ROOT) -> list[str]:
    """Return the lines the end of a run prints: a heading and one line per signal."""
    found = signals(root)
    if not found:
        return []
    heading = (
        f"review signals (modules over {MODULE_LINES} lines, functions over "
        f"{FUNCTION_LINES}, docs over their size): worth a look, not failures"
    )
    return [heading, *(f"  {signal}" for signal in found)]
