"""Goal table benchmark (issue 39.5; run by bench/run.py, or alone; prints JSON).

A fresh UTC site gets GOALS goals (page view, custom event, click kinds) and 61 days of
sealed goal counts as the seal and its rollups store them (bucket_goals): per day and
goal a total row and rows per value of the nine breakdown dimensions, with sketches of
CONVERTING converting sessions' and users' keys (default 2,000 a day: full sketches),
today's hours the same; every bucket before the current hour is marked sealed. Once the
node has settled, rounds interleaved, in this process:

  (a) the dashboard's goal table over 30 days against the 30 before
      (`goal_table.dashboard_goals`: the stored days and hours, the merge, the rates);
  (b) the same filtered by source=Google (the per-value rows);
  (raw) the driver alone reading the same stored rows and columns (one row per goal and
      stored bucket of both periods: the visitors' sketches of the 30 days, the 30
      before's conversions; both periods at once), the floor of any read of them;
  (seal) what goals cost the seal: bench/sealing's hour of SEAL_EVENTS events (default
      50,000) sealed from its tallies without goals; with the five goals defined before
      the events came (ingest matched them into the tallies); with them defined after
      (their product scans the hour's raw rows); three times each, alternating; medians.

Each is taken three times (RUNS rounds each) and the median of the three reported.
Goal: p95 ≤ 150 ms for 30 days.

  DJANGO_SETTINGS_MODULE=clickstream.settings.local CASSANDRA_KEYSPACE=bench_goals \\
      python -m bench.goals [CONVERTING] [RUNS] [SEAL_EVENTS]
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
from types import SimpleNamespace
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clickstream.settings.local")
django.setup()

from cassandra.concurrent import execute_concurrent  # noqa: E402

from bench import SMOKE  # noqa: E402
from bench.node import settle  # noqa: E402
from bench.sealing import SHARDS, hour_of_events  # noqa: E402
from bench.timing import fresh_site, interleaved, sizes  # noqa: E402
from sessions_app.domain.aggregates.breakdowns import names  # noqa: E402
from sessions_app.domain.aggregates.goal_counts import TOTAL, GoalCount  # noqa: E402
from sessions_app.domain.aggregates.products import GOALS as GOAL_PRODUCT  # noqa: E402
from sessions_app.domain.aggregates.seal import aggregate_ttl, bucket_seal  # noqa: E402
from sessions_app.domain.aggregates.sketch import sketch_of  # noqa: E402
from sessions_app.domain.goals.defs import site_goals  # noqa: E402
from sessions_app.domain.jobs.goal_backfill import goal_save  # noqa: E402
from sessions_app.features.analysis import goal_table  # noqa: E402
from sessions_app.features.analysis.kpi_report import site_period  # noqa: E402
from sessions_app.foundation.core import timebuckets  # noqa: E402
from sessions_app.foundation.core.cql import cassandra_session, prepare  # noqa: E402
from sessions_app.foundation.models import BucketState, Goal, Site  # noqa: E402
from sessions_app.foundation.tables import bucket_goals  # noqa: E402

DAYS = 3 if SMOKE else 61
WARMUP = 1 if SMOKE else 3
GOAL_MS = 150.0
DEFINITIONS = {
    "Purchase": {"kind": "event", "name": "purchase"},
    "Pro signup": {
        "kind": "event",
        "name": "signup",
        "properties": [{"key": "plan", "op": "eq", "value": "pro"}],
    },
    "Pricing": {"kind": "pageview", "path": "/pricing"},
    "Docs": {"kind": "pageview", "path": "/docs/", "match": "prefix"},
    "Buy button": {"kind": "click", "selector": "button#buy"},
}
VALUES = {
    "source": ["Google", "(direct)", "Facebook", "newsletter"],
    "country": ["US", "DE", "GB", "FR", "IN"],
    "device": ["desktop", "mobile", "tablet"],
    "entry": ["/", "/pricing"] + [f"/products/{n}" for n in range(20)],
}


def _counts(rng: random.Random, digests: list[str], converting: int) -> dict[Any, GoalCount]:
    """One bucket's stored goal rows: a total and per-value rows of every goal."""
    found: dict[Any, GoalCount] = {}
    for digest in digests:
        keys = [f"u{rng.randrange(10**7)}" for _ in range(converting)]
        sketch = sketch_of(keys)
        found[digest, *TOTAL] = GoalCount(converting * 2, converting, converting, sketch, sketch)
        for dimension in names():
            values = VALUES.get(dimension, ["(none)"])
            for value in values:
                share = [k for k in keys if hash((k, value)) % len(values) == 0]
                small = sketch_of(share)
                found[digest, dimension, value] = GoalCount(
                    len(share) * 2, len(share), len(share), small, small
                )
    return found


def seed(site: Any, first: datetime, until: datetime, converting: int) -> dict[str, float]:
    """Sealed days from `first` to today and today's hours before `until`."""
    rng = random.Random(39)  # noqa: S311 - test data
    digests = [g.digest for g in site_goals(site.id)]
    now, states, rows = datetime.now(UTC), [], 0
    today = timebuckets.floor(until, "day")
    units = [("day", d) for d in timebuckets.buckets_between(first, today, "day")]
    units += [("hour", h) for h in timebuckets.buckets_between(today, until, "hour")]
    with ThreadPoolExecutor(8) as pool:
        futures = []
        for granularity, bucket in units:
            counts = _counts(rng, digests, converting if granularity == "day" else converting // 24)
            rows += len(counts)
            futures.append(
                pool.submit(
                    GOAL_PRODUCT.write,
                    site_id=site.id,
                    granularity=granularity,
                    bucket=bucket,
                    value=counts,
                    ttl=aggregate_ttl(granularity),
                    now=now,
                )
            )
            states.append(
                BucketState(
                    site=site,
                    granularity=granularity,
                    bucket=bucket,
                    state=BucketState.SEALED,
                    sealed_at=now,
                )
            )
        for future in futures:
            future.result()
    BucketState.objects.bulk_create(states, batch_size=2_000)
    return {"goal_rows": rows, "buckets": len(units)}


def _table(site: Any, params: dict[str, str]) -> int:
    period, _ = site_period(
        {"period": "30d", "compare": "previous", **params}, site=site, now=datetime.now(UTC)
    )
    answer: Any = SimpleNamespace(kpis=SimpleNamespace(visitors=100_000))
    table = goal_table.dashboard_goals(site_id=site.id, period=period, params=params, answer=answer)
    return sum(line.numbers.conversions for line in table.lines)


def _raw(site: Any, digests: list[str]) -> int:
    """The driver alone reading the rows both periods add up from, with the columns the
    table reads (goals.SLIM_READS): a total row per goal of each sealed day and of today's
    hours, the visitors' sketch of the 30 days, the conversions of the 30 before; both
    periods at once."""
    now = datetime.now(UTC)
    today, hour = timebuckets.floor(now, "day"), timebuckets.floor(now, "hour")
    days = timebuckets.buckets_between(today - timedelta(days=60), today, "day")
    current = [("day", d) for d in days[30:]]
    current += [("hour", h) for h in timebuckets.buckets_between(today, hour, "hour")]
    previous = [("day", d) for d in days[:30]]
    users, conversions = (
        prepare(bucket_goals.SELECT_VALUE_USERS),
        prepare(bucket_goals.SELECT_VALUE_CONVERSIONS),
    )
    work = [(users, (site.id, g, b, digests, "", "")) for g, b in current]
    work += [(conversions, (site.id, g, b, digests, "", "")) for g, b in previous]
    results = execute_concurrent(cassandra_session(), work, raise_on_first_error=True)
    return sum(len(list(rows)) for _, rows in results)


def seal_cost(events: int) -> dict[str, float]:
    """Seconds to seal one hour of `events` events from its tallies: without goals; with
    DEFINITIONS defined before the events came (ingest matched them: the steady state);
    with DEFINITIONS defined after (not in the tallies: their product scans the raw rows)."""
    hours = {}
    for name, goals_first in (("after", False), ("before", True)):
        site, _, _ = fresh_site(f"seal-goals-{name}", 1)
        Site.objects.filter(pk=site.pk).update(event_shards=SHARDS)
        if goals_first:
            _goals_define(site)
        hour = timebuckets.floor(datetime.now(UTC) - timedelta(hours=6), "hour")
        hour_of_events(site, hour, events)
        BucketState.objects.get_or_create(
            site=site, granularity="hour", bucket=hour, defaults={"shards": SHARDS}
        )
        hours[name] = (site, hour)
    taken: dict[str, list[float]] = {"none": [], "before": [], "after": []}
    for _ in range(3):
        for case in taken:
            site, hour = hours["before" if case == "before" else "after"]
            if case != "before":
                Goal.objects.filter(site=site).delete()
            if case == "after":
                _goals_define(site)
            settle()
            started = time.perf_counter()
            bucket_seal(site_id=site.id, hour=hour, now=datetime.now(UTC))
            taken[case].append(time.perf_counter() - started)
    return {
        "seal_events": events,
        "seal_s": statistics.median(taken["none"]),
        "seal_goals_s": statistics.median(taken["before"]),
        "seal_goals_after_s": statistics.median(taken["after"]),
    }


def _goals_define(site: Any) -> None:
    for name, definition in DEFINITIONS.items():
        goal_save(site=site, name=name, definition=definition, now=datetime.now(UTC))


def main() -> None:
    converting, runs = sizes(2_000, 30)
    site, _today, first = fresh_site("goals", DAYS)
    for name, definition in DEFINITIONS.items():
        goal_save(site=site, name=name, definition=definition, now=datetime.now(UTC))
    digests = [g.digest for g in site_goals(site.id)]
    started = time.monotonic()
    seeded = seed(site, first, timebuckets.floor(datetime.now(UTC), "hour"), converting)
    seeded["seed_s"] = round(time.monotonic() - started, 1)
    seeded["settled_after_s"] = settle()
    calls = {
        "goals30": lambda: _table(site, {}),
        "goals30_filter": lambda: _table(site, {"source": "Google"}),
        "raw30": lambda: _raw(site, digests),
    }
    taken = [interleaved(calls, runs=runs, warmup=WARMUP) for _ in range(3)]
    figures = {name: statistics.median(t[0][name] for t in taken) for name in taken[0][0]}
    last = taken[-1][1]
    assert last["goals30"] > last["goals30_filter"] > 0, last
    sealed = seal_cost(int(sys.argv[3]) if len(sys.argv) > 3 else 50_000)
    print(
        json.dumps(
            {
                **seeded,
                **sealed,
                "goals": len(digests),
                "converting_per_day": converting,
                "runs": runs,
                "goal_ms": GOAL_MS,
                "raw_rows": last["raw30"],
                **figures,
            }
        )
    )


if __name__ == "__main__":
    main()
