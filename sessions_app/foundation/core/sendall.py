"""Send a plan's statements at once and wait for all of them (apply and log writes)."""

from __future__ import annotations

import threading
from typing import Any

from django.conf import settings

from sessions_app.foundation.core.cql import bind, cassandra_session


def execute_all(work: list[tuple[Any, Any]]) -> None:
    """Send every statement at once, wait for all, raise the first failure.

    A batch is a handful of partitions, so plain execute_async beats
    execute_concurrent's windowing machinery here; the responses count down a
    latch on the driver's thread, so this thread wakes once, not once per future.
    """
    current = cassandra_session()
    futures = [
        current.execute_async(statement if params is None else bind(statement, params))
        for statement, params in work
    ]
    wait_all(futures)


def wait_all(futures: list[Any]) -> None:
    if not futures:  # nothing will count the latch down: waiting would only time out
        return
    remaining = [len(futures)]
    lock, done = threading.Lock(), threading.Event()

    def arrived(_: Any) -> None:
        with lock:
            remaining[0] -= 1
            if remaining[0] == 0:
                done.set()

    for future in futures:
        future.add_callbacks(arrived, arrived)
    done.wait(timeout=settings.CASSANDRA_REQUEST_TIMEOUT * 2 + 1)
    for future in futures:
        future.result()  # raises the first failure (or a timeout if still pending)
