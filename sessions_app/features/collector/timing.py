"""The Server-Timing header of /collect's answers (settings.COLLECT_SERVER_TIMING).

Each ingest step's milliseconds by its name (domain/ingest/pipeline.py), then `gc`, the
time this process spent in Python's garbage collector during the request, and `total`,
the view's time from its first line to the answer. `python -m bench.tail` reads the
header from gunicorn's access log to say where a slow request's time went.
"""

from __future__ import annotations

import gc
import time
from typing import Any


class GcClock:
    """Seconds this process has spent collecting garbage, from `gc.callbacks`."""

    def __init__(self) -> None:
        self.total = 0.0
        self._began = 0.0
        self._installed = False

    def install(self) -> None:
        if not self._installed:
            gc.callbacks.append(self._tick)
            self._installed = True

    def _tick(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._began = time.perf_counter()
        else:
            self.total += time.perf_counter() - self._began


GC = GcClock()


class RequestClock:
    """Started at a view's first line: the total and the collector's share of it."""

    def __init__(self) -> None:
        GC.install()
        self.began = time.perf_counter()
        self.gc_before = GC.total

    def header(self, timings: dict[str, float]) -> str:
        total = time.perf_counter() - self.began
        parts = [f"{name};dur={seconds * 1000:.2f}" for name, seconds in timings.items()]
        parts.append(f"gc;dur={(GC.total - self.gc_before) * 1000:.2f}")
        parts.append(f"total;dur={total * 1000:.2f}")
        return ", ".join(parts)
