"""Site reports read sealed buckets from stored aggregates and the rest live; rolling
counters through the API and the user profile."""

from __future__ import annotations

import json
import re
import uuid
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from sessions_app.domain.aggregates import report, seal
from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.models import BucketState, SiteEventByBucket
from tests.support.events import event

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])


@pytest.fixture
def two_hours(site):
    """Three hours ago (sealed): 3 events of 2 users; the current hour (open): 2 events."""
    now = timezone.now().replace(microsecond=0)
    sealed = timebuckets.floor(now - timedelta(hours=3), "hour")
    current = timebuckets.floor(now, "hour")
    for i, anon in enumerate(["a", "a", "b"]):
        ts = sealed + timedelta(minutes=5 + i)
        events_record(
            source=Source(site=site, received_at=ts + timedelta(seconds=5)),
            raw_events=[event(ts, anon=anon, kind="custom", name="login")],
        )
    events_record(
        source=Source(site=site, received_at=now),
        raw_events=[event(current + timedelta(seconds=i), anon="c") for i in range(2)],
    )
    assert seal.bucket_seal(site_id=site.id, hour=sealed, now=now)
    return sealed, current, now


def _report(client, site, start, end, width="hour"):
    response = client.get(
        f"/api/sites/{site.id}/report",
        {"start": start.isoformat(), "end": end.isoformat(), "width": width},
    )
    assert response.status_code == 200, response.content
    return response.json()


def test_sealed_buckets_come_from_stored_aggregates_and_open_ones_live(
    client, analyst, site, two_hours
):
    sealed, current, now = two_hours
    # A row slipped into the sealed partition behind the pipeline's back: a sealed
    # bucket is served from its aggregate row, so it must not show up.
    SiteEventByBucket.create(
        site_id=site.id,
        bucket=sealed,
        shard=0,
        event_id=uuid.uuid1(),
        session_id=uuid.uuid1(),
        user_key="sneaky",
        type="pageview",
        ts=sealed + timedelta(minutes=30),
    )
    body = _report(client, site, sealed, now)
    rows = {row["bucket"][:13]: row for row in body["buckets"]}
    first = rows[sealed.isoformat()[:13]]
    assert (first["state"], first["events"], first["users"]) == ("sealed", 3, 2)
    assert first["by_type"] == {"custom": 3}
    last = rows[current.isoformat()[:13]]
    assert (last["state"], last["events"], last["users"]) == ("live", 2, 1)
    # Hours in between had no events (no state): empty, known without reading raw.
    middle = [r for r in body["buckets"] if r not in (first, last)]
    assert middle and all(r["state"] == "sealed" and r["events"] == 0 for r in middle[:-1])
    assert body["totals"]["events"] == 5 and body["totals"]["users"] == 3
    assert body["live_hours"] <= 2  # the current hour (and the last one, within lateness)


def test_a_reopened_bucket_is_live_again(client, analyst, site, two_hours):
    sealed, _, now = two_hours
    events_record(
        source=Source(site=site, received_at=now),
        raw_events=[event(sealed + timedelta(minutes=40), anon="late")],
    )
    body = _report(client, site, sealed, sealed + timedelta(hours=1))
    [row] = body["buckets"]
    assert (row["state"], row["events"], row["users"]) == ("live", 4, 3)


def test_a_day_merges_its_sealed_hours_with_live_ones(client, analyst, site, two_hours):
    sealed, current, now = two_hours
    day = timebuckets.floor(sealed, "day")
    body = _report(client, site, day, timebuckets.next_start(now, "day"), width="day")
    by_day = {row["bucket"][:10]: row for row in body["buckets"]}
    today = by_day[timebuckets.floor(current, "day").isoformat()[:10]]
    assert today["state"] == "live"  # its current hour is open
    if day == timebuckets.floor(current, "day"):
        assert today["events"] == 5
    else:  # before 03:00 the sealed hour is yesterday's
        yesterday = by_day[day.isoformat()[:10]]
        assert (yesterday["events"], today["events"]) == (3, 2)
        # Its sealed hour and empty ones: sealed as a whole once its last hour is settled.
        settled = timebuckets.next_start(day, "day") + settings.ALLOWED_LATENESS <= now
        assert yesterday["state"] == ("sealed" if settled else "live")


def test_report_ranges_are_capped(client, analyst, site):
    now = timezone.now()
    too_many_hours = client.get(
        f"/api/sites/{site.id}/report",
        {"start": (now - timedelta(days=40)).isoformat(), "end": now.isoformat()},
    )
    assert too_many_hours.status_code == 400
    assert too_many_hours.json()["field"] == "end"
    by_day = client.get(
        f"/api/sites/{site.id}/report",
        {"start": (now - timedelta(days=100)).isoformat(), "end": now.isoformat(), "width": "day"},
    )
    assert by_day.status_code == 200 and len(by_day.json()["buckets"]) == 101
    too_long = client.get(
        f"/api/sites/{site.id}/report",
        {"start": (now - timedelta(days=800)).isoformat(), "end": now.isoformat(), "width": "day"},
    )
    assert too_long.status_code == 400 and "731 days" in too_long.json()["error"]
    bad_width = client.get(f"/api/sites/{site.id}/report", {"width": "week"})
    assert bad_width.status_code == 400 and bad_width.json()["field"] == "width"


def test_unsealed_hours_past_the_live_budget_are_pending(client, analyst, site):
    now = timezone.now()
    start = timebuckets.floor(now - timedelta(days=5), "hour")
    BucketState.objects.bulk_create(  # hours with events, none sealed yet (beat behind)
        BucketState(site=site, granularity="hour", bucket=hour)
        for hour in timebuckets.iter_buckets(start, now, "hour")
    )
    body = _report(client, site, start, now)
    states = [row["state"] for row in body["buckets"]]
    assert states.count("live") == report.MAX_LIVE_HOURS
    assert body["pending"] == len(states) - report.MAX_LIVE_HOURS


def test_a_quiet_range_is_empty_not_pending(client, analyst, site):
    now = timezone.now()
    body = _report(client, site, now - timedelta(days=5), now - timedelta(hours=2))
    assert body["pending"] == 0 and body["raw_partitions_read"] == 0
    assert {row["state"] for row in body["buckets"]} == {"sealed"}


def test_the_dashboard_marks_sealed_and_live_buckets(client, analyst, site, two_hours):
    sealed, _, now = two_hours
    html = client.get(
        f"/sites/{site.id}/",
        {"start": sealed.strftime("%Y-%m-%dT%H:%M"), "end": now.strftime("%Y-%m-%dT%H:%M")},
    ).content.decode()
    island = re.search(r'<script id="dashboard-chart" type="application/json">(.*?)</script>', html)
    assert island is not None
    chart = json.loads(island[1])
    assert {"sealed", "live"} <= set(chart["states"])  # the chart's tooltip names them
    assert re.search(r"\d+ sealed hours? \(stored aggregates", html)


def test_rolling_counters_through_the_api_and_on_the_profile(client, analyst, site, two_hours):
    _, _, now = two_hours
    response = client.get(
        f"/api/sites/{site.id}/users/a/counters", {"event": "login", "at": now.isoformat()}
    )
    assert response.status_code == 200
    windows = {w["window"]: w for w in response.json()["windows"]}
    assert windows["1h"]["count"] == 0
    assert windows["24h"]["count"] == windows["12mo"]["count"] == 2
    assert windows["24h"]["buckets"].get("hour", 0) >= 1  # the sealed hour was used
    assert all(w["partitions_read"] >= 1 for w in windows.values())
    missing = client.get(f"/api/sites/{site.id}/users/a/counters")
    assert missing.status_code == 400 and missing.json()["field"] == "event"

    html = client.get(f"/sites/{site.id}/users/a/", {"counter": "login"}).content.decode()
    assert "How often" in html and '<td class="num">2</td>' in html


def test_the_report_api_answers_the_pages_parameters_with_kpis(client, analyst, site, two_hours):
    response = client.get(
        f"/api/sites/{site.id}/report",
        {"period": "24h", "compare": "previous", "metric": "bounce_rate"},
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["period"]["key"] == "24h" and body["period"]["grain"] == "hour"
    assert body["period"]["params"] == {"period": "24h"}  # previous: the default, unsaid
    assert (body["time_zone"], body["metric"], body["filters"]) == ("UTC", "bounce_rate", {})
    # two visits of custom events three hours ago (sealed), one of two page views now (live)
    kpis = body["kpis"]
    assert (kpis["visits"], kpis["pageviews"], kpis["bounces"], kpis["conversions"]) == (3, 2, 2, 0)
    assert kpis["bounce_rate"] == pytest.approx(2 / 3) and kpis["views_per_visit"] == 2 / 3
    assert body["comparison"]["kpis"]["visits"] == 0
    assert body["comparison"]["end"] == body["period"]["start"]
    assert sum(b["kpis"]["visits"] for b in body["buckets"]) == 3
    # a filter: the page's filtered answer (the sessions of user c, two page views)
    filtered = client.get(f"/api/sites/{site.id}/report", {"period": "24h", "page": "/"}).json()
    assert filtered["filters"] == {"page": "/"} and filtered["filtered"]["partitions_read"] > 0
    assert (filtered["kpis"]["visits"], filtered["kpis"]["pageviews"]) == (1, 2)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"period": "fortnight"}, "period"),
        ({"compare": "sometimes"}, "compare"),
        ({"period": "custom", "from": "2026-13-01"}, "from"),
        ({"width": "week"}, "width"),
        ({"start": "yesterday"}, "start"),
        ({"duration_min": "soon"}, "duration_min"),
    ],
)
def test_a_bad_report_parameter_is_a_400_naming_it(client, analyst, site, params, field):
    response = client.get(f"/api/sites/{site.id}/report", params)
    assert response.status_code == 400 and response.json()["field"] == field
