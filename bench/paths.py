"""Paths and transitions benchmark (issue 27.7; run by bench/run.py, or alone; prints JSON).

A fresh site gets 30 sealed days of paths from synthetic sessions: SESSIONS_PER_DAY a day
(default 7,000), each 1-12 page views (mean ~4.8: ~1,000,000 page views in all) over 150
pages picked with a Zipf-like skew. Each day is counted with the seal's own code
(`aggregates.paths.session_count`, `stored_of`) and written with its writer
(`paths_write`) as the day's rollup would write it, and its BucketState marked sealed.
Once the node has settled, these are timed in this process, rounds interleaved:

  (a) top paths from the session start over the 30 days: the Sankey and the most common
      whole paths (`api.paths.paths_answer`, what the API returns);
  (b) transitions of the most viewed product page (`api.paths.transitions_answer`);
  (raw) the driver alone reading the same rows (bucket_paths.SELECT_ANCHOR, the 30 days
      at once): the floor of any read of stored paths.

Goal: p95 ≤ 200 ms for (a) and (b).

  DJANGO_SETTINGS_MODULE=clickstream.settings.local CASSANDRA_KEYSPACE=bench_paths \\
      python -m bench.paths [SESSIONS_PER_DAY] [RUNS]
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clickstream.settings.local")
django.setup()

from cassandra.concurrent import execute_concurrent_with_args  # noqa: E402

from bench.node import settle  # noqa: E402
from sessions_app.aggregates import paths  # noqa: E402
from sessions_app.aggregates.paths import ENTRANCE, FROM  # noqa: E402
from sessions_app.aggregates.seal import aggregate_ttl  # noqa: E402
from sessions_app.analysis.paths import PathQuery  # noqa: E402
from sessions_app.api.paths import paths_answer, transitions_answer  # noqa: E402
from sessions_app.core import timebuckets  # noqa: E402
from sessions_app.core.cql import cassandra_session, prepare  # noqa: E402
from sessions_app.models import BucketState  # noqa: E402
from sessions_app.sites import services  # noqa: E402
from sessions_app.tables import bucket_paths  # noqa: E402

DAYS = 30
PAGES = ["/", "/pricing", "/cart", "/checkout", "/search"] + [f"/product/{i}" for i in range(145)]
WEIGHTS = [1 / (rank + 1) ** 0.9 for rank in range(len(PAGES))]
WARMUP = 5
GOAL_MS = 200.0


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def seed(site, per_day: int, first_day: datetime) -> dict:
    """Count and write DAYS sealed days of paths; return how many page views they hold."""
    rng = random.Random(27)  # noqa: S311 - test data
    views = 0
    ttl = aggregate_ttl("day")
    now = datetime.now(UTC)
    for offset in range(DAYS):
        day = first_day + timedelta(days=offset)
        counts = paths.PathCounts()
        for _ in range(per_day):
            pages = rng.choices(PAGES, WEIGHTS, k=rng.randrange(1, 13) if rng.random() < 0.7 else 1)
            views += len(pages)
            paths.session_count(
                counts, [ENTRANCE], pages, rng.choice(["google", "direct", "(none)"])
            )
        paths.paths_write(
            site_id=site.id, granularity="day", bucket=day, stored=paths.stored_of(counts),
            ttl=ttl, now=now,
        )  # fmt: skip
        BucketState.objects.update_or_create(
            site=site, granularity="day", bucket=day,
            defaults={"state": BucketState.SEALED, "sealed_at": now},
        )  # fmt: skip
    return {"page_views": views, "sessions": per_day * DAYS}


def raw_read(site_id, days: list[datetime], side: str, anchor: str) -> int:
    statement = prepare(bucket_paths.SELECT_ANCHOR)
    results = execute_concurrent_with_args(
        cassandra_session(), statement, [(site_id, "day", d, side, anchor) for d in days]
    )
    return sum(len(list(r.result_or_exc)) for r in results)


def main() -> None:
    per_day = int(sys.argv[1]) if len(sys.argv) > 1 else 7_000
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    site = services.site_create(name=f"paths-{int(time.time())}", origins=[])
    today = timebuckets.floor(datetime.now(UTC), "day")
    first_day = today - timedelta(days=DAYS)
    started = time.monotonic()
    seeded = seed(site, per_day, first_day)
    seeded["seed_s"] = time.monotonic() - started
    seeded["settled_after_s"] = settle()
    query = PathQuery(first_day, today)
    product = PathQuery(first_day, today, FROM, "/pricing")
    days = timebuckets.buckets_between(first_day, today, "day")
    calls = {
        "paths": lambda: paths_answer(site.id, query),
        "transitions": lambda: transitions_answer(site.id, product),
        "raw": lambda: raw_read(site.id, days, FROM, ENTRANCE),
    }
    times: dict[str, list[float]] = {name: [] for name in calls}
    last = {}
    for _ in range(WARMUP + runs):
        for name, call in calls.items():
            began = time.perf_counter()
            last[name] = call()
            times[name].append((time.perf_counter() - began) * 1000)
    figures = {name: values[WARMUP:] for name, values in times.items()}
    print(json.dumps({
        **seeded,
        "runs": runs,
        "paths_nodes": len(last["paths"]["nodes"]),
        "paths_top": len(last["paths"]["paths"]),
        "transitions_views": last["transitions"]["views"],
        "raw_rows": last["raw"],
        **{f"{n}_p50_ms": statistics.median(v) for n, v in figures.items()},
        **{f"{n}_p95_ms": _pct(v, 0.95) for n, v in figures.items()},
        "goal_p95_ms": GOAL_MS,
    }))  # fmt: skip


if __name__ == "__main__":
    main()
