"""The cohorts' lookback (features/cohorts/reader.py, Reader.first_bucket): a user is new when in
no set of the 24 months before, but a site's sets start at its first bucket with a
state, so the reader asks for no row that ends before it. Pinned here: every stored set
has a bucket state, or (a week, written by its days' rollups) one of its days has, which
makes the bound safe; the reader asks for nothing older; and the answer still equals the
brute-force recount."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from sessions_app.domain.aggregates import usersets
from sessions_app.domain.ledger import sites
from sessions_app.features.cohorts import reads
from sessions_app.features.cohorts.reader import LOOKBACK_MONTHS, Reader
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.models import BucketState
from tests.support.cohorts import brute_cohorts, origin, query_of, raw_rows, send
from tests.support.sealing import seal_due

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])


def every_bucket(now: datetime) -> list[tuple[str, datetime]]:
    """Every bucket a cohort read could name: the months, weeks and days of the lookback
    and the range, and the hours of the activity."""
    start = origin() - timedelta(days=31 * (LOOKBACK_MONTHS + 2))
    buckets = [
        (g, b) for g in ("month", "week", "day") for b in timebuckets.buckets_between(start, now, g)
    ]
    hours = timebuckets.buckets_between(origin() - timedelta(days=1), now, "hour")
    return buckets + [("hour", h) for h in hours]


def asked(monkeypatch) -> list[tuple[str, datetime]]:
    """The buckets the reader asks Cassandra for (the real read runs)."""
    seen: list[tuple[str, datetime]] = []
    real = usersets.sets_read_many

    def spy(*, site_id, buckets, names):
        seen.extend(buckets)
        return real(site_id=site_id, buckets=buckets, names=names)

    monkeypatch.setattr(usersets, "sets_read_many", spy)
    return seen


def test_every_set_has_a_state_and_the_reader_asks_for_nothing_before_the_first(monkeypatch):
    site = sites.site_create(name="Lookback", origins=["https://shop.example"])
    for user, days in {"lb-a": [3, 9, 20], "lb-b": [9, 27], "lb-c-ü": [14]}.items():
        for day in days:
            send(site, user, day, 50, signup=day == 9)
    seal_due(site)
    now = timezone.now()
    first = Reader(site.id, [], now).first_bucket
    states = set(BucketState.objects.filter(site=site).values_list("granularity", "bucket"))
    assert first == min(b for _, b in states)
    assert (
        first <= origin() + timedelta(days=3, minutes=50) < timebuckets.next_start(first, "month")
    )

    # Brute force over every bucket: each stored set has a state, none ends before first.
    stored = usersets.sets_read_many(site_id=site.id, buckets=every_bucket(now), names=None)
    days = {b for g, b in states if g == "day"}
    weeks = {("week", timebuckets.floor(d, "week")) for d in days}  # written by day rollups
    assert stored and set(stored) <= states | weeks
    assert all(timebuckets.next_start(b, g) > first for g, b in stored)

    seen = asked(monkeypatch)
    for unit in reads.UNITS:
        query = query_of(unit, "signup")
        answer = reads.triangle(Reader(site.id, [query.first_event], now), query)
        got = [(r["size"], r["counts"]) for r in answer["cohorts"]]
        assert got == brute_cohorts(raw_rows(site), query), unit
    assert seen and all(timebuckets.next_start(b, g) > first for g, b in seen)


def test_a_site_without_states_asks_for_no_set(monkeypatch):
    site = sites.site_create(name="Lookback empty", origins=["https://shop.example"])
    seen = asked(monkeypatch)
    query = query_of("week")
    answer = reads.triangle(Reader(site.id, [], timezone.now()), query)
    assert [r["size"] for r in answer["cohorts"]] == [0] * len(query.starts)
    assert seen == []
