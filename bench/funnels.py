"""Funnel benchmark (issue 27.7; run by bench/run.py, or alone; prints JSON).

A fresh site gets 30 sealed days of raw events (default ~1,000,000: 33,000 a day, visits
of 1-12 events: product and other page views, add-to-cart clicks, purchases) written
into site_events_by_bucket with the collector's own INSERT, each day's site_sessions
rows, and sealed hour and day states. Then, in this process:

  (cold) a 4-step funnel over the 30 days, none of it cached: every day scanned, matched
         and stored (`results.funnel_units`, days inline), as events scanned per second;
  (raw)  the driver alone scanning the same 720 hour partitions with the same statement,
         6 hours at a time as the funnel does, rows fetched and counted;
  (warm) the same funnel again, every day from funnel_days, with the summary the API
         answers: p50 / p95 over RUNS calls.

Goals: cold ≥ 0.7 of the raw scan's events/s; warm p95 ≤ 300 ms. Each cold run uses a
definition of its own (a different label: another digest), so nothing is cached.

  DJANGO_SETTINGS_MODULE=clickstream.settings.local CASSANDRA_KEYSPACE=bench_funnels \\
      python -m bench.funnels [EVENTS_PER_DAY] [RUNS]
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clickstream.settings.local")
django.setup()

import orjson  # noqa: E402
from cassandra.concurrent import execute_concurrent_with_args  # noqa: E402
from cassandra.query import UNSET_VALUE as UNSET  # noqa: E402
from django.conf import settings  # noqa: E402

from bench import SMOKE  # noqa: E402
from bench.node import settle  # noqa: E402
from sessions_app.domain.ledger import policies, sites  # noqa: E402
from sessions_app.features.funnels import defs, results  # noqa: E402
from sessions_app.foundation.core import timebuckets  # noqa: E402
from sessions_app.foundation.core.cql import cassandra_session, prepare  # noqa: E402
from sessions_app.foundation.core.ids import time_uuid  # noqa: E402
from sessions_app.foundation.models import BucketState  # noqa: E402
from sessions_app.foundation.tables import (  # noqa: E402
    retention_specs,
    site_events_by_bucket,
    site_sessions,
)

DAYS = 3 if SMOKE else 30
SHOP = "https://shop.example"
PRODUCTS = [f"/products/{i}" for i in range(40)]
ADD = orjson.dumps({"tag": "button", "selector": "#add-to-cart", "text": "Add to cart"}).decode()
STEPS = [
    {"kind": "pageview", "path": "/products/", "match": "prefix"},
    {"kind": "click", "selector": "#add-to-cart"},
    {"kind": "pageview", "path": "/checkout", "match": "exact"},
    {"kind": "event", "name": "purchase"},
]
WARMUP = 1 if SMOKE else 3
GOAL_RATIO, GOAL_WARM_MS = 0.7, 300.0


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def seed(site, per_day: int, first_day: datetime) -> int:
    """Write DAYS days of visits; return the events written."""
    rng = random.Random(27)  # noqa: S311 - test data
    insert = prepare(site_events_by_bucket.INSERT, idempotent=True, write=True)
    session_insert = prepare(
        "INSERT INTO {ks}.site_sessions (site_id, day, shard, session_id, user_key, source, "
        "device, browser, country) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        idempotent=True,
        write=True,
    )
    ttl = policies.ttl_seconds(retention_specs.RAW_EVENTS)
    written = 0
    for offset in range(DAYS):
        day = first_day + timedelta(days=offset)
        rows: list[tuple[Any, ...]] = []
        sessions: list[Any] = []
        while len(rows) < per_day:
            user = f"u{rng.randrange(per_day * 3)}"
            ts = day + timedelta(seconds=rng.randrange(0, 86_000))
            session = time_uuid(ts, f"s{user}{len(rows)}")
            sessions.append(
                (
                    *site_sessions.row_key(site.id, session)[:3],
                    session,
                    user,
                    rng.choice(["google", "direct", "newsletter"]),
                    rng.choice(["desktop", "mobile"]),
                    "Chrome",
                    rng.choice(["DE", "US", "FR"]),
                )
            )
            stage = 0
            for n in range(rng.randrange(1, 13)):
                pick = rng.random()
                kind, name, url, element = "pageview", None, SHOP + "/", None
                if (stage == 0 and pick < 0.5) or (stage > 0 and pick < 0.2):
                    url, stage = SHOP + rng.choice(PRODUCTS), max(stage, 1)
                elif stage >= 1 and pick < 0.55:
                    kind, element, stage = "click", ADD, max(stage, 2)
                elif stage >= 2 and pick < 0.7:
                    url, stage = SHOP + "/checkout", 3
                elif stage >= 3 and pick < 0.85:
                    kind, name = "custom", "purchase"
                at = ts + timedelta(seconds=40 * n)
                hour = timebuckets.floor(at, "hour")
                rows.append(
                    (
                        site.id,
                        hour,
                        0,
                        time_uuid(at, f"e{user}{len(rows)}"),
                        session,
                        user,
                        kind,
                        name,
                        at,
                        url,
                        element,
                        None,
                        None,
                        False,
                        False,
                        ttl,
                    )
                )
        rows = [tuple(UNSET if v is None else v for v in r) for r in rows]  # no tombstones
        execute_concurrent_with_args(
            cassandra_session(), insert, rows, concurrency=128, raise_on_first_error=True
        )
        execute_concurrent_with_args(
            cassandra_session(),
            session_insert,
            sessions,
            concurrency=128,
            raise_on_first_error=True,
        )
        written += len(rows)
    now = datetime.now(UTC)
    states = [
        BucketState(
            site=site,
            granularity="hour",
            bucket=h,
            state=BucketState.SEALED,
            sealed_at=now,
            shards=1,
        )
        for h in timebuckets.buckets_between(first_day, first_day + timedelta(days=DAYS), "hour")
    ] + [
        BucketState(
            site=site,
            granularity="day",
            bucket=first_day + timedelta(days=d),
            state=BucketState.SEALED,
            sealed_at=now,
        )
        for d in range(DAYS)
    ]
    BucketState.objects.bulk_create(states, batch_size=500)
    return written


def raw_scan(site, first_day: datetime) -> int:
    """Every hour partition of the 30 days through the driver alone (6 hours at once)."""
    statement = prepare(site_events_by_bucket.SELECT_FUNNEL_ROWS)
    hours = timebuckets.buckets_between(first_day, first_day + timedelta(days=DAYS), "hour")

    def scan(hour: datetime) -> int:
        query = statement.bind((site.id, hour, 0))
        query.fetch_size = 5_000
        return sum(1 for _ in cassandra_session().execute(query))

    total = 0
    for day in range(DAYS):
        with ThreadPoolExecutor(6) as pool:
            total += sum(pool.map(scan, hours[day * 24 : (day + 1) * 24]))
    return total


def main() -> None:
    per_day = int(sys.argv[1]) if len(sys.argv) > 1 else 33_400
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    settings.FUNNEL_INLINE_DAYS = 1_000
    site = sites.site_create(name=f"funnels-{int(time.time())}", origins=[])
    today = timebuckets.floor(datetime.now(UTC), "day")
    first_day = today - timedelta(days=DAYS)
    began = time.monotonic()
    events = seed(site, per_day, first_day)
    seeded = {"events": events, "seed_s": time.monotonic() - began, "settled_after_s": settle()}
    cold, raw = [], []
    funnel = None
    for n in range(3):  # cold and raw interleaved, three times
        steps = [{**STEPS[0], "label": f"run {n}"}, *STEPS[1:]]
        funnel = defs.funnel_create(site=site, name=f"bench {n}", definition={"steps": steps})
        began = time.perf_counter()
        version = funnel.current
        assert version is not None
        result = results.funnel_units(site=site, version=version, start=first_day, end=today)
        cold.append(result.scanned / (time.perf_counter() - began))
        began = time.perf_counter()
        scanned = raw_scan(site, first_day)
        raw.append(scanned / (time.perf_counter() - began))
    assert funnel is not None and funnel.current is not None
    warm = []
    for _ in range(WARMUP + runs):
        began = time.perf_counter()
        result = results.funnel_units(site=site, version=funnel.current, start=first_day, end=today)
        summary = results.funnel_summary(funnel.current.definition, result, breakdown="source")
        warm.append((time.perf_counter() - began) * 1000)
    warm = warm[WARMUP:]
    ratios = [c / r for c, r in zip(cold, raw, strict=True)]
    print(
        json.dumps(
            {
                **seeded,
                "days": DAYS,
                "units": len(result.outcomes),
                "steps": [s["count"] for s in summary["steps"]],
                "days_cached_warm": result.days_cached,
                "cold_events_per_s": cold,
                "raw_events_per_s": raw,
                "cold_ratios": ratios,
                "cold_ratio_median": statistics.median(ratios),
                "warm_p50_ms": statistics.median(warm),
                "warm_p95_ms": _pct(warm, 0.95),
                "goal_ratio": GOAL_RATIO,
                "goal_warm_p95_ms": GOAL_WARM_MS,
            }
        )
    )


if __name__ == "__main__":
    main()
