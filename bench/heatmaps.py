"""Heatmap read benchmark (issue 28.7; run by bench/run.py, or alone; prints JSON).

A fresh site gets 31 sealed days of heatmaps counted with the seal's own code
(`aggregates.heatmaps.heat_count`, `stored_of`) from synthetic clicks and `$pageleave`
readings and written with its writer (`heat_write`) as the day's rollup writes them:
CLICKS_PER_DAY clicks a day (default 20,000) on the measured page, spread over three
layouts, 400 elements and the whole document, with rage and dead clicks, 5,000 scroll
readings a day, and 40 other pages beside it. Once the node has settled, these are timed
in this process, rounds interleaved:

  (app) the overlay's answer for the page over the last 30 days in its busiest layout
        (`heatmaps.reads.range_answer` over the range /api/heatmap reads, without HTTP);
  (raw) the driver alone reading the same rows (bucket_heatmaps.SELECT_LAYOUT, the
        days at once): the floor of any read of a stored heatmap.

Goal: p95 ≤ 100 ms for (app).

  DJANGO_SETTINGS_MODULE=clickstream.settings.local CASSANDRA_KEYSPACE=bench_heatmaps \\
      python -m bench.heatmaps [CLICKS_PER_DAY] [RUNS]
"""

from __future__ import annotations

import json
import os
import random
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clickstream.settings.local")
django.setup()


from bench.node import settle  # noqa: E402
from bench.timing import fresh_site, interleaved, raw_rows, sizes  # noqa: E402
from sessions_app.domain.aggregates import heatmaps  # noqa: E402
from sessions_app.domain.aggregates.heatmap_rows import heat_write  # noqa: E402
from sessions_app.domain.aggregates.seal import aggregate_ttl  # noqa: E402
from sessions_app.features.heatmaps.ranges import heatmap_range  # noqa: E402
from sessions_app.features.heatmaps.reads import range_answer  # noqa: E402
from sessions_app.foundation.core import timebuckets  # noqa: E402
from sessions_app.foundation.models import BucketState  # noqa: E402
from sessions_app.foundation.tables import bucket_heatmaps  # noqa: E402

DAYS = 31  # the overlay's 30 days begin at a midnight: 31 day rows
PAGE = "/pricing"
OTHERS = [f"/docs/{i}" for i in range(40)]
LAYOUTS = ["<640", "640-1024", ">1024"]
ELEMENTS = [f"main > section:nth-child({i // 20}) > a.item-{i}" for i in range(400)]
WARMUP = 5
GOAL_MS = 100.0


def _day_events(rng: random.Random, clicks: int, day: datetime) -> list[dict]:
    events: list[dict] = []
    for n in range(clicks):
        who = {
            "ts": day + timedelta(seconds=rng.randrange(86_400)),
            "user_key": f"u{n % 5000}",
            "event_id": uuid.UUID(int=rng.getrandbits(128)),
            "session_id": f"s{n % 7000}",
        }
        page = PAGE if n % 4 else rng.choice(OTHERS)
        layout = {
            "vp": rng.choices(LAYOUTS, [2, 1, 5])[0],
            "x": round(min(0.9999, abs(rng.gauss(0.5, 0.2))), 4),
            "y": int(abs(rng.gauss(900, 1500))),
            "ex": round(rng.random(), 3),
            "ey": round(rng.random(), 3),
        }
        if rng.random() < 0.03:
            layout["rage"] = True
        if rng.random() < 0.05:
            layout["dead"] = True
        element = {"selector": ELEMENTS[min(int(rng.expovariate(1 / 60)), 399)]}
        events.append(
            {
                "type": "click",
                "url": "https://shop.example" + page,
                "layout": layout,
                "element": element,
                **who,
            }
        )
    for n in range(clicks // 4):
        props = {
            "pageview": f"pv-{day.date()}-{n}",
            "scroll": rng.randrange(0, 101),
            "fold": rng.choice([640, 800, 900, 1080]),
        }
        events.append(
            {
                "type": "custom",
                "name": heatmaps.LEAVE,
                "props": props,
                "url": "https://shop.example" + PAGE,
                "layout": {"vp": rng.choices(LAYOUTS, [2, 1, 5])[0]},
            }
        )
    return events


def seed(site, clicks: int, first_day: datetime) -> int:
    rng = random.Random(28)  # noqa: S311 - test data
    ttl, now = aggregate_ttl("day"), datetime.now(UTC)
    for offset in range(DAYS):
        day = first_day + timedelta(days=offset)
        counted = heatmaps.heat_count(_day_events(rng, clicks, day))
        heat_write(
            site_id=site.id,
            granularity="day",
            bucket=day,
            value=heatmaps.stored_of(counted),
            ttl=ttl,
            now=now,
        )
        BucketState.objects.update_or_create(
            site=site,
            granularity="day",
            bucket=day,
            defaults={"state": BucketState.SEALED, "sealed_at": now},
        )
    return clicks * DAYS


def _overlay(site_id: Any) -> dict[str, Any]:
    """What /api/heatmap answers for an old link (its default range, the last 30 days)."""
    covered = heatmap_range({}, zone=ZoneInfo("UTC"), now=datetime.now(UTC), default="30d")
    answer, _ = range_answer(
        site_id=site_id, page=PAGE, vp=">1024", start=covered.start, end=covered.end
    )
    return answer


def main() -> None:
    clicks, runs = sizes(20_000, 60)
    site, today, first_day = fresh_site("heatmaps", DAYS)
    started = time.monotonic()
    seeded = {"clicks": seed(site, clicks, first_day), "seed_s": time.monotonic() - started}
    seeded["settled_after_s"] = settle()
    days = timebuckets.buckets_between(today - timedelta(days=30), today, "day")  # app's rows
    calls = {
        "app": lambda: _overlay(site.id),
        "raw": lambda: raw_rows(
            bucket_heatmaps.SELECT_LAYOUT, [(site.id, "day", d, PAGE, ">1024") for d in days]
        ),
    }
    figures, last = interleaved(calls, runs=runs, warmup=WARMUP)
    answer = last["app"]
    print(
        json.dumps(
            {
                **seeded,
                "runs": runs,
                "page_clicks": answer["clicks"],
                "cells": len(answer["grid"]["cells"]),
                "elements": len(answer["elements"]),
                "scroll_views": answer["scroll"]["views"],
                "live_hours": answer["live_hours"],
                "raw_rows": last["raw"],
                **figures,
                "goal_p95_ms": GOAL_MS,
            }
        )
    )


if __name__ == "__main__":
    main()
