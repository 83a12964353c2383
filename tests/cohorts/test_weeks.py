"""Week sets (aggregates/usersets.week_write): each day's rollup rewrites its ISO week's
sets as the union of the week's stored days; a weekly cohort reads one row per settled
week instead of seven, equal to the brute-force recount of the raw rows; the erasure step
takes the user out of the week rows too, in place (tests/cohorts/test_pages.py erases a
user end to end and scans every stored set, weeks included)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.utils import timezone
from pyroaring import BitMap

from sessions_app.domain.aggregates import usersets
from sessions_app.domain.erasure.scan import user_sets_erase
from sessions_app.domain.ledger import sites
from sessions_app.features.cohorts import reads
from sessions_app.features.cohorts.reader import LIVE_DAYS, Reader
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.tables import user_sets
from tests.support.cohorts import brute_cohorts, origin, period_users, query_of, raw_rows, send
from tests.support.sealing import seal_due

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

# Who is active on which day of the activity (tests/support/cohorts.py's days: the
# range is days 7-29, its settled weeks those that ended LIVE_DAYS before now).
ACTIVE = {"wa-ü": [8, 9, 16, 23], "wb": [10, 17, 18], "wc": [2, 15, 22, 27], "wd": [14]}


def settled_weeks(now: datetime) -> list[datetime]:
    """The range's weeks a cohort reads from their week rows."""
    query = query_of("week")
    settled = now - timedelta(days=LIVE_DAYS)
    return [w for w in query.starts if timebuckets.next_start(w, "week") <= settled]


def week_numbers(site, week: datetime) -> BitMap:
    """The user numbers of a stored week row's active set (none: no row)."""
    found = usersets.sets_read_many(site_id=site.id, buckets=[("week", week)], names=[])
    return found["week", week].users() if found else BitMap()


def week_users(site, week: datetime) -> set[str]:
    """The user keys of a stored week row's active set."""
    return set(usersets.keys_of(site.id, week_numbers(site, week)).values())


def cohorts_read(site, now: datetime) -> tuple[list[tuple[int, list[int]]], Reader]:
    """The weekly triangle from the stored sets (no answer cache) and the reader used."""
    reader = Reader(site.id, [], now)
    answer = reads.triangle(reader, query_of("week"))
    return [(r["size"], r["counts"]) for r in answer["cohorts"]], reader


def test_weekly_cohorts_read_the_week_sets_and_equal_the_brute_force():
    site = sites.site_create(name="Weeks", origins=["https://shop.example"])
    for u, (user, days) in enumerate(ACTIVE.items()):
        for day in days:
            send(site, user, day, 40 + u, signup=False)
    seal_due(site)
    now, rows = timezone.now(), raw_rows(site)
    weeks = settled_weeks(now)
    assert len(weeks) >= 2, weeks
    for week in weeks:
        end = timebuckets.next_start(week, "week")
        assert week_users(site, week) == period_users(rows, week, end, ""), week
    got, reader = cohorts_read(site, now)
    assert got == brute_cohorts(rows, query_of("week"))
    read = {key for key, sets in reader.loaded.items() if sets is not None}
    assert {("week", w) for w in weeks} <= read  # one row a settled week ...
    week_days = {
        ("day", d)
        for w in weeks
        for d in timebuckets.buckets_between(w, timebuckets.next_start(w, "week"), "day")
    }
    assert not week_days & set(reader.loaded)  # ... and none of its days

    # A late event reopens a day of a settled week: its rollup rewrites the week.
    late_day = (weeks[-1] - origin()).days + 2  # within the collector's 30 days
    send(site, "late-ü", late_day, 5, signup=False, received=timezone.now())
    seal_due(site)
    assert "late-ü" in week_users(site, weeks[-1])
    got, _ = cohorts_read(site, now)
    assert got == brute_cohorts(raw_rows(site), query_of("week"))


def test_a_week_row_never_outlives_its_days():
    site = sites.site_create(name="Week TTL", origins=["https://shop.example"])
    week = timebuckets.floor(origin() + timedelta(days=9), "week")
    first = (week - origin()).days  # three days of one ISO week, whatever today's weekday
    for day in (first, first + 1, first + 3):
        send(site, "wt", day, 30, signup=False)
    seal_due(site)
    assert week_users(site, week) == {"wt"}
    select = prepare(user_sets.SELECT_ERASED)

    def ttl(granularity: str, bucket: datetime) -> int | None:
        rows = cassandra_session().execute(select, (site.id, granularity, bucket))
        return min((r["ttl"] for r in rows), default=None)

    days = timebuckets.buckets_between(week, timebuckets.next_start(week, "week"), "day")
    kept = [t for t in (ttl("day", d) for d in days) if t is not None]
    assert len(kept) == 3 and ttl("week", week) <= min(kept)
    # A rollup with less time left than the week's first day had writes no week.
    usersets.week_write(site_id=site.id, day=week, ttl=60)
    assert ttl("week", week) > 60


def test_the_erasure_step_takes_the_user_out_of_the_weeks_of_its_days():
    """The per-user counts step (erasure/scan.user_sets_erase) edits the weeks of the
    days it is given in place: sets outlive raw rows, so no reseal would."""
    site = sites.site_create(name="Week erasure", origins=["https://shop.example"])
    for user in ("we-gone", "we-kept"):
        send(site, user, 16, 30, signup=False)
    seal_due(site)
    day = timebuckets.floor(origin() + timedelta(days=16), "day")
    week = timebuckets.floor(day, "week")
    number = usersets.numbers_of(site.id, ["we-gone"], assign=False)["we-gone"]
    assert number in week_numbers(site, week)
    counts = user_sets_erase(site.id, ["we-gone"], {"hour": set(), "day": {day}, "month": set()})
    assert counts["user_sets"] >= 2  # the day's row and the week's
    assert number not in week_numbers(site, week)
    assert week_users(site, week) == {"we-kept"}
