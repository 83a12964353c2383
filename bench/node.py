"""The local Cassandra node's background work, waited out before a figure is taken."""

from __future__ import annotations

import os
import time

BACKGROUND_POOLS = ("CompactionExecutor", "MemtableFlushWriter", "MemtablePostFlush")


def settle(timeout: float | None = None) -> float:
    """Wait until the node runs no compaction or flush (3 quiet polls); return seconds.

    Gives up after `timeout` seconds (BENCH_SETTLE_TIMEOUT, default 180); polls at least
    once (a timeout of a second or less: once, without waiting).

    A benchmark's set-up writes in seconds what production writes over an hour; the
    flushes and compactions that burst leaves behind are not part of what is measured.
    """
    from sessions_app.foundation.core.cql import cassandra_session

    if timeout is None:
        timeout = float(os.environ.get("BENCH_SETTLE_TIMEOUT", "180"))
    started = time.monotonic()
    quiet = 0
    while True:
        tasks = list(cassandra_session().execute("SELECT kind FROM system_views.sstable_tasks"))
        busy = sum(
            row["active_tasks"] + row["pending_tasks"]
            for row in cassandra_session().execute(
                "SELECT name, active_tasks, pending_tasks FROM system_views.thread_pools"
            )
            if row["name"] in BACKGROUND_POOLS
        )
        quiet = quiet + 1 if not tasks and not busy else 0
        # The second between polls only when another poll follows within the timeout.
        if quiet == 3 or time.monotonic() - started + 1.0 > timeout:
            return time.monotonic() - started
        time.sleep(1.0)
