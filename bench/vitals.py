"""Web vitals read benchmark (issue 40.4; run by bench/run.py, or alone; prints JSON).

A fresh site gets 31 sealed days of web vitals counted with the seal's own code
(`aggregates.vitals.vitals_count`, `stored_of`) from synthetic `$vitals` events and
written with its writer (`vitals_write`) as the day's rollup writes them: VIEWS_PER_DAY
page views a day (default 36,000: over a million in the 29 sealed days of "30d", whose
30th is today, live), each with all five metrics and their elements, over 200 pages, 3
devices, 20 countries and 6 browsers. Once the node has settled, these are timed in this
process, rounds interleaved:

  (app) the Performance page's cards and trend over the last 30 days: the p75, the
        shares and the trend of every metric (`vitals.reads.summary_answer`, what
        /api/sites/<id>/vitals answers besides its pages, without HTTP);
  (raw) the driver alone reading the same rows (bucket_vitals.SELECT_LEVEL, level 0,
        the days at once): the floor of any read of the stored vitals.

Goal: p95 ≤ 100 ms for (app).

  DJANGO_SETTINGS_MODULE=clickstream.settings.local CASSANDRA_KEYSPACE=bench_vitals \\
      python -m bench.vitals [VIEWS_PER_DAY] [RUNS]
      python -m bench.vitals again [RUNS]   # the last seeded site, timed again (seeded today)
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clickstream.settings.local")
django.setup()


from bench.node import settle  # noqa: E402
from bench.timing import fresh_site, interleaved, raw_rows, sizes  # noqa: E402
from sessions_app.domain.aggregates import vitals  # noqa: E402
from sessions_app.domain.aggregates.seal import aggregate_ttl  # noqa: E402
from sessions_app.domain.aggregates.vitals_rows import vitals_write  # noqa: E402
from sessions_app.features.vitals.reads import summary_answer  # noqa: E402
from sessions_app.features.web.periods import period_param  # noqa: E402
from sessions_app.foundation.core import timebuckets  # noqa: E402
from sessions_app.foundation.models import BucketState, Site  # noqa: E402
from sessions_app.foundation.tables import bucket_vitals  # noqa: E402

DAYS = 31  # "30d" begins 29 days before today's midnight: the days before are sealed
PAGES = [f"/shop/item-{i}" for i in range(200)]
DEVICES = ["desktop", "mobile", "tablet"]
COUNTRIES = [
    "DE",
    "US",
    "FR",
    "GB",
    "NL",
    "ES",
    "IT",
    "PL",
    "SE",
    "BR",
    "IN",
    "JP",
    "CA",
    "AU",
    "AT",
    "CH",
    "BE",
    "DK",
    "NO",
    "FI",
]
BROWSERS = ["Chrome", "Safari", "Firefox", "Edge", "Samsung Internet", "Opera"]
ELEMENTS = [f"main>section:nth-child({i})>img.hero-{i}" for i in range(40)]
WARMUP = 5
GOAL_MS = 100.0


def _day_events(rng: random.Random, views: int) -> list[dict]:
    events = []
    for n in range(views):
        slow = rng.random() < 0.2
        props = {
            "pageview": f"pv-{n}",
            "lcp": round(rng.lognormvariate(7.6 if slow else 7.3, 0.5), 1),
            "lcp_el": rng.choice(ELEMENTS),
            "inp": round(rng.lognormvariate(5, 0.6), 1),
            "inp_el": rng.choice(ELEMENTS),
            "cls": 0 if rng.random() < 0.4 else round(rng.lognormvariate(-3, 1), 6),
            "cls_el": rng.choice(ELEMENTS),
            "fcp": round(rng.lognormvariate(7, 0.5), 1),
            "ttfb": round(rng.lognormvariate(5.8, 0.6), 1),
        }
        layout = {
            "dev": rng.choices(DEVICES, [5, 4, 1])[0],
            "cc": rng.choice(COUNTRIES),
            "br": rng.choices(BROWSERS, [6, 3, 1, 1, 1, 1])[0],
        }
        page = PAGES[min(int(rng.expovariate(1 / 30)), len(PAGES) - 1)]
        events.append(
            {
                "type": "custom",
                "name": vitals.NAME,
                "url": "https://shop.example" + page,
                "props": props,
                "layout": layout,
            }
        )
    return events


def seed(site, views: int, first_day: datetime) -> tuple[int, dict[str, float]]:
    """Write the days; return the page views and the mean bytes of a site-level sketch."""
    rng = random.Random(40)  # noqa: S311 - test data
    ttl, now = aggregate_ttl("day"), datetime.now(UTC)
    sketch_bytes: dict[str, list[int]] = {m.name: [] for m in vitals.METRICS}
    for offset in range(DAYS):
        day = first_day + timedelta(days=offset)
        stored = vitals.stored_of(vitals.vitals_count(_day_events(rng, views)))
        for name, sketch in stored[0, vitals.SITE].sketches.items():
            sketch_bytes[name].append(len(vitals.sketch_pack(sketch)))
        vitals_write(site_id=site.id, granularity="day", bucket=day, value=stored, ttl=ttl, now=now)
        BucketState.objects.update_or_create(
            site=site,
            granularity="day",
            bucket=day,
            defaults={"state": BucketState.SEALED, "sealed_at": now},
        )
    return views * DAYS, {n: sum(b) / len(b) for n, b in sketch_bytes.items()}


def main() -> None:
    again = sys.argv[1:2] == ["again"]  # time the last seeded site again (no reseeding)
    if again:
        sys.argv.pop(1)
    views, runs = sizes(36_000, 60)
    if again:
        site = Site.objects.filter(name__startswith="vitals-").order_by("-created_at").first()
        assert site is not None, "no seeded site: run python -m bench.vitals first"
        first_day = timebuckets.floor(datetime.now(UTC), "day") - timedelta(days=DAYS)
        figures_seed: dict[str, object] = {"site": str(site.id)}
    else:
        site, _, first_day = fresh_site("vitals", DAYS)
        started = time.monotonic()
        seeded, sketch_bytes = seed(site, views, first_day)
        figures_seed = {
            "page_views": seeded,
            "seed_s": time.monotonic() - started,
            "site_sketch_bytes": sketch_bytes,
        }
    figures_seed["settled_after_s"] = settle()
    period = period_param({"period": "30d"}, zone=ZoneInfo("UTC"), now=datetime.now(UTC))
    days = [d for d in (first_day + timedelta(days=i) for i in range(DAYS)) if d >= period.start]
    calls = {
        "app": lambda: summary_answer(site_id=site.id, period=period, filters={}),
        "raw": lambda: raw_rows(bucket_vitals.SELECT_LEVEL, [(site.id, "day", d, 0) for d in days]),
    }
    figures, last = interleaved(calls, runs=runs, warmup=WARMUP)
    answer = last["app"]
    print(
        json.dumps(
            {
                **figures_seed,
                "runs": runs,
                "measured": {m["name"]: m["n"] for m in answer["metrics"]},
                "p75": {m["name"]: m["p75"] for m in answer["metrics"]},
                "live_hours": answer["live_hours"],
                "raw_rows": last["raw"],
                **figures,
                "goal_p95_ms": GOAL_MS,
            }
        )
    )


if __name__ == "__main__":
    main()
