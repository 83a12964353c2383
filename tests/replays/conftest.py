"""Replay fixtures: the collector's `live_now` (the real present, ms precision)."""

from tests.ingest.conftest import live_now  # noqa: F401 (a fixture)
