"""Dashboard benchmark (issue 37.8; run by bench/run.py, or alone; prints JSON).

A fresh UTC site gets 13 months of sealed hours: VISITS_PER_HOUR synthetic visits an hour
(default 40; 1-6 page views and a few clicks each, ~110 events an hour: over 1,000,000
events), with sources, countries, devices and durations drawn skewed. Each hour is
counted with the seal's own code (`totals.count_started`, `breakdowns.breakdown_count` on
the visits' site_sessions-shaped rows) and written with the products' writers; days and
months are merged and written as their rollups would be (breakdowns only for days and
months, what a report of whole UTC days reads), and every bucket before the current hour
is marked sealed. Once the node has settled, rounds interleaved, in this process:

  (a) the dashboard's numbers for 30 days against the previous 30 (`period_report`, the
      KPI cards, the chart data and the breakdown rows: the dashboard view's work, less
      its template, the latest-sessions feed and the realtime panel);
  (b) the same for the last 12 months against the 12 before;
  (c) a single-dimension filter (source=Google) over 30 days from the sealed breakdowns
      (`breakdown_kpis`);
  (raw) the driver alone reading the same stored rows (the aggregate slices and the
      breakdown partitions of both periods), the floor of any read of them;
  (pages) the whole dashboard page (Django's test client: the view, its template, the
      session and the middleware) for 30 days filtered by source=Google three ways: the
      filters in the URL, a saved segment applied (its query), and a share link locked to
      that segment (issue 61.6: each within 1.1 of the first, per round's p50, median of
      the three rounds).

Each is taken three times (RUNS rounds each) and the median of the three reported, in a
process whose cycle collector is set as a web worker's (clickstream/wsgi.py: tune_gc).
Goals: p95 ≤ 150 ms for 30 days, ≤ 250 ms for 12 months, a filter within the same.

  DJANGO_SETTINGS_MODULE=clickstream.settings.local CASSANDRA_KEYSPACE=bench_dashboard \\
      python -m bench.dashboard [VISITS_PER_HOUR] [RUNS] [SITE_ID]

(SITE_ID: time a site an earlier run seeded, printed on its stderr, instead of seeding.)
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

from django.conf import settings  # noqa: E402

from bench import SMOKE  # noqa: E402
from bench.node import settle  # noqa: E402
from bench.timing import interleaved, raw_rows, sizes  # noqa: E402
from sessions_app.domain.aggregates import breakdowns, totals  # noqa: E402
from sessions_app.domain.aggregates.kpis import kpi_cards  # noqa: E402
from sessions_app.domain.aggregates.products import BREAKDOWNS, TOTALS  # noqa: E402
from sessions_app.domain.aggregates.seal import aggregate_ttl  # noqa: E402
from sessions_app.domain.aggregates.sketch import sketch_of  # noqa: E402
from sessions_app.domain.aggregates.stored import aggregates_range  # noqa: E402
from sessions_app.domain.ledger import sites  # noqa: E402
from sessions_app.features.analysis.kpi_report import (  # noqa: E402
    breakdown_kpis,
    chart_data,
    period_report,
    site_period,
)
from sessions_app.foundation.core import timebuckets  # noqa: E402
from sessions_app.foundation.core.garbage import tune_gc  # noqa: E402
from sessions_app.foundation.models import BucketState, Site  # noqa: E402
from sessions_app.foundation.tables import bucket_aggregates, bucket_breakdowns  # noqa: E402

MONTHS = 2 if SMOKE else 13
WARMUP = 1 if SMOKE else 3
GOALS_MS = {"days30": 150.0, "months12": 250.0, "filter30": 150.0}
GOAL_PAGE_RATIO = 1.1  # a segment's or a share link's page against the filters in the URL
SOURCES = {"Google": 40, "(direct)": 30, "Facebook": 8, "newsletter": 6, "Bing": 4}
COUNTRIES = {"US": 30, "DE": 12, "GB": 9, "FR": 7, "IN": 6, "BR": 5, "NO": 1}
DEVICES = {"desktop": 55, "mobile": 38, "tablet": 7}
PAGES = ["/", "/pricing", "/cart", "/checkout"] + [f"/products/{n}" for n in range(30)]


def _pick(rng: random.Random, weights: dict[str, int]) -> str:
    return rng.choices(list(weights), list(weights.values()))[0]


# A synthetic session's start: only its span (last seen - started) is counted.
START = datetime(2026, 1, 1, tzinfo=UTC)


def _hour(rng: random.Random, visits: int) -> tuple[totals.Aggregates, breakdowns.Breakdown]:
    """One hour's aggregates and breakdown, counted with the seal's code from synthetic
    visits (site_sessions-shaped rows)."""
    rows, views, clicks, users = [], 0, 0, set()
    for _ in range(visits):
        pages = rng.choices(PAGES, k=rng.choice([1, 1, 2, 3, 4, 6]))
        views += len(pages)
        session_clicks = rng.randrange(0, 3)
        clicks += session_clicks
        user = f"u{rng.randrange(200_000)}"
        users.add(user)
        duration = rng.choice([0, 8, 45, 130, 600])
        rows.append(
            {
                "is_bot": False,
                "user_key": user,
                "pageview_count": len(pages),
                "event_count": len(pages) + session_clicks,
                "converted": rng.random() < 0.04,
                "duration_s": duration,
                "started_at": START,
                "last_seen_at": START + timedelta(seconds=duration),
                "source": _pick(rng, SOURCES),
                "medium": None,
                "campaign": None,
                "country": _pick(rng, COUNTRIES),
                "device": _pick(rng, DEVICES),
                "browser": "Chrome",
                "os": None,
                "entry_path": pages[0],
                "exit_path": pages[-1],
            }
        )
    result = totals.Aggregates(
        events=views + clicks,
        by_type={"pageview": views, "click": clicks},
        users=len(users),
        users_sketch=sketch_of(users),
    )
    totals.count_started(result, rows)  # sessions, bounces, durations, visit counters
    return result, breakdowns.breakdown_count(rows)


def seed(site: Any, per_hour: int, first: datetime, until: datetime) -> dict[str, int]:
    """Write sealed hours from `first` to `until`, their days and months; return counts."""
    rng = random.Random(37)  # noqa: S311 - test data
    now, events, states = datetime.now(UTC), 0, []
    days: dict[datetime, list[Any]] = {}
    pool, ttl, written = ThreadPoolExecutor(16), aggregate_ttl("hour"), []
    for hour in timebuckets.buckets_between(first, until, "hour"):
        result, breakdown = _hour(rng, per_hour)
        events += result.events
        written.append(
            pool.submit(
                TOTALS.write,
                site_id=site.id,
                granularity="hour",
                bucket=hour,
                value=result,
                ttl=ttl,
                now=now,
            )
        )
        days.setdefault(timebuckets.floor(hour, "day"), []).append((result, breakdown))
        states.append(
            BucketState(
                site=site, granularity="hour", bucket=hour, state=BucketState.SEALED, sealed_at=now
            )
        )
    for future in written:
        future.result()
    pool.shutdown()
    months: dict[datetime, list[Any]] = {}
    for day, parts in days.items():
        if timebuckets.next_start(day, "day") > until:
            continue  # today: its hours only
        merged = _write(site, "day", day, parts, now)
        months.setdefault(timebuckets.floor(day, "month"), []).append(merged)
        states.append(
            BucketState(
                site=site, granularity="day", bucket=day, state=BucketState.SEALED, sealed_at=now
            )
        )
    for month, parts in months.items():
        if timebuckets.next_start(month, "month") <= until:
            _write(site, "month", month, parts, now)
            states.append(
                BucketState(
                    site=site,
                    granularity="month",
                    bucket=month,
                    state=BucketState.SEALED,
                    sealed_at=now,
                )
            )
    BucketState.objects.bulk_create(states, batch_size=2_000)
    return {"events": events, "hours": len(states)}


def _write(site: Any, granularity: str, bucket: datetime, parts: list[Any], now: datetime) -> Any:
    merged = (
        totals.aggregates_merge([p[0] for p in parts]),
        breakdowns.breakdown_merge([p[1] for p in parts]),
    )
    ttl = aggregate_ttl(granularity)
    TOTALS.write(
        site_id=site.id, granularity=granularity, bucket=bucket, value=merged[0], ttl=ttl, now=now
    )
    BREAKDOWNS.write(
        site_id=site.id, granularity=granularity, bucket=bucket, value=merged[1], ttl=ttl, now=now
    )
    return merged


def _dashboard(site: Any, key: str) -> int:
    """The dashboard view's work for one period (less template, feed and realtime)."""
    period, _ = site_period(
        {"period": key, "compare": "previous"}, site=site, now=datetime.now(UTC)
    )
    result = period_report(site=site, period=period)
    kpi_cards(result.kpis, result.previous, conversion=result.conversion)
    chart_data(result, metric="visitors")
    breakdowns.breakdown_rows(result.current["breakdowns"], top=8)
    return len(result.current["buckets"])


def _raw(site: Any, key: str) -> int:
    """The driver alone reading the stored rows a period and its comparison add up from:
    the sealed day (or month) slice, today's hours, and their breakdown partitions."""
    now = datetime.now(UTC)
    today, hour = timebuckets.floor(now, "day"), timebuckets.floor(now, "hour")
    month = timebuckets.floor(today, "month")
    if key == "30d":
        first, granularity = today - timedelta(days=60), "day"
        units = [("day", d) for d in timebuckets.buckets_between(first, today, "day")]
    else:
        first, granularity = timebuckets.floor(today - timedelta(days=2 * 366), "month"), "month"
        units = [("month", m) for m in timebuckets.buckets_between(first, month, "month")]
        units += [("day", d) for d in timebuckets.buckets_between(month, today, "day")]
    slices = [(site.id, granularity, first, today, 2_000), (site.id, "hour", today, hour, 2_000)]
    rows = raw_rows(bucket_aggregates.SELECT_RANGE, slices)
    partitions = [(site.id, g, b) for g, b in units]
    return rows + raw_rows(bucket_breakdowns.SELECT_BUCKET, partitions)


def _filter(site: Any) -> bool:
    period, _ = site_period({"period": "30d"}, site=site, now=datetime.now(UTC))
    return breakdown_kpis(site=site, period=period, dimension="source", value="Google") is not None


def _pages(site: Any) -> dict[str, Any]:
    """The three ways to the same filtered dashboard page: a member's URL with the filters,
    the same through a saved segment's query, a share link locked to that segment."""
    from django.contrib.auth.models import User
    from django.test import Client

    from sessions_app.domain.permissions import ADMIN
    from sessions_app.features.segments import defs as segments
    from sessions_app.features.sharing import defs as sharing
    from sessions_app.foundation.models import SiteMembership

    settings.SHARE_LINK_RATE = 10**9  # the bench's rounds are not a viewer to slow down
    user, _ = User.objects.get_or_create(username=f"bench-{site.id}")
    SiteMembership.objects.update_or_create(user=user, site=site, defaults={"role": ADMIN})
    member, viewer = Client(HTTP_HOST="127.0.0.1"), Client(HTTP_HOST="127.0.0.1")
    member.force_login(user)
    segment = segments.segment_save(
        site=site,
        user=user,
        name=f"Google {time.time()}",
        filters={"source": "Google"},
        shared=False,
    )
    query = segments.shown(site, [segment])[0].query
    link = sharing.link_create(site=site, user=user, name="bench", segment=segment.pk)

    def get(client: Any, url: str) -> int:
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
        return len(response.content)

    return {
        "page_filters": lambda: get(member, f"/sites/{site.id}/?period=30d&source=Google"),
        "page_segment": lambda: get(member, f"/sites/{site.id}/?period=30d&{query}"),
        "page_share": lambda: get(viewer, f"/share/{link.slug}/?period=30d"),
    }


def _reused(site_id: str) -> tuple[Any, dict[str, Any]]:
    """A site an earlier run seeded (its seed takes minutes), and the events it holds:
    its sealed months and days, and the hours since."""
    site = Site.objects.get(pk=site_id)
    now = datetime.now(UTC)
    first = timebuckets.floor(now - timedelta(days=31 * MONTHS), "month")
    today = timebuckets.floor(now, "day")
    rows = aggregates_range(site_id=site.id, granularity="day", start=first, end=today)
    rows += aggregates_range(site_id=site.id, granularity="hour", start=today, end=now)
    return site, {"events": sum(a.events for _, a in rows), "reused_site": site_id}


def main() -> None:
    per_hour, runs = sizes(40, 30)
    seeded: dict[str, Any]
    if len(sys.argv) > 3:
        site, seeded = _reused(sys.argv[3])
    else:
        site = sites.site_create(name=f"dashboard-{int(time.time())}", origins=[])
        now = datetime.now(UTC)
        until = timebuckets.floor(now, "hour")
        first = timebuckets.floor(now - timedelta(days=31 * MONTHS), "month")
        started = time.monotonic()
        seeded = {**seed(site, per_hour, first, until)}
        seeded["seed_s"] = time.monotonic() - started
        print(json.dumps({"site": str(site.id)}), file=sys.stderr)
    seeded["settled_after_s"] = settle()
    tune_gc(settings.WEB_GC_THRESHOLD)  # as a web worker is, where the view runs (wsgi.py)
    calls = {
        "days30": lambda: _dashboard(site, "30d"),
        "months12": lambda: _dashboard(site, "12mo"),
        "filter30": lambda: _filter(site),
        "raw30": lambda: _raw(site, "30d"),
        "raw12": lambda: _raw(site, "12mo"),
        **_pages(site),
    }
    taken = [interleaved(calls, runs=runs, warmup=WARMUP) for _ in range(3)]
    figures: dict[str, Any] = {n: statistics.median(t[0][n] for t in taken) for n in taken[0][0]}
    for way in ("segment", "share"):  # each round's ratio to the filters in the URL
        ratios = [t[0][f"page_{way}_p50_ms"] / t[0]["page_filters_p50_ms"] for t in taken]
        figures[f"page_{way}_ratio"] = statistics.median(ratios)
        figures[f"page_{way}_ratios"] = ratios
    last = taken[-1][1]
    assert last["filter30"], "the sealed breakdowns did not keep source=Google"
    print(
        json.dumps(
            {
                **seeded,
                "visits_per_hour": per_hour,
                "runs": runs,
                "goals_ms": GOALS_MS,
                "goal_page_ratio": GOAL_PAGE_RATIO,
                "buckets_30d": last["days30"],
                "buckets_12mo": last["months12"],
                "raw_rows_30d": last["raw30"],
                "raw_rows_12mo": last["raw12"],
                **figures,
            }
        )
    )


if __name__ == "__main__":
    main()
