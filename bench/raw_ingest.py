"""Baseline: the raw driver writing the rows a collector batch writes (no HTTP, no Django).

Each process prepares the collector's own INSERT statements and writes, per batch:
the transaction-log entry (with a compressed payload of the same size), the
request's ingest_stats row, one single-partition UNLOGGED batch per partition of
session_events, user_events_by_bucket and site_events_by_bucket, the session summary,
the feed entry and the "applied" mark, using execute_concurrent with several
batches in flight.
"""

from __future__ import annotations

import json
import os
import statistics
import time
import uuid
import zlib
from datetime import UTC, datetime
from typing import Any

import orjson
from cassandra import ConsistencyLevel
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
from cassandra.concurrent import execute_concurrent
from cassandra.policies import DCAwareRoundRobinPolicy, TokenAwarePolicy
from cassandra.query import UNSET_VALUE, BatchStatement, BatchType

from sessions_app.foundation import dimensions
from sessions_app.foundation.tables import site_sessions
from sessions_app.foundation.tables.registry import statement_text

IN_FLIGHT = 8  # batches written concurrently, like concurrent HTTP requests
# The TTLs the collector binds with the default retention policies (days).
RAW_TTL, SESSIONS_TTL, LOG_TTL = 400 * 86400, 400 * 86400, 7 * 86400
# A session's dimensions as the collector writes them (foundation/dimensions.py), by name.
DIMENSIONS = {
    "source": "Google",
    "medium": "search",
    "country": "GB",
    "language": "en-GB",
    "device": "desktop",
    "browser": "Chrome",
    "browser_version": "131",
    "os": "Windows",
    "os_version": "10",
    "viewport": ">1024",
    "entry": "/",
    "exit": "/",
}


def _floor(ts: datetime, seconds: int) -> datetime:
    epoch = int(ts.timestamp())
    return datetime.fromtimestamp(epoch - epoch % seconds, tz=UTC)


def run(keyspace: str, site_id: str, events_per_batch: int, seconds: float, seed: int) -> dict:
    """Write batches for `seconds`; return events written and per-wave latencies."""

    profile = ExecutionProfile(
        load_balancing_policy=TokenAwarePolicy(DCAwareRoundRobinPolicy(local_dc="datacenter1")),
        consistency_level=ConsistencyLevel.LOCAL_QUORUM,
        request_timeout=10,
    )
    cluster = Cluster(
        ["127.0.0.1"],
        port=int(os.environ.get("CASSANDRA_PORT", "9042")),
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
        protocol_version=4,
    )
    session = cluster.connect()
    prepared = {
        name: session.prepare(statement_text(name).format(ks=keyspace))
        for name in (
            "session_events.INSERT",
            "user_events_by_bucket.INSERT",
            "site_events_by_bucket.INSERT",
            "user_sessions.UPSERT",
            "site_sessions.UPSERT",
            "latest_sessions.INSERT",
            "transaction_log.INSERT",
            "transaction_log.MARK_APPLIED",
            "ingest_stats.INSERT",
        )
    }
    site = uuid.UUID(site_id)
    written, failed, latencies, counter = 0, 0, [], 0
    sessions: dict[str, uuid.UUID] = {}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        work, owner = [], []
        for n in range(IN_FLIGHT):
            counter += 1
            statements = _batch(prepared, site, events_per_batch, seed, counter, sessions)
            work.extend(statements)
            owner.extend([n] * len(statements))
        started = time.monotonic()
        # A timeout fails its batch, as it fails a collector request, and the run goes
        # on: only batches whose every statement succeeded count as written.
        results = execute_concurrent(session, work, concurrency=64, raise_on_first_error=False)
        latencies.append(time.monotonic() - started)
        lost = {n for n, (ok, _) in zip(owner, results, strict=True) if not ok}
        written += (IN_FLIGHT - len(lost)) * events_per_batch
        failed += len(lost)
    cluster.shutdown()
    return {"events": written, "failed_batches": failed, "latencies": latencies}


def _batch(
    prepared: dict, site: uuid.UUID, n: int, seed: int, counter: int, sessions: dict[str, uuid.UUID]
) -> list:
    # The same key pattern as the collector under wrk: 100 active visitors per
    # process, each in one long session, so both paths write the same partitions.
    now = datetime.now(UTC)
    user = f"raw-{seed}-{counter % 100}"
    session_id = sessions.setdefault(user, uuid.uuid1())
    hour, day = _floor(now, 3600), _floor(now, 86400)
    rows_s, rows_u, rows_t, payload = [], [], [], []
    for i in range(n):
        event_id = uuid.uuid1()
        kind = "click" if i % 3 == 0 else "pageview"
        element = (
            json.dumps(
                {
                    "tag": "button",
                    "id": f"buy-{i}",
                    "classes": ["btn", "primary"],
                    "text": "Add to cart",
                    "selector": f"main > div.card > button#buy-{i}",
                }
            )
            if kind == "click"
            else None
        )
        url = f"https://shop.example/products/item-{i % 17}?ref=bench"
        title = f"Product {i % 17} - Shop"
        rows_s.append(
            (
                prepared["session_events.INSERT"],
                (
                    session_id,
                    event_id,
                    site,
                    user,
                    now,
                    # The event's document, the same keys and JSON as the collector's.
                    orjson.dumps(
                        {
                            "event_id": event_id,
                            "site_id": site,
                            "user_key": user,
                            "type": kind,
                            "name": None,
                            "ts": now,
                            "url": url,
                            "referrer": None,
                            "title": title,
                            "element": None if element is None else orjson.Fragment(element),
                            "props": None,
                            "context": None,
                            "late": False,
                            "clamped": False,
                            "is_bot": False,
                        },
                        option=orjson.OPT_UTC_Z,
                    ),
                    RAW_TTL,
                ),
            )
        )
        rows_u.append(
            (
                prepared["user_events_by_bucket.INSERT"],
                (
                    site,
                    user,
                    day,
                    event_id,
                    session_id,
                    kind,
                    None,
                    now,
                    url,
                    element,
                    None,
                    None,  # context
                    None,  # click
                    RAW_TTL,
                ),
            )
        )
        rows_t.append(
            (
                prepared["site_events_by_bucket.INSERT"],
                (
                    site,
                    hour,
                    0,
                    event_id,
                    session_id,
                    user,
                    kind,
                    None,
                    now,
                    url,
                    element,
                    None,  # props
                    None,  # click
                    False,
                    False,
                    RAW_TTL,
                ),
            )
        )
        payload.append(
            {
                "site_id": str(site),
                "user_key": user,
                "session_id": str(session_id),
                "event_id": str(event_id),
                "type": kind,
                "ts": int(now.timestamp()),
                "url": url,
                "title": title,
                "element": element,
            }
        )
    batch_id = uuid.uuid1()
    minute = _floor(now, 600)
    work: list[tuple[Any, Any]] = [
        (
            prepared["transaction_log.INSERT"],
            (
                site,
                minute,
                batch_id.int % 4,
                batch_id,
                now,
                n,
                zlib.compress(json.dumps(payload).encode(), 1),
                LOG_TTL,
            ),
        ),
        (prepared["ingest_stats.INSERT"], (site, hour, batch_id, n, n, 0, 0, 0, {})),
        (
            prepared["user_sessions.UPSERT"],
            (
                site,
                user,
                session_id,
                now,
                now,
                user,
                None,
                n,
                n,
                0,
                "https://shop.example/",
                "https://shop.example/",
                False,
                False,
                "127.0.0.0",
                *(DIMENSIONS.get(d.name) for d in dimensions.enriched()),
                int(now.timestamp() * 1_000_000),
                SESSIONS_TTL,
            ),
        ),
        (
            prepared["site_sessions.UPSERT"],
            (
                int(now.timestamp() * 1_000_000),
                SESSIONS_TTL,
                user,
                False,
                now,
                now,
                0,
                n,
                n,
                False,
                False,
                *(DIMENSIONS.get(d.name) for d in dimensions.explored()),
                {"/"},
                set(),
                site_sessions.terms_of(site, _floor(now, 86_400), session_id.int % 2, DIMENSIONS),
                site,
                _floor(now, 86_400),
                session_id.int % 2,
                session_id,
            ),
        ),
        (
            prepared["latest_sessions.INSERT"],
            (
                site,
                zlib.crc32(user.encode()) % 4,
                uuid.uuid1(),
                session_id,
                user,
                now,
                now,
                n,
                "https://shop.example/",
                "https://shop.example/",
                False,
            ),
        ),
        (
            prepared["transaction_log.MARK_APPLIED"],
            (LOG_TTL, site, minute, batch_id.int % 4, batch_id),
        ),
    ]
    work = [(statement, _unset(params)) for statement, params in work]
    for rows in (rows_s, rows_u, rows_t):
        batch = BatchStatement(
            batch_type=BatchType.UNLOGGED, consistency_level=ConsistencyLevel.LOCAL_QUORUM
        )
        for statement, params in rows:
            batch.add(statement, _unset(params))
        work.append((batch, None))
    return work


def _unset(params: tuple) -> tuple:
    # As the collector does: a bound null writes a tombstone cell, UNSET writes nothing.
    return tuple(UNSET_VALUE if v is None or v == {} else v for v in params)


def summarize(results: list[dict], seconds: float, events_per_batch: int) -> dict:
    events = sum(r["events"] for r in results)
    per_batch = sorted(lat / IN_FLIGHT * 1000 for r in results for lat in r["latencies"])
    wave = sorted(lat * 1000 for r in results for lat in r["latencies"])
    return {
        "events_per_second": events / seconds,
        "failed_batches": sum(r.get("failed_batches", 0) for r in results),
        "p50_ms": statistics.median(wave) if wave else 0.0,
        "p99_ms": wave[int(len(wave) * 0.99) - 1] if wave else 0.0,
        "per_batch_ms": statistics.median(per_batch) if per_batch else 0.0,
        "events_per_batch": events_per_batch,
    }
