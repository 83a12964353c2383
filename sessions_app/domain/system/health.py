"""Health: the pipeline heartbeat and the checks of Cassandra, Redis, Celery and the applier.

Two reports. `liveness_report` is what load balancers poll: Cassandra and Redis through
the connections this process already holds, no broker round trip, no detail. The deep
`health_report` (for installation admins) adds the Celery workers' ping, the versions,
the applier queue, the transaction-log entries not applied yet and each failure's
reason; `health_report_cached` runs it at most once
a second per process, however often it is asked.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from celery import current_app
from django.conf import settings
from django.db import connections
from django.utils import timezone

from sessions_app.domain.ingest.applier import backlog
from sessions_app.domain.ingest.redo import redo_backlog
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import (
    ALIAS,
    cassandra_session,
    keyspace,
    prepare,
)
from sessions_app.foundation.core.redis_client import redis_client
from sessions_app.foundation.tables import pipeline_heartbeats, user_sessions


@dataclass(frozen=True)
class Check:
    """The outcome of one health probe."""

    ok: bool
    detail: str


def health_cassandra() -> Check:
    """Check that Cassandra answers and the keyspace exists."""
    try:
        name = keyspace()
        row = (
            cassandra_session().execute("SELECT release_version FROM system.local", timeout=3).one()
        )
        cluster = connections[ALIAS].connection.cluster
        if name not in cluster.metadata.keyspaces:
            cluster.refresh_schema_metadata(max_schema_agreement_wait=2)
        if name not in cluster.metadata.keyspaces:
            return Check(False, f"keyspace {name!r} does not exist (run manage.py sync_cassandra)")
        return Check(True, f"Cassandra {row['release_version']}, keyspace {name}")
    except Exception as exc:  # noqa: BLE001 - report any failure, never raise from health
        return Check(False, f"{type(exc).__name__}: {exc}")


def health_redis() -> Check:
    """Check that Redis answers PING, through this process's pool (no new connection)."""
    try:
        redis_client().ping()
        return Check(True, "PONG")
    except Exception as exc:  # noqa: BLE001
        return Check(False, f"{type(exc).__name__}: {exc}")


def health_celery() -> Check:
    """Check that at least one Celery worker answers a broadcast ping."""
    # The project's Celery app (clickstream/celery.py), current once Django has loaded it.
    app = current_app
    try:
        with app.connection_for_write(settings.CELERY_BROKER_URL) as connection:
            # One attempt: kombu's default retries a closed broker for seconds, and a
            # probe should say at once that it is down.
            connection.ensure_connection(max_retries=0)
            replies = app.control.ping(timeout=settings.HEALTH_PING_SECONDS, connection=connection)
    except Exception as exc:  # noqa: BLE001
        return Check(False, f"broker unreachable: {type(exc).__name__}: {exc}")
    if not replies:
        return Check(
            False, f"no Celery worker answered ping within {settings.HEALTH_PING_SECONDS}s"
        )
    workers = sorted(name for reply in replies for name in reply)
    return Check(True, f"{len(workers)} worker(s): {', '.join(workers)}")


def health_redo(*, now: datetime) -> tuple[Check, dict[str, Any]]:
    """Check that no acknowledged batch waits unapplied longer than TXLOG_REDO_WINDOW."""
    try:
        state = redo_backlog(now=now)
    except Exception as exc:  # noqa: BLE001
        return Check(False, f"{type(exc).__name__}: {exc}"), {}
    oldest, behind = state["oldest_unapplied_seconds"], state["behind_seconds"]
    detail = (
        f"{state['unapplied']} log entries unapplied (oldest {oldest} s);"
        f" log checked up to {behind} s ago"
    )
    if not state["ok"]:
        detail += f": longer than the redo window ({state['window_seconds']} s)"
    return Check(bool(state.pop("ok")), detail), state


def heartbeat_list() -> list[dict[str, Any]]:
    """Return the last pipeline heartbeat written by each worker."""
    rows = cassandra_session().execute(prepare(pipeline_heartbeats.SELECT_ALL))
    return [
        {
            "worker": row["worker"],
            "beat_at": timebuckets.from_driver(row["beat_at"]),
            "written_at": timebuckets.from_driver(row["written_at"]),
        }
        for row in rows
    ]


def liveness_report() -> dict[str, Any]:
    """Whether this process reaches Cassandra and Redis: ok flags only (anonymous callers).

    No broker round trip and no new connection pool: the Cassandra session and the Redis
    pool are the ones requests use.
    """
    checks = {"cassandra": health_cassandra(), "redis": health_redis()}
    report: dict[str, Any] = {
        "ok": all(check.ok for check in checks.values()),
        "checks": {name: {"ok": c.ok} for name, c in checks.items()},
    }
    if not report["ok"]:
        report["failed"] = [name for name, c in checks.items() if not c.ok]
    return report


def health_report(*, now: datetime | None = None) -> dict[str, Any]:
    """Return every probe's outcome with its detail, the applier queue, the redo's
    backlog, and what failed."""
    redo, unapplied = health_redo(now=now or timezone.now())
    checks = {
        "cassandra": health_cassandra(),
        "redis": health_redis(),
        "celery": health_celery(),
        "redo": redo,
    }
    report: dict[str, Any] = {
        "ok": all(check.ok for check in checks.values()),
        "checks": {name: {"ok": c.ok, "detail": c.detail} for name, c in checks.items()},
        "applier": _applier_state(),
        "redo": unapplied,
    }
    if not report["ok"]:
        failed = [name for name, c in checks.items() if not c.ok]
        report["failed"] = failed
        report["reason"] = "; ".join(f"{name}: {checks[name].detail}" for name in failed)
    return report


DEEP_CACHE_SECONDS = 1.0
_deep_lock = threading.Lock()
_deep_last: tuple[float, dict[str, Any]] | None = None


def health_report_cached() -> dict[str, Any]:
    """Return health_report(), computed at most once every DEEP_CACHE_SECONDS in this
    process: a request flood pings the workers through the broker once a second at most.
    """
    global _deep_last
    with _deep_lock:  # concurrent callers wait for one computation, then share it
        if _deep_last is None or time.monotonic() - _deep_last[0] >= DEEP_CACHE_SECONDS:
            report = health_report()  # may take seconds (the workers' ping): age from its end
            _deep_last = (time.monotonic(), report)
        return _deep_last[1]


def health_report_forget() -> None:
    """Drop the cached deep report (tests that change what it reports)."""
    global _deep_last
    with _deep_lock:
        _deep_last = None


def _applier_state() -> dict[str, Any]:
    """The applier queue, for operators (not a check: without an applier the collector
    writes plans itself): its length and its oldest plan's wait, `lagging` past
    APPLIER_LAG_WARN_SECONDS."""
    try:
        state = backlog()
        oldest = state["oldest_ms"]
        lagging = oldest is None or oldest > settings.APPLIER_LAG_WARN_SECONDS * 1000
        return {**state, "max": settings.APPLY_QUEUE_MAX_PLANS, "lagging": lagging}
    except Exception as exc:  # noqa: BLE001 - Redis down is the redis check's failure
        return {"error": f"{type(exc).__name__}: {exc}"}


def heartbeat_record(*, beat_at: datetime, now: datetime, worker: str | None = None) -> str:
    """Record that a beat-scheduled task reached a worker and Cassandra; return the worker."""
    name = worker or socket.gethostname()
    statement = prepare(pipeline_heartbeats.UPSERT, idempotent=True, write=True)
    cassandra_session().execute(
        statement, (name, timebuckets.as_utc(beat_at), timebuckets.as_utc(now))
    )
    return name


def keyspace_is_empty() -> bool:
    """Return True if no session has been written yet (management use: a range scan)."""
    return cassandra_session().execute(prepare(user_sessions.SELECT_ANY)).one() is None
