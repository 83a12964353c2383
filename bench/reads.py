"""Read benchmarks (run by bench/run.py inside the bench environment; prints JSON).

1. Session timeline of 1,000 events: GET /api/.../sessions/<id>/events through gunicorn
   (server time from the Server-Timing header, and client time) beside the raw driver
   reading the same partition with a prepared statement. Two sessions of the same
   shape, one event a second: an open one (last event just now) and a closed one,
   which the API serves from its materialized copy (domain/sessions/timeline.py). The open one is
   read right after the ingest benchmark (Cassandra still flushing and compacting what
   it wrote): all its events were written at once, most of them older than half the
   prefix lag, so they mark the partition `backfilled` and it is read from its rows.
   Once the margin has passed and the node has settled (no compaction or flush running
   or pending) it is read again, like the closed one: from the prefix of its events
   older than the lag (stored by the first of those reads) and the rows after it.
2. A user's activity over 30 daily buckets: parallel vs sequential vs one IN query,
   through the selector, in this process, on the settled node.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
import urllib.request
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import django

from bench.cpu import cassandra_pid, process_cpu
from bench.node import settle

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clickstream.settings.local")
os.environ["ACTIVITY_IN_MAX_BUCKETS"] = "31"  # let the IN strategy take all 30 buckets
django.setup()

from django.contrib.auth.models import User  # noqa: E402

from sessions_app.domain.accounts import tokens  # noqa: E402
from sessions_app.domain.ingest.pipeline import Source, events_record  # noqa: E402
from sessions_app.domain.ledger import sites, widths  # noqa: E402
from sessions_app.domain.sessions.activity import activity_chunks, user_activity  # noqa: E402
from sessions_app.foundation.core.cql import cassandra_session, prepare  # noqa: E402
from sessions_app.foundation.tables import session_events, user_events_by_bucket, user_sessions  # noqa: E402


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _timeline_data(site, user_key: str, start: datetime) -> str:
    """Record a session of 1,000 events from start, one a second; return its id."""
    for offset in range(0, 1000, 50):
        events_record(
            source=Source(site=site, received_at=start + timedelta(seconds=offset + 50)),
            raw_events=[
                {
                    "id": f"{user_key}-{i}",
                    "type": "click" if i % 3 else "pageview",
                    "ts": (start + timedelta(seconds=i)).isoformat(),
                    "anonymous_id": user_key,
                    "url": f"https://shop.example/p{i % 9}",
                    **(
                        {
                            "element": {
                                "tag": "button",
                                "text": "Add to cart",
                                "selector": f"main > button#b{i % 7}",
                            }
                        }
                        if i % 3
                        else {}
                    ),
                }
                for i in range(offset, offset + 50)
            ],
        )
    [summary] = user_sessions.session_list(site_id=site.id, user_key=user_key, limit=1)
    return str(summary["session_id"])


def _buckets_data(site) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    for day in range(29, -1, -1):  # 20 events a day for 30 days: 30 daily partitions
        base = now - timedelta(days=day, hours=1)
        events_record(
            source=Source(site=site, received_at=now),
            raw_events=[
                {
                    "id": f"d{day}-{i}",
                    "type": "pageview",
                    "ts": (base + timedelta(minutes=i)).isoformat(),
                    "anonymous_id": "monthly",
                    "url": "https://shop.example/daily",
                }
                for i in range(20)
            ],
        )


def _cassandra_cpu() -> float:
    """CPU seconds the local node has used so far (0 when it is not this project's node)."""
    return process_cpu(cassandra_pid())


def timeline(url: str, token: str, session_id: str, runs: int) -> dict[str, Any]:
    """API server/client time and the raw driver's time for the same partition."""
    server, client, sources = [], [], []
    for _ in range(runs + 10):
        request = urllib.request.Request(url, headers={"Authorization": f"Token {token}"})  # noqa: S310 - loopback
        started = time.perf_counter()
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
            body = response.read()
            timing = response.headers.get("Server-Timing", "app;dur=0")
            sources.append(response.headers.get("X-Timeline-Source", "?"))
        client.append((time.perf_counter() - started) * 1000)
        server.append(float(timing.split("dur=")[1]))
    events = len(json.loads(body)["events"])
    server, client, sources = server[10:], client[10:], sources[10:]

    # The rows path's own statement (each event's document), without the API around it.
    statement = prepare(session_events.SELECT_DOCS)
    raw = []
    for _ in range(runs + 10):
        started = time.perf_counter()
        rows = list(cassandra_session().execute(statement, (uuid.UUID(session_id), 1000)))
        raw.append((time.perf_counter() - started) * 1000)
    raw = raw[10:]
    return {
        "events": events,
        "rows_raw": len(rows),
        # Which path answered the measured requests: "rows" or "materialized".
        "sources": dict(Counter(sources)),
        "api_server_p50_ms": statistics.median(server),
        "api_server_p95_ms": _pct(server, 0.95),
        "api_client_p50_ms": statistics.median(client),
        "api_client_p95_ms": _pct(client, 0.95),
        "raw_p50_ms": statistics.median(raw),
        "raw_p95_ms": _pct(raw, 0.95),
    }


def _raw_activity(site, user_key: str, start: datetime, end: datetime) -> dict[str, Any]:
    """The selector's statements for the same buckets through the driver alone.

    Rows are fetched and not finished (no time zones, JSON or per-bucket counts):
    what parallel and sequential queries gain over each other with nothing but the
    driver and the node in the way, the ceiling for the selector's ratio.
    """
    from sessions_app.foundation.core.cql import bind
    from sessions_app.foundation.core.ids import time_uuid_bound

    parts = widths.user_partitions(
        site_id=site.id, user_key=user_key, start=start, end=end, limit=100
    )
    low, high = time_uuid_bound(start - timedelta(microseconds=1), upper=True), time_uuid_bound(end)
    one, several = (
        prepare(user_events_by_bucket.SELECT_AFTER),
        prepare(user_events_by_bucket.SELECT_IN_AFTER),
    )
    chunks, _ = activity_chunks(parts, "parallel")
    db = cassandra_session()

    def parallel() -> int:
        futures = [
            db.execute_async(bind(several, (site.id, user_key, c, low, high, 1001))) for c in chunks
        ]
        return sum(len(list(f.result())) for f in futures)

    def sequential() -> int:
        return sum(
            len(list(db.execute(bind(one, (site.id, user_key, b, low, high, 1001))))) for b in parts
        )

    return {"raw_parallel": (parallel, len(chunks)), "raw_sequential": (sequential, len(parts))}


def activity(site, user_key: str, now: datetime, rounds: int = 30) -> dict[str, Any]:
    """Each strategy's p50 and CPU per call over 30 daily buckets, in interleaved rounds.

    One call of each strategy a round, so a change in the VM's speed during the
    measurement weighs on every strategy alike; the first three rounds warm up.
    """
    start = now - timedelta(days=30)

    def selector(strategy: str) -> Any:
        return lambda: user_activity(
            site_id=site.id, user_key=user_key, start=start, end=now, limit=1000, strategy=strategy
        )

    runs: dict[str, Any] = {s: (selector(s), None) for s in ("parallel", "sequential", "in")}
    runs.update(_raw_activity(site, user_key, start, now))
    times: dict[str, list[float]] = {name: [] for name in runs}
    cpu = {name: [0.0, 0.0] for name in runs}
    results: dict[str, Any] = {}
    for round_ in range(rounds + 3):
        for name, (run, _) in runs.items():
            app, node = time.process_time(), _cassandra_cpu()
            started = time.perf_counter()
            results[name] = run()
            times[name].append((time.perf_counter() - started) * 1000)
            if round_ >= 3:
                cpu[name][0] += time.process_time() - app
                cpu[name][1] += _cassandra_cpu() - node
    measured: dict[str, Any] = {}
    for name, (_, queries) in runs.items():
        result = results[name]
        measured[name] = {
            "app_cpu_ms": cpu[name][0] / rounds * 1000,
            "cassandra_cpu_ms": cpu[name][1] / rounds * 1000,
            "p50_ms": statistics.median(times[name][3:]),
            "events": result if isinstance(result, int) else len(result.events),
            "buckets": None if isinstance(result, int) else len(result.partitions),
            "queries": queries if isinstance(result, int) else result.queries,
        }
    return measured


def main() -> None:
    base_url = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    site = sites.site_create(name=f"reads-{int(time.time())}", origins=[])
    now = datetime.now(UTC).replace(microsecond=0)
    closed_id = _timeline_data(site, "reader-closed", now - timedelta(hours=2))
    open_id = _timeline_data(site, "reader-open", now - timedelta(seconds=1000))
    written = time.monotonic()
    _buckets_data(site)
    user, _ = User.objects.get_or_create(username="bench-reader", defaults={"is_superuser": True})
    key = tokens.token_create(user=user, name="bench reads", expires_days=1).key

    def url(session_id: str) -> str:
        return f"{base_url}/api/sites/{site.id}/sessions/{session_id}/events"

    busy = timeline(url(open_id), key, open_id, runs)
    settled_after = settle()
    # The closed session's copy can only be stamped once its last write is older
    # than the margin (the web app's setting, default 30 s).
    margin = float(os.environ.get("TIMELINE_MATERIALIZE_MARGIN_SECONDS", "30"))
    time.sleep(max(0.0, written + margin + 1 - time.monotonic()))
    quiet = timeline(url(open_id), key, open_id, runs)
    materialized = timeline(url(closed_id), key, closed_id, runs)

    strategies = activity(site, "monthly", datetime.now(UTC))
    print(
        json.dumps(
            {
                "timeline_busy": busy,
                "timeline": quiet,
                "timeline_materialized": materialized,
                "settled_after_s": settled_after,
                "buckets": strategies,
            }
        )
    )


if __name__ == "__main__":
    main()
