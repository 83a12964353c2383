"""The review signals: long modules, functions and docs are named at the end of a run."""

from __future__ import annotations

from pathlib import Path

from tests.support import signals


def _write(root: Path, name: str, text: str) -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_a_long_module_function_and_doc_are_named_and_short_ones_are_not(tmp_path):
    long_body = "".join(f"    x{i} = {i}\n" for i in range(signals.FUNCTION_LINES))
    _write(tmp_path, "sessions_app/long.py", "def long():\n" + long_body)
    _write(tmp_path, "sessions_app/short.py", "def short():\n    return 1\n")
    _write(tmp_path, "ops/big.py", "x = 1\n" * (signals.MODULE_LINES + 1))
    _write(tmp_path, "sessions_app/migrations/0001.py", "x = 1\n" * 1000)
    _write(tmp_path, "README.md", "a" * (signals.DOCS["README.md"] + 1))
    _write(tmp_path, "ARCHITECTURE.md", "short")

    found = {(s.what, s.name): s.size for s in signals.signals(tmp_path)}

    assert found == {
        ("function", "sessions_app/long.py:long"): signals.FUNCTION_LINES + 1,
        ("module", "ops/big.py"): signals.MODULE_LINES + 1,
        ("doc", "README.md"): signals.DOCS["README.md"] + 1,
    }
    lines = signals.report(tmp_path)
    assert "not failures" in lines[0] and len(lines) == 4
    assert "  module ops/big.py: 401 lines" in lines


def test_nothing_over_its_size_prints_nothing(tmp_path):
    _write(tmp_path, "sessions_app/short.py", "def short():\n    return 1\n")
    assert signals.report(tmp_path) == []
