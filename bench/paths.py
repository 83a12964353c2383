"""Paths and transitions benchmark (issue 27.7; run by bench/run.py, or alone; prints JSON).

A fresh site gets 30 sealed days of paths from synthetic sessions: SESSIONS_PER_DAY a day
(default 7,000), each 1-12 page views (mean ~4.8: ~1,000,000 page views in all) over 150
pages picked with a Zipf-like skew. Each day is counted with the seal's own code
(`aggregates.path_grams.session_count`, `paths.stored_of`) and written with its writer
(`paths_write`) as the day's rollup would write it, and its BucketState marked sealed.
Once the node has settled, these are timed in this process, rounds interleaved:

  (a) top paths from the session start over the 30 days: the Sankey and the most common
      whole paths (`paths.reads.paths_answer`, what the API returns);
  (b) transitions of the most viewed product page (`paths.reads.transitions_answer`);
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
import time
from datetime import UTC, datetime, timedelta

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clickstream.settings.local")
django.setup()


from bench import SMOKE  # noqa: E402
from bench.node import settle  # noqa: E402
from bench.timing import fresh_site, interleaved, raw_rows, sizes  # noqa: E402
from sessions_app.domain.aggregates import path_grams, paths  # noqa: E402
from sessions_app.domain.aggregates.path_grams import ENTRANCE  # noqa: E402
from sessions_app.domain.aggregates.paths import FROM  # noqa: E402
from sessions_app.domain.aggregates.seal import aggregate_ttl  # noqa: E402
from sessions_app.features.paths.reads import PathQuery, paths_answer, transitions_answer  # noqa: E402
from sessions_app.foundation.core import timebuckets  # noqa: E402
from sessions_app.foundation.models import BucketState  # noqa: E402
from sessions_app.foundation.tables import bucket_paths  # noqa: E402

DAYS = 3 if SMOKE else 30
PAGES = ["/", "/pricing", "/cart", "/checkout", "/search"] + [f"/product/{i}" for i in range(145)]
WEIGHTS = [1 / (rank + 1) ** 0.9 for rank in range(len(PAGES))]
WARMUP = 1 if SMOKE else 5
GOAL_MS = 200.0


def seed(site, per_day: int, first_day: datetime) -> dict:
    """Count and write DAYS sealed days of paths; return how many page views they hold."""
    rng = random.Random(27)  # noqa: S311 - test data
    views = 0
    ttl = aggregate_ttl("day")
    now = datetime.now(UTC)
    for offset in range(DAYS):
        day = first_day + timedelta(days=offset)
        counts = path_grams.PathCounts()
        for _ in range(per_day):
            pages = rng.choices(PAGES, WEIGHTS, k=rng.randrange(1, 13) if rng.random() < 0.7 else 1)
            views += len(pages)
            path_grams.session_count(
                counts, [ENTRANCE], pages, rng.choice(["google", "direct", "(none)"])
            )
        paths.paths_write(
            site_id=site.id,
            granularity="day",
            bucket=day,
            value=paths.stored_of(counts),
            ttl=ttl,
            now=now,
        )
        BucketState.objects.update_or_create(
            site=site,
            granularity="day",
            bucket=day,
            defaults={"state": BucketState.SEALED, "sealed_at": now},
        )
    return {"page_views": views, "sessions": per_day * DAYS}


def main() -> None:
    per_day, runs = sizes(7_000, 60)
    site, today, first_day = fresh_site("paths", DAYS)
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
        "raw": lambda: raw_rows(
            bucket_paths.SELECT_ANCHOR, [(site.id, "day", d, FROM, ENTRANCE) for d in days]
        ),
    }
    figures, last = interleaved(calls, runs=runs, warmup=WARMUP)
    print(
        json.dumps(
            {
                **seeded,
                "runs": runs,
                "paths_nodes": len(last["paths"]["nodes"]),
                "paths_top": len(last["paths"]["paths"]),
                "transitions_views": last["transitions"]["views"],
                "raw_rows": last["raw"],
                **figures,
                "goal_p95_ms": GOAL_MS,
            }
        )
    )


if __name__ == "__main__":
    main()
