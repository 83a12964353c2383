"""Retention cohorts benchmark (issue 39.5; run by bench/run.py, or alone; prints JSON).

A fresh site gets USERS users' activity over 12 weeks (84 UTC days): each user is active
on 1-6 days (one human page view a day, at a random hour), written as raw rows straight
into site_events_by_bucket (one shard; the other event tables are not what a seal or a
cohort reads). Then 12 weekly cohorts x 12 weeks (`cohorts.reads.cohorts`) are timed:

  (raw)  the driver alone reading those raw rows (user, time, bot flag): every hour of
         the 84 days, all at once;
  (cold) the same triangle with no sealed sets: each day's sets built from its raw rows
         with the product's code for an hour with no tally to share (usersets.rows_sets
         -> numbers -> bitmaps; the seal's own tally shares what the hour counted already),
         then the cohorts' own arithmetic; its rate (raw rows a second) against the raw
         read's (goal >= 0.7);
  (warm) the triangle from the sealed sets (written with usersets.sets_write as the day
         rollups write them, each day's write rewriting its week's; months as the month
         rollups write them; numbers taken from a local dictionary, not the per-user
         lightweight transactions a real first seal runs): p50 / p95 ms (goal p95 <=
         200 ms), its answer cached (cohorts.reads.cached: the key's SQL aggregates and a
         cache read); (warm_uncached) the same with the cache cleared first: the sets read
         (12 week rows and 24 month rows, in one concurrent round).

  DJANGO_SETTINGS_MODULE=clickstream.settings.local CASSANDRA_KEYSPACE=bench_cohorts \\
      python -m bench.cohorts [USERS] [RUNS]
"""

from __future__ import annotations

import json
import os
import random
import statistics
import time
from datetime import UTC, datetime, timedelta

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clickstream.settings.local")
django.setup()

from cassandra.concurrent import execute_concurrent  # noqa: E402
from cassandra.query import BatchStatement, BatchType  # noqa: E402
from django.core.cache import cache  # noqa: E402
from django.utils import timezone  # noqa: E402
from pyroaring import BitMap  # noqa: E402

from bench.node import settle  # noqa: E402
from bench.timing import fresh_site, interleaved, sizes  # noqa: E402
from sessions_app.domain.aggregates import usersets  # noqa: E402
from sessions_app.domain.aggregates.seal import aggregate_ttl  # noqa: E402
from sessions_app.features.cohorts import reader, reads  # noqa: E402
from sessions_app.foundation.core import timebuckets  # noqa: E402
from sessions_app.foundation.core.cql import cassandra_session, prepare  # noqa: E402
from sessions_app.foundation.core.ids import time_uuid  # noqa: E402
from sessions_app.foundation.models import BucketState  # noqa: E402

WEEKS = 12
INSERT = """
INSERT INTO {ks}.site_events_by_bucket
  (site_id, bucket, shard, event_id, session_id, user_key, type, ts, url, is_bot)
VALUES (?, ?, 0, ?, ?, ?, 'pageview', ?, 'https://shop.example/', false)
"""
SCAN = """
SELECT user_key, type, name, is_bot FROM {ks}.site_events_by_bucket
WHERE site_id = ? AND bucket = ? AND shard = 0
"""
GOAL_RATIO, GOAL_MS = 0.7, 200.0
CHUNK = 50_000  # users generated before their rows are written
BATCH = 32  # rows of one hour a batch (~4 KB: under the node's batch size warning)


def seed(site, users: int, first: datetime) -> dict[datetime, dict[datetime, set[str]]]:
    """Write the raw rows; return each day's active users (keys) for the sealed sets.

    The rows go straight to the node as the applier's own writes would land them (not
    through the collector: the contract is the rows a seal and the raw scan read): per
    CHUNK users, each hour's rows in single-partition unlogged batches of BATCH prepared
    inserts, many batches in flight. One request per BATCH rows instead of per row is
    what lets a loaded node take the 1 M users' ~3.5 M rows in minutes."""
    rng = random.Random(39)  # noqa: S311 - test data
    insert = prepare(INSERT)
    days: dict[datetime, dict[datetime, set[str]]] = {}
    by_hour: dict[datetime, list[tuple]] = {}
    for u in range(users):
        key = f"user-{u}"
        start = rng.randrange(WEEKS * 7)  # users keep arriving over the 12 weeks
        for offset in sorted(
            {start, *(rng.randrange(start, WEEKS * 7) for _ in range(rng.randrange(6)))}
        ):
            ts = first + timedelta(days=offset, seconds=rng.randrange(86_400))
            hour = timebuckets.floor(ts, "hour")
            days.setdefault(timebuckets.floor(ts, "day"), {}).setdefault(hour, set()).add(key)
            event, session = time_uuid(ts, f"e{u}-{offset}"), time_uuid(ts, f"s{u}-{offset}")
            by_hour.setdefault(hour, []).append((site.id, hour, event, session, key, ts))
        if (u + 1) % CHUNK == 0:
            _batches_write(insert, by_hour)
            by_hour = {}
    _batches_write(insert, by_hour)
    return days


def _batches_write(insert, by_hour: dict[datetime, list[tuple]]) -> None:
    work = []
    for rows in by_hour.values():
        for i in range(0, len(rows), BATCH):
            batch = BatchStatement(batch_type=BatchType.UNLOGGED)
            for row in rows[i : i + BATCH]:
                batch.add(insert, row)
            work.append((batch, None))
    execute_concurrent(cassandra_session(), work, concurrency=64, raise_on_first_error=True)


def hours_of(first: datetime) -> list[datetime]:
    return timebuckets.buckets_between(first, first + timedelta(weeks=WEEKS), "hour")


def raw_scan(site, first: datetime) -> int:
    work = [(prepare(SCAN), (site.id, h)) for h in hours_of(first)]
    results = execute_concurrent(cassandra_session(), work, concurrency=64)
    return sum(len(list(rows)) for _, rows in results)


class Numbers(dict):
    """Each user's number, a new one the first time a user is looked up: numbers follow
    first sight, as a seal's do (only which users are the same matters to the triangle)."""

    def __missing__(self, key: str) -> int:
        number = self[key] = len(self)
        return number


class ColdReader(reader.Reader):
    """The cohorts' reader with no sealed sets: every day's sets counted from its raw
    rows with the product's own code for an hour with no tally to share
    (usersets.rows_sets, what a goal's backfill runs; usersets.bitmaps numbering each user
    from one dictionary for the whole read, `Numbers`)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.numbers, self.rows = Numbers(), 0

    def _read(self, buckets):
        scan, found = prepare(SCAN), {}
        days = [b for g, b in buckets if g == "day"]
        work = [
            (scan, (self.site_id, h))
            for d in days
            for h in timebuckets.buckets_between(d, timebuckets.next_start(d, "day"), "hour")
        ]
        by_day: dict[datetime, list] = {}
        # Each hour folded as it arrives, while the next ones are read (in order).
        arriving = execute_concurrent(
            cassandra_session(), work, concurrency=64, results_generator=True
        )
        for (_, (_, hour)), (_, rows) in zip(work, arriving, strict=True):
            rows = rows.current_rows if not rows.has_more_pages else list(rows)
            self.rows += len(rows)
            sets = usersets.bitmaps(usersets.rows_sets(rows), self.numbers)
            by_day.setdefault(timebuckets.floor(hour, "day"), []).append(sets)
        for day, parts in by_day.items():
            found["day", day] = usersets.sets_merge(parts)
        return found

    def prefetch(self, starts, unit, before):
        """Nothing read ahead: each day is built from its raw rows when a period asks."""

    def seen_before(self, start, name):
        """Nothing was written before the 12 weeks: the cold read scans only them."""
        return BitMap()


def write_sets(site, days: dict[datetime, dict[datetime, set[str]]], first: datetime) -> None:
    """The sealed day sets (each rewriting its week's), and the month sets the rollups
    make of them (the 24 months of the cohorts' lookback included, empty); the buckets'
    states, sealed."""
    numbers: dict[str, int] = {}
    months: dict[datetime, list] = {}
    for day, hours in sorted(days.items()):
        users = set().union(*hours.values())
        for key in sorted(users):
            numbers.setdefault(key, len(numbers))
        sets = usersets.Sets({usersets.ACTIVE: BitMap(numbers[k] for k in users)})
        usersets.sets_write(
            site_id=site.id,
            granularity="day",
            bucket=day,
            value=sets,
            ttl=aggregate_ttl("day"),
            now=timezone.now(),
        )
        months.setdefault(timebuckets.floor(day, "month"), []).append(sets)
    month = timebuckets.floor(first, "month")
    for _ in range(reader.LOOKBACK_MONTHS):
        month = timebuckets.floor(month - timedelta(days=1), "month")
        months.setdefault(month, [])
    ttl = aggregate_ttl("month")
    for month, parts in months.items():
        merged = usersets.sets_merge(parts)
        usersets.sets_write(
            site_id=site.id,
            granularity="month",
            bucket=month,
            value=merged,
            ttl=ttl,
            now=timezone.now(),
        )
    _states_sealed(site, first)


def _states_sealed(site, first: datetime) -> None:
    """The sealed bucket states the seals and rollups leave (every hour, day and month of
    the 12 weeks): what a cached answer's key aggregates."""
    end, now = first + timedelta(weeks=WEEKS), datetime.now(UTC)
    states = [
        BucketState(
            site=site, granularity=g, bucket=b, state=BucketState.SEALED, seals=1, sealed_at=now
        )
        for g in ("hour", "day", "month")
        for b in timebuckets.buckets_between(first, end, g)
    ]
    BucketState.objects.bulk_create(states, batch_size=2_000)


def main() -> None:
    users, runs = sizes(1_000_000, 20)
    site, today, _ = fresh_site("cohorts", WEEKS * 7)
    first = timebuckets.floor(today - timedelta(weeks=WEEKS + 1), "week")
    started = time.perf_counter()
    days = seed(site, users, first)
    seeded = time.perf_counter() - started
    write_sets(site, days, first)
    last = (first + timedelta(weeks=WEEKS) - timedelta(days=1)).date()
    params = {
        "period": "custom",
        "from": first.date().isoformat(),
        "to": last.isoformat(),
        "unit": "week",
    }
    now = datetime.now(UTC)
    query = reads.query_parse(params, now=now, zone=UTC)
    assert len(query.starts) == WEEKS, query.starts
    settle()
    raw_s, cold_s, rows, cold_rows = [], [], 0, 0
    for _ in range(3):
        began = time.perf_counter()
        rows = raw_scan(site, first)
        raw_s.append(time.perf_counter() - began)
        reader = ColdReader(site.id, [], now)
        began = time.perf_counter()
        cold = reads.triangle(reader, query)
        cold_s.append(time.perf_counter() - began)
        cold_rows = reader.rows

    def uncached() -> dict:
        cache.clear()
        return reads.cohorts(site.id, query, now=now)

    warm_figures, last_answer = interleaved(
        {"warm": lambda: reads.cohorts(site.id, query, now=now), "warm_uncached": uncached},
        runs=runs,
        warmup=3,
    )
    assert [r["counts"] for r in last_answer["warm"]["cohorts"]] == [
        r["counts"] for r in cold["cohorts"]
    ]
    raw_rate = rows / statistics.median(raw_s)
    cold_rate = cold_rows / statistics.median(cold_s)
    print(
        json.dumps(
            {
                "users": users,
                "raw_rows": rows,
                "seed_s": round(seeded, 1),
                "raw_rows_per_s": round(raw_rate),
                "cold_rows_per_s": round(cold_rate),
                "cold_ratio": round(cold_rate / raw_rate, 2),
                "cold_goal": GOAL_RATIO,
                "raw_s": [round(s, 2) for s in raw_s],
                "cold_s": [round(s, 2) for s in cold_s],
                **{k: round(v, 1) for k, v in warm_figures.items()},
                "goal_p95_ms": GOAL_MS,
                "cohort_sizes": [r["size"] for r in cold["cohorts"]],
            }
        )
    )


if __name__ == "__main__":
    main()
