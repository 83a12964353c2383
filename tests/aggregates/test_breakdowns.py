"""Breakdowns (domain/aggregates/breakdowns.py): sealed hours, their day and the report's totals
against a brute-force recount of the same sessions; the dashboard's charts."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from sessions_app.domain.aggregates import breakdowns
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.ids import uuid_time
from sessions_app.foundation.models import BucketState
from tests.support.breakdowns import brute, stored
from tests.support.dataset import sessions_send, sessions_truth
from tests.support.sealing import seal_everything
from tests.support.shared import World, built_once, restored, shop_site

pytestmark = [
    pytest.mark.django_db(databases=["default", "cassandra"]),
    pytest.mark.xdist_group("breakdowns"),  # one worker builds the dataset once
]


def close(got: dict, want: dict, *, exact_users: bool) -> None:
    for name in breakdowns.names():
        assert set(got.get(name, {})) == set(want[name]), name
        for value, (n, users, conversions) in want[name].items():
            g = got[name][value]
            assert (g[0], g[2]) == (n, conversions), (name, value)
            if exact_users:
                assert g[1] == users, (name, value)
            else:  # a HyperLogLog estimate once buckets merge
                assert abs(g[1] - users) <= max(1, users * 0.05), (name, value, g[1], users)


@dataclass(frozen=True)
class Dataset:
    site: Any
    now: datetime
    truth: list[dict[str, Any]]


@pytest.fixture(scope="module")
def built(django_db_setup, django_db_blocker) -> Iterator[World[Dataset]]:
    """The sessions every test here reads, built once (tests/support/shared.py)."""
    yield from built_once(django_db_blocker, _dataset)


@pytest.fixture
def site(built, db):
    """The dataset's site (no test here writes to it)."""
    return restored(built).site


@pytest.fixture
def dataset(built, site) -> tuple[datetime, list[dict[str, Any]]]:
    return built.value.now, built.value.truth


def _dataset() -> Dataset:
    site = shop_site()
    now = timezone.now().replace(microsecond=0)
    sent = sessions_send(Client(), site, now=now, count=80, days=3, seed=7)
    truth = sessions_truth(site, sent)
    seal_everything(site, timezone.now())
    return Dataset(site, now, truth)


def test_sealed_hours_and_days_equal_a_recount_of_their_sessions(site, dataset):
    _, truth = dataset
    by_hour: dict[Any, list] = defaultdict(list)
    for s in truth:
        by_hour[timebuckets.floor(uuid_time(s["session_id"]), "hour")].append(s)
    sealed_hours = set(
        BucketState.objects.filter(
            site=site, granularity="hour", state=BucketState.SEALED
        ).values_list("bucket", flat=True)
    )
    checked = 0
    for hour, sessions in by_hour.items():
        if hour not in {timebuckets.as_utc(h) for h in sealed_hours}:
            continue
        found = breakdowns.breakdowns_read(site_id=site.id, buckets=[("hour", hour)])
        close(stored(found.get(("hour", hour), {})), brute(sessions), exact_users=True)
        checked += 1
    assert checked >= 20
    days = BucketState.objects.filter(site=site, granularity="day", state=BucketState.SEALED)
    assert days.exists()
    for day in days.values_list("bucket", flat=True):
        day = timebuckets.as_utc(day)
        inside = [s for s in truth if timebuckets.floor(uuid_time(s["session_id"]), "day") == day]
        found = breakdowns.breakdowns_read(site_id=site.id, buckets=[("day", day)])
        close(stored(found.get(("day", day), {})), brute(inside), exact_users=False)


def test_the_report_totals_sealed_and_live_buckets_and_folds_the_rest_into_other(
    client, analyst, site, dataset
):
    now, truth = dataset
    start = timebuckets.floor(now - timedelta(days=4), "day")
    end = now + timedelta(hours=1)
    body = client.get(
        f"/api/sites/{site.id}/report",
        {"start": start.isoformat(), "end": end.isoformat(), "width": "day", "top": 50},
    ).json()
    want = brute(truth)
    got = {
        name: {r["value"]: (r["sessions"], r["users"], r["conversions"]) for r in rows}
        for name, rows in body["breakdowns"].items()
    }
    close(got, want, exact_users=False)
    assert {row["state"] for row in body["buckets"]} >= {"sealed"}
    # The hours not sealed yet (the last ones, within the allowed lateness) count live.
    assert 1 <= body["breakdown_live_hours"] <= 3
    # top=2: two values, then everything else as "(other)" with the same totals.
    short = client.get(
        f"/api/sites/{site.id}/report",
        {"start": start.isoformat(), "end": end.isoformat(), "width": "day", "top": 2},
    ).json()["breakdowns"]
    for name, rows in short.items():
        assert len(rows) <= 3 and sum(r["sessions"] for r in rows) == sum(
            n for n, _, _ in want[name].values()
        )
        if len(want[name]) > 2:
            assert rows[-1]["value"] == breakdowns.OTHER
        for r in rows:
            assert r["conversion_rate"] == round(r["conversions"] / r["sessions"], 4)
    bad = client.get(f"/api/sites/{site.id}/report", {"top": "99"})
    assert bad.status_code == 400 and bad.json()["field"] == "top"


def test_the_dashboard_draws_each_breakdown_with_its_bars_and_hover_values(
    client, analyst, site, dataset
):
    now, truth = dataset
    page = client.get(
        f"/sites/{site.id}/",
        {"start": (now - timedelta(days=4)).strftime("%Y-%m-%dT%H:%M"), "width": "day"},
    )
    html = page.content.decode()
    for name in breakdowns.names():
        assert f'data-dimension="{name}"' in html
    top_country = max(
        brute(truth)["country"].items(), key=lambda kv: (kv[1][0], kv[0] != breakdowns.NONE)
    )
    value, (sessions, _, _) = top_country
    assert f'title="{value}: {sessions} sessions' in html  # the row's numbers on hover
    assert '<rect width="100.0%" height="100%"/>' in html  # the top value's bar: the whole row
