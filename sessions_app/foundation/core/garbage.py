"""Python's cycle collector: tuned once per process, held off while a job builds a large,
short-lived, acyclic heap."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_paused = 0  # blocks running now, in any thread
_was_enabled = True  # whether the first of them found the collector on


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run the block without cyclic garbage collections, then allow them again.

    A seal holds about a million containers at once (its tallies' decoded JSON, path
    grams, breakdown groups), all alive until it ends: each collection the allocations
    set off walks them and frees nothing (5-10 % of a 200,000-event seal). Reference
    counting still frees everything the block drops; a cycle made meanwhile waits for
    the next collection. Blocks nest and overlap across threads: the last one to end
    leaves the collector as the first one found it.
    """
    global _paused, _was_enabled
    with _lock:
        if _paused == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _paused += 1
    try:
        yield
    finally:
        with _lock:
            _paused -= 1
            if _paused == 0 and _was_enabled:
                gc.enable()


def tune_gc(threshold: int) -> None:
    """Take what is loaded so far out of the cycle collector's reach; raise its first threshold.

    Startup objects (Django, the driver, settings) live as long as the process:
    gc.freeze moves them to a generation no collection walks. The first
    generation then runs after `threshold` net new container objects instead of
    700, so a request's or a seal's short-lived rows are freed by reference
    counting before a collection promotes them and sets off full-heap ones.
    """
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(threshold, older, oldest)
