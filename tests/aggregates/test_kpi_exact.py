"""Every KPI of the report against a brute-force recount of the raw events: sealed hours,
days and live hours, Hypothesis-drawn ranges in zones with whole-hour offsets, their
comparisons, and a single-dimension filter answered from the sealed breakdowns; a session
that goes on after its start hour sealed reopens that hour, so the counts stay exact."""

from __future__ import annotations

import random
import uuid
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit
from zoneinfo import ZoneInfo

import pytest
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessions_app.domain.aggregates import seal, totals
from sessions_app.domain.aggregates.kpis import CHARTED, Kpis, kpi_value
from sessions_app.domain.aggregates.products import TOTALS
from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.features.analysis.kpi_report import breakdown_kpis, period_report
from sessions_app.features.web.periods import period_param
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.core.ids import uuid_time
from sessions_app.foundation.models import BucketState
from tests.support.conversion import PURCHASE, purchase_goal
from tests.support.events import event
from tests.support.hypothesis import examples
from tests.support.sealing import seal_due
from tests.support.shared import World, built_once, restored, shop_site

pytestmark = [
    pytest.mark.django_db(databases=["default", "cassandra"]),
    pytest.mark.xdist_group("kpi-exact"),  # one worker builds the traffic once
]

RAW = (
    "SELECT session_id, user_key, type, name, ts, url, is_bot "
    "FROM {ks}.site_events_by_bucket WHERE site_id = ? AND bucket = ? AND shard = ?"
)
ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Asia/Tokyo"]
SPAN_HOURS = 78
SOURCES = ["news", "mail", "ads"]


def _ingest(site, now: datetime, seed: int = 37) -> None:
    """Visits over the last SPAN_HOURS hours (some across hour edges, some converting,
    each from one utm_source), one event a beacon as a browser sends them."""
    rng = random.Random(seed)
    start = timebuckets.floor(now - timedelta(hours=SPAN_HOURS), "hour")
    beacons = []
    for visit in range(48):
        at = start + timedelta(minutes=rng.randrange(SPAN_HOURS * 60 - 30))
        anon, source = f"v{visit % 31}", SOURCES[visit % 3]
        for step in range(rng.choice([1, 1, 2, 3, 5])):
            kind = rng.choice(["pageview", "pageview", "click", "custom"])
            name = PURCHASE if rng.random() < 0.5 else "signup"
            url = f"https://shop.example/p{rng.randrange(4)}?utm_source={source}"
            extra = {"name": name} if kind == "custom" else {}
            if at < now - timedelta(seconds=5):
                beacons.append(
                    (
                        at,
                        event(
                            at, kind="pageview" if step == 0 else kind, anon=anon, url=url, **extra
                        ),
                    )
                )
            at += timedelta(seconds=rng.choice([3, 40, 400, 1100]))
    for at, body in sorted(beacons, key=lambda b: b[0]):
        events_record(
            source=Source(site=site, received_at=at + timedelta(seconds=2)), raw_events=[body]
        )


def _raw(site, now: datetime) -> list[dict]:
    """Every raw event of the site, read partition by partition."""
    statement = prepare(RAW)
    rows = []
    start = timebuckets.floor(now - timedelta(hours=SPAN_HOURS + 2), "hour")
    for hour in timebuckets.buckets_between(start, timebuckets.ceil(now, "hour"), "hour"):
        for shard in range(site.event_shards):
            rows += list(cassandra_session().execute(statement, (site.id, hour, shard)))
    for row in rows:
        row["ts"] = row["ts"].replace(tzinfo=UTC)
    return rows


def brute(rows: list[dict], start: datetime, end: datetime, source: str | None = None) -> dict:
    """The KPIs of [start, end), one event at a time: visits are the human sessions that
    started in it (their whole span counts), page views and visitors its own events."""
    human = [r for r in rows if not r["is_bot"]]
    sessions: dict[uuid.UUID, list[dict]] = defaultdict(list)
    for r in human:
        sessions[r["session_id"]].append(r)
    visits = {sid: evs for sid, evs in sessions.items() if start <= uuid_time(sid) < end}
    if source is not None:
        visits = {sid: evs for sid, evs in visits.items() if _source(evs) == source}
    durations = sorted(
        int((max(e["ts"] for e in evs) - min(e["ts"] for e in evs)).total_seconds())
        for evs in visits.values()
    )
    views = {sid: sum(e["type"] == "pageview" for e in evs) for sid, evs in visits.items()}
    inside = [r for r in human if start <= r["ts"] < end]
    # a filtered period's visitors are its visits' (sessions of that source), else its events'
    users = (
        {evs[0]["user_key"] for evs in visits.values()}
        if source is not None
        else {r["user_key"] for r in inside}
    )
    return {
        "visitors": len(users),
        "visits": len(visits),
        "pageviews": (
            sum(views.values())
            if source is not None
            else sum(r["type"] == "pageview" for r in inside)
        ),
        "bounces": sum(n <= 1 for n in views.values()),
        "duration_seconds_sum": float(sum(durations)),
        "duration_median": float(durations[(len(durations) - 1) // 2]) if durations else None,
        # the conversion rate's numerator: who did the goal's event in the range
        "converting_visitors": len(
            {r["user_key"] for r in inside if r["type"] == "custom" and r["name"] == PURCHASE}
        ),
        "conversions": sum(
            any(e["type"] == "custom" and e["name"] == PURCHASE for e in evs)
            for evs in visits.values()
        ),
    }


def _source(events: list[dict]) -> str:
    first = min(events, key=lambda e: e["ts"])
    return parse_qs(urlsplit(first["url"]).query)["utm_source"][0]


def assert_kpis(found: Kpis, expected: dict, *, exact_visitors: bool) -> None:
    """Every counter exact; the median within its sketch's 2.5% (exact under 21 s); the
    visitors exact within one bucket, else within the HyperLogLog's error."""
    for key in ("visits", "pageviews", "bounces", "duration_seconds_sum", "conversions"):
        assert getattr(found, key) == expected[key], key
    median = expected["duration_median"]
    if median is None or median < 21:
        assert found.duration_median == median
    else:
        assert abs(found.duration_median - median) <= 0.025 * median
    for key in ("visitors", "converting_visitors"):
        value, want = getattr(found, key), expected[key]
        if value is None:  # a bucket's own KPIs: the conversion rate is the period's
            assert key == "converting_visitors" and found.conversion_rate is None
        elif exact_visitors:
            assert value == want, (key, found, expected)
        else:
            assert abs(value - want) <= max(1, 0.05 * want), (key, found, expected)


@pytest.fixture(scope="module")
def built(django_db_setup, django_db_blocker) -> Iterator[World[tuple[Any, datetime, list]]]:
    """The traffic the tests asking for it read, built once (tests/support/shared.py)."""
    yield from built_once(django_db_blocker, _traffic)


@pytest.fixture
def site(built, db):
    """The traffic's site (the test that writes makes a site of its own)."""
    return restored(built)[0]


@pytest.fixture
def traffic(built, site) -> tuple[datetime, list[dict]]:
    _, now, rows = built.value
    return now, rows


def _traffic() -> tuple[Any, datetime, list[dict]]:
    site = shop_site()
    purchase_goal(site)  # the site's conversions
    now = timezone.now()
    _ingest(site, now)
    seal_due(site)
    sealed = BucketState.objects.filter(site=site, state=BucketState.SEALED)
    assert sealed.filter(granularity="hour").count() > 20  # sealed and live hours both
    assert sealed.filter(granularity="day").exists()  # UTC days come from day rollups
    return site, now, _raw(site, now)


def test_every_kpi_of_drawn_ranges_zones_and_comparisons_equals_a_recount(site, traffic):
    now, rows = traffic

    @settings(max_examples=examples(25), deadline=None, suppress_health_check=list(HealthCheck))
    @given(
        offset=st.integers(0, SPAN_HOURS + 2),
        hours=st.integers(1, 100),
        zone=st.sampled_from(ZONES),
        compare=st.sampled_from(["off", "previous"]),
    )
    def check(offset: int, hours: int, zone: str, compare: str) -> None:
        start = timebuckets.floor(now, "hour") - timedelta(hours=offset)
        params = {
            "start": start.isoformat(),
            "end": (start + timedelta(hours=hours)).isoformat(),
            "compare": compare,
        }
        period = period_param(params, zone=ZoneInfo(zone), now=now)
        result = period_report(site=site, period=period)
        current = result.current
        many = len(current["buckets"]) > 1
        assert_kpis(
            result.kpis, brute(rows, current["start"], current["end"]), exact_visitors=not many
        )
        for bucket, following in zip(current["buckets"], current["buckets"][1:], strict=False):
            expected = brute(rows, bucket.bucket, following.bucket)
            # a day of hours merges their sketches: exact only when one hour had visitors
            assert_kpis(totals.kpis_of(bucket.aggregates), expected, exact_visitors=False)
            if current["width"] == "day":
                assert bucket.bucket.astimezone(ZoneInfo(zone)).hour == 0  # the zone's days
        before = period.comparison()
        if compare == "off":
            assert result.previous is None
            return
        assert before is not None and result.comparison is not None
        assert result.previous is not None
        cut = min(timebuckets.ceil(before.elapsed_end, "hour"), result.comparison["end"])
        assert_kpis(
            result.previous, brute(rows, result.comparison["start"], cut), exact_visitors=False
        )

    check()


def test_a_single_source_filter_comes_from_sealed_breakdowns_and_equals_a_recount(site, traffic):
    now, rows = traffic
    for zone, days in (("UTC", 3), ("Europe/Berlin", 4)):
        params = {"start": (now - timedelta(days=days)).isoformat(), "end": now.isoformat()}
        period = period_param(params, zone=ZoneInfo(zone), now=now)
        for source in SOURCES:
            found = breakdown_kpis(site=site, period=period, dimension="source", value=source)
            assert found is not None
            kpis, series = found.kpis, found.series
            start = timebuckets.floor(
                period.start.astimezone(ZoneInfo(zone))
                .replace(hour=0, tzinfo=None)
                .replace(tzinfo=ZoneInfo(zone))
                .astimezone(UTC),
                "hour",
            )
            expected = brute(rows, start, timebuckets.ceil(period.end, "hour"), source=source)
            assert_kpis(kpis, expected, exact_visitors=False)
            assert set(series) == set(CHARTED)
            assert sum(v or 0 for v in series["visits"]) == expected["visits"]
    unknown = period_param({}, zone=ZoneInfo("UTC"), now=now)
    found = breakdown_kpis(site=site, period=unknown, dimension="source", value="nowhere")
    assert found is not None and found.kpis.visits == 0


def test_a_visit_that_goes_on_after_its_start_hour_sealed_reopens_it(db):
    site = shop_site()  # it writes
    now = timezone.now()
    hour = timebuckets.floor(now - timedelta(hours=4), "hour")
    first = hour + timedelta(minutes=50)
    events_record(
        source=Source(site=site, received_at=first),
        raw_events=[event(first, anon="late", url="https://shop.example/a")],
    )
    assert seal.bucket_seal(site_id=site.id, hour=hour, now=now)
    stored = TOTALS.read(site_id=site.id, granularity="hour", buckets=[hour])
    assert totals.kpis_of(stored[0]).bounces == 1
    later = first + timedelta(minutes=25)  # the next hour, the same visit
    events_record(
        source=Source(site=site, received_at=later + timedelta(seconds=1)),
        raw_events=[event(later, anon="late", url="https://shop.example/b")],
    )
    state = BucketState.objects.get(site=site, granularity="hour", bucket=hour)
    assert state.state == BucketState.REOPENED
    seal_due(site)
    stored = TOTALS.read(site_id=site.id, granularity="hour", buckets=[hour])
    kpis = totals.kpis_of(stored[0])
    assert (kpis.visits, kpis.bounces, kpis.duration_seconds_sum) == (1, 0, 1500.0)
    assert kpi_value(kpis, "bounce_rate") == 0.0
