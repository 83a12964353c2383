"""Where the repository is on disk, for tests that read its files or start its commands."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
