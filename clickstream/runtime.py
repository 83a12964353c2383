"""Process-wide runtime tuning shared by the web app, the Celery workers and the applier."""

from __future__ import annotations

import gc


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
