"""Seal and rolling-counter benchmarks (run by bench/run.py in the bench environment; prints JSON).

1. Seal one hour holding EVENTS events (4 shards, ~20 events a session, two beacons
   each): events aggregated per second by bucket_seal (merge the beacons'
   tallies, aggregate, write every product: aggregates, per-user counts, series,
   breakdowns, paths, heatmaps), beside the
   raw driver only reading the hour's raw rows (the floor of a seal that scans them),
   and the same seal made to scan the raw rows (as after an erasure).
2. A user's 12-month rolling count from a year of sealed hours, days and months,
   beside the naive cover that reads sealed hours only: latency and partitions read.

Arguments: events (200,000), rolling runs (30), days between the user's login days
(1; the test runs 14: a sparser year whose every month still has logins to seal).
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clickstream.settings.local")
django.setup()

from django.conf import settings  # noqa: E402

from sessions_app.foundation.core.garbage import tune_gc  # noqa: E402

tune_gc(settings.WORKER_GC_THRESHOLD)  # as a Celery worker process is (clickstream/celery.py)

from cassandra.concurrent import execute_concurrent  # noqa: E402
from cassandra.query import UNSET_VALUE as UNSET  # noqa: E402

from bench.node import settle  # noqa: E402
from sessions_app.domain.aggregates import states, stored  # noqa: E402
from sessions_app.domain.aggregates.products import TOTALS  # noqa: E402
from sessions_app.domain.aggregates.rolling import rolling_count  # noqa: E402
from sessions_app.domain.aggregates.seal import bucket_rollup, bucket_seal  # noqa: E402
from sessions_app.domain.ingest.pipeline import Source, events_record  # noqa: E402
from sessions_app.domain.ingest.plan import EventRow, Plan, SessionSummary  # noqa: E402
from sessions_app.domain.ingest.rows import partial_rows  # noqa: E402
from sessions_app.domain.ingest.session_rows import session_rows  # noqa: E402
from sessions_app.domain.ingest.state import SessionState  # noqa: E402
from sessions_app.domain.ledger import sites  # noqa: E402
from sessions_app.foundation.core import timebuckets  # noqa: E402
from sessions_app.foundation.core.cql import bind, cassandra_session, prepare  # noqa: E402
from sessions_app.foundation.core.ids import time_uuid  # noqa: E402
from sessions_app.foundation.models import BucketState, Site  # noqa: E402

INSERT_SITE_EVENT = """
INSERT INTO {ks}.site_events_by_bucket
  (site_id, bucket, shard, event_id, session_id, user_key, type, name, ts, url, element, is_bot)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
SCAN = """
SELECT session_id, user_key, type, name, url, element, is_bot
FROM {ks}.site_events_by_bucket WHERE site_id = ? AND bucket = ? AND shard = ?
"""
SHARDS = 4
SOURCES = ["google", "newsletter", None, "bing", "twitter.com"]
PAGES = [f"https://shop.example/{p}" for p in ("", "shoes", "shoes/red", "cart", "checkout")]
BUTTONS = [
    json.dumps({"tag": "button", "text": t, "selector": f"main > button#{t.lower()}"})
    for t in ("Buy", "Add", "Next", "Close")
]


def hour_of_events(site: Site, hour: datetime, events: int) -> None:
    """Write `events` raw rows, their sessions' rows and their batches' tallies.

    Raw rows go straight into site_events_by_bucket (the other event tables are not
    what a seal reads); each session arrives as two 10-event beacons, whose tallies
    and session rows (summaries, site_sessions with dimensions) are the rows the
    applier writes for them (ingest.rows.partial_rows, ingest.session_rows).
    """
    rng = random.Random(7)  # noqa: S311 - test data
    insert = prepare(INSERT_SITE_EVENT)
    work: list[tuple[Any, Any]] = []
    per_session, per_beacon = 20, 10
    for s in range(events // per_session):
        user = f"user-{s % (events // 40)}"
        started = hour + timedelta(seconds=rng.uniform(0, 3000))
        session_id = time_uuid(started, f"s-{s}")
        rows = []
        for i in range(per_session):
            ts = started + timedelta(seconds=i * 25)
            kind = ("pageview", "click", "click", "custom")[i % 4]
            row = EventRow(
                site_id=site.id,
                user_key=user,
                session_id=session_id,
                event_id=time_uuid(ts, f"e-{s}-{i}"),
                type=kind,
                ts=ts,
                name=rng.choice(["login", "purchase", "signup"]) if kind == "custom" else None,
                url=rng.choice(PAGES),
                element=json.loads(rng.choice(BUTTONS)) if kind == "click" else None,
                is_bot=s % 50 == 0,
                shard=(s * per_session + i) % SHARDS,
            )
            rows.append(row)
            work.append(
                (
                    insert,
                    (
                        site.id,
                        hour,
                        row.shard,
                        row.event_id,
                        session_id,
                        user,
                        kind,
                        row.name or UNSET,
                        ts,
                        row.url,
                        json.dumps(row.element) if row.element else UNSET,
                        row.is_bot,
                    ),
                )
            )
        for b in range(0, per_session, per_beacon):
            received = rows[b + per_beacon - 1].ts
            sent = rows[: b + per_beacon]
            # The session as the beacon left it, as the applier writes it: its summary
            # (user_sessions, site_sessions with its dimensions, the feed) and the
            # beacon's tallies, which know its start and source.
            state = SessionState(
                session_id,
                started,
                received,
                anonymous_id=user,
                event_count=len(sent),
                pageview_count=sum(r.type == "pageview" for r in sent),
                click_count=sum(r.type == "click" for r in sent),
                entry_url=sent[0].url,
                exit_url=next(r.url for r in reversed(sent) if r.type == "pageview"),
                converted=any(r.name == "purchase" for r in sent),
                is_bot=s % 50 == 0,
                dimensions={"source": SOURCES[s % len(SOURCES)], "country": "DE"},
            )
            beacon = Plan(
                site_id=site.id,
                batch_id=time_uuid(received, f"b-{s}-{b}"),
                received_at=received,
                version=timebuckets.epoch_us(received),
                events=rows[b : b + per_beacon],
                sessions=[SessionSummary(site.id, user, state)],
                shards=SHARDS,
            )
            # Bound as the applier binds them (cql.bind: an absent value is unset, not a
            # null that would leave a tombstone).
            for _, (statement, params) in (*partial_rows(beacon), *session_rows(beacon)):
                work.append((bind(statement, params), None))
    execute_concurrent(cassandra_session(), work, concurrency=256, raise_on_first_error=True)


def seal(events: int) -> dict[str, float]:
    site = sites.site_create(name=f"seal-{int(time.time())}", origins=[])
    Site.objects.filter(pk=site.pk).update(event_shards=SHARDS)
    site.refresh_from_db()
    hour = timebuckets.floor(datetime.now(UTC) - timedelta(hours=6), "hour")
    hour_of_events(site, hour, events)
    # The collector records the shards each hour was written with; readers fan out over them.
    BucketState.objects.get_or_create(
        site=site, granularity="hour", bucket=hour, defaults={"shards": SHARDS}
    )
    scan = prepare(SCAN)
    scans: list[float] = []
    seals: dict[bool, list[float]] = {True: [], False: []}
    results = {}
    settled = 0.0
    for _ in range(3):
        settled += settle()
        started = time.perf_counter()
        futures = [
            cassandra_session().execute_async(scan, (site.id, hour, s)) for s in range(SHARDS)
        ]
        rows = sum(1 for f in futures for _ in f.result())
        scans.append(time.perf_counter() - started)
        # From the batches' tallies, then (as after an erasure) from the raw rows.
        for tallies in (True, False):
            BucketState.objects.filter(site=site, granularity="hour", bucket=hour).update(
                partials=tallies
            )
            settled += settle()
            started = time.perf_counter()
            bucket_seal(site_id=site.id, hour=hour, now=datetime.now(UTC))
            seals[tallies].append(time.perf_counter() - started)
            (aggregate,) = TOTALS.read(site_id=site.id, granularity="hour", buckets=[hour])
            assert aggregate.rows_read == rows == events
            results[tallies] = {
                k: v for k, v in vars(aggregate).items() if k not in ("users_sketch", "user_counts")
            }
    assert results[True] == results[False], "tallies and raw rows disagree"
    return {
        "events": events,
        "seal_events_per_second": events / statistics.median(seals[True]),
        "seal_raw_events_per_second": events / statistics.median(seals[False]),
        "scan_events_per_second": events / statistics.median(scans),
        "seal_seconds": statistics.median(seals[True]),
        "settled_s": settled,
        "per_user_rows": len(  # one row a user in each of bucket_users and rolling_counts
            stored.bucket_user_counts(site_id=site.id, granularity="hour", bucket_starts=[hour])
        ),
    }


def rolling(runs: int, every: int = 1) -> dict[str, float]:
    """A year of a user's logins (two a day, every `every` days), sealed through the real
    seal and rollups."""
    site = sites.site_create(name=f"rolling-{int(time.time())}", origins=[])
    now = datetime.now(UTC).replace(microsecond=0)
    rng = random.Random(3)  # noqa: S311 - test data
    for day in range(366, 0, -every):
        for n in range(2):
            ts = now - timedelta(days=day, hours=rng.uniform(0, 23))
            events_record(
                source=Source(site=site, received_at=ts + timedelta(seconds=5)),
                raw_events=[
                    {
                        "id": f"r{day}-{n}",
                        "type": "custom",
                        "name": "login",
                        "ts": ts.isoformat(),
                        "anonymous_id": "loyal",
                        "url": "https://shop.example/login",
                    }
                ],
            )
    for _ in range(3):  # hours, then the days they complete, then the months
        for site_id, granularity, start in states.buckets_due(now=now, limit=100_000):
            if site_id != site.id:
                continue
            if granularity == "hour":
                bucket_seal(site_id=site_id, hour=start, now=now)
            else:
                bucket_rollup(site_id=site_id, granularity=granularity, bucket=start, now=now)
    year = timedelta(days=365)
    figures: dict[str, list[float]] = {"cover": [], "naive": []}
    results = {}
    for _ in range(runs + 3):
        started = time.perf_counter()
        results["cover"] = rolling_count(
            site_id=site.id, user_key="loyal", event_key="login", start=now - year, end=now
        )
        figures["cover"].append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        results["naive"] = rolling_count(
            site_id=site.id,
            user_key="loyal",
            event_key="login",
            start=now - year,
            end=now,
            # The baseline: hours only (every hour counts as sealed: all of them
            # with events are), no days or months.
            sealed=lambda width, bucket: True,
            widths=(timebuckets.Width.HOUR,),
        )
        figures["naive"].append((time.perf_counter() - started) * 1000)
    cover, naive = results["cover"], results["naive"]
    assert cover.count == naive.count, (cover.count, naive.count)
    return {
        "count": cover.count,
        "cover_p50_ms": statistics.median(figures["cover"][3:]),
        "naive_p50_ms": statistics.median(figures["naive"][3:]),
        "cover_partitions": cover.partitions_read,
        "naive_partitions": naive.partitions_read,
        "cover_rows": cover.rows_read,
        "naive_rows": naive.rows_read,
    }


def main() -> None:
    events = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    every = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    result = {"seal": seal(events), "rolling": rolling(runs, every)}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
