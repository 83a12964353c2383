"""The Cohorts page, a cell's users, the API (JSON and CSV) and the erasure of a user from
every stored set (domain/aggregates/usersets.py; tests/support/anywhere.py scans every table)."""

from __future__ import annotations

import csv
import io
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.utils import timezone
from pyroaring import BitMap

from sessions_app import tasks
from sessions_app.domain.aggregates import usersets
from sessions_app.domain.erasure import erasures
from sessions_app.domain.ledger import sites
from sessions_app.features.cohorts import reads
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.models import BucketState, ErasureRequest
from sessions_app.foundation.tables import user_sets
from tests.support.accounts import member
from tests.support.anywhere import rows_mentioning
from tests.support.cohorts import assert_exact, origin, query_of, send
from tests.support.sealing import seal_due
from tests.support.shared import World, built_once, restored

pytestmark = [
    pytest.mark.django_db(databases=["default", "cassandra"]),
    pytest.mark.xdist_group("cohort-pages"),  # one worker builds the shop once
]

# Who is active on which day of the activity (tests/support/cohorts.py's days).
GONE = f"gone-{uuid.uuid4().hex[:8]}"  # a key no other run left in the keyspace
ACTIVE = {"ana-ü": [8, 9, 16, 23], "bo": [8, 17], GONE: [9, 16, 24], "old": [1, 20]}


def _shop() -> tuple[Any, Any]:
    """The site and its analyst."""
    site = sites.site_create(name="Cohort shop", origins=["https://shop.example"])
    for user, days in ACTIVE.items():
        for day in days:
            send(site, user, day, 30, signup=user == "bo")
    seal_due(site)
    analyst = User.objects.create_user("co-ana", password="pw-co-ana-1")
    member(analyst, site)
    return site, analyst


@pytest.fixture(scope="module")
def built(django_db_setup, django_db_blocker) -> Iterator[World[tuple[Any, Any]]]:
    """The shop the tests that read it share, built once (tests/support/shared.py)."""
    yield from built_once(django_db_blocker, _shop)


@pytest.fixture
def shop(client, built, db):
    site, analyst = restored(built)
    client.force_login(analyst)
    return site


@pytest.fixture
def own_shop(client, db):
    """A shop of the test's own, for a test that changes it."""
    site, analyst = _shop()
    client.force_login(analyst)
    return site


def _range(unit: str = "week") -> str:
    query = query_of(unit)
    return "&".join(f"{k}={v}" for k, v in query.period.params().items()) + f"&unit={unit}"


def test_the_page_shows_the_triangle_and_a_cell_opens_its_users(client, shop):
    page = client.get(f"/sites/{shop.id}/cohorts/?{_range('week')}")
    assert page.status_code == 200
    body = page.content.decode()
    assert 'id="cohort-table"' in body and "Lifecycle" in body and "Stickiness" in body
    answer = page.context["answer"]
    first = next(i for i, r in enumerate(answer["cohorts"]) if r["size"])
    assert f"cohort={first}&amp;offset=0" in body
    cell = client.get(f"/sites/{shop.id}/cohorts/users?{_range('week')}&cohort={first}&offset=0")
    assert cell.status_code == 200
    keys = cell.context["keys"]
    assert keys and set(keys) <= set(ACTIVE)
    assert f"/sites/{shop.id}/users/" in cell.content.decode()


def test_the_pages_three_reports_read_each_stored_set_once(client, shop, monkeypatch):
    """The triangle, lifecycle and stickiness share one reader (cohorts/reader.py,
    `shared_reads`): a bucket's sets are read once per page, not once per report, and the
    shared reads answer what each report answers alone."""
    asked: list[tuple[str, Any]] = []
    real = usersets.sets_read_many

    def counted(*, site_id, buckets, names):
        asked.extend(buckets)
        return real(site_id=site_id, buckets=buckets, names=names)

    monkeypatch.setattr(usersets, "sets_read_many", counted)
    page = client.get(f"/sites/{shop.id}/cohorts/?{_range('week')}")
    assert page.status_code == 200
    assert asked and len(asked) == len(set(asked))
    cache.clear()  # what each report answers alone, each with a reader of its own
    query, now = query_of("week"), timezone.now()
    alone = reads.lifecycle(shop.id, query, now=now)
    assert page.context["lifecycle"]["periods"] == alone["periods"]
    sticky = reads.stickiness(shop.id, query, now=now)
    assert page.context["stickiness"]["total"] == sticky["total"]
    triangle = reads.cohorts(shop.id, query, now=now)
    assert [r["counts"] for r in page.context["answer"]["cohorts"]] == [
        r["counts"] for r in triangle["cohorts"]
    ]


def test_the_page_opens_on_every_pages_default_range_its_unit_following_the_range(client, shop):
    """Last 7 days as every page (a link from the dashboard keeps the range): in days;
    30 days in weeks, 12 months in months; a unit asked for is kept."""
    units = {}
    for period in ("", "7d", "30d", "12mo"):
        page = client.get(f"/sites/{shop.id}/cohorts/", {"period": period} if period else {})
        assert page.status_code == 200
        units[period] = (page.context["period"].key, page.context["answer"]["unit"])
        assert f'<option value="{units[period][1]}" selected>' in page.content.decode()
    assert units == {
        "": ("7d", "day"),
        "7d": ("7d", "day"),
        "30d": ("30d", "week"),
        "12mo": ("12mo", "month"),
    }
    asked = client.get(f"/sites/{shop.id}/cohorts/", {"period": "7d", "unit": "week"})
    assert asked.context["answer"]["unit"] == "week"


def test_bad_fields_are_named_and_other_sites_are_not_found(client, shop):
    bad = client.get(f"/sites/{shop.id}/cohorts/?unit=fortnight")
    assert bad.status_code == 400 and "unit" in bad.content.decode()
    bad = client.get(f"/sites/{shop.id}/cohorts/users?{_range()}&cohort=99&offset=0")
    assert bad.status_code == 400 and "cohort" in bad.content.decode()
    api = client.get(f"/api/sites/{shop.id}/lifecycle?unit=year")
    assert api.status_code == 400 and api.json()["field"] == "unit"
    api = client.get(f"/api/sites/{shop.id}/stickiness?unit=day")
    assert api.status_code == 400 and api.json()["field"] == "unit"
    filtered = client.get(f"/sites/{shop.id}/cohorts/?country=DE").content.decode()
    assert "<strong>Country is DE</strong>" in filtered.split('class="notice filters-ignored"')[1]
    other = sites.site_create(name="Not theirs", origins=["https://other.example"])
    assert client.get(f"/sites/{other.id}/cohorts/").status_code == 404
    assert client.get(f"/api/sites/{other.id}/cohorts").status_code == 404


def test_the_api_answers_json_and_csv(client, shop):
    found = client.get(f"/api/sites/{shop.id}/cohorts?{_range('day')}").json()
    sizes = sum(r["size"] for r in found["cohorts"])
    assert sizes == 3  # "old" was first seen before the range
    text = client.get(f"/api/sites/{shop.id}/cohorts?{_range('day')}&format=csv")
    assert text["Content-Type"] == "text/csv"
    rows = list(csv.reader(io.StringIO(text.content.decode())))
    assert rows[0][:3] == ["cohort", "size", "day 0"]
    assert sum(int(r[1]) for r in rows[1:]) == 3
    life = client.get(f"/api/sites/{shop.id}/lifecycle?{_range('week')}&format=csv")
    assert (
        life.content.decode().splitlines()[0] == "period,new,returning,resurrecting,dormant,active"
    )
    sticky = client.get(f"/api/sites/{shop.id}/stickiness?{_range('month')}").json()
    assert sum(sum(r["days"]) for r in sticky["periods"]) >= 3


def _stored_numbers(site) -> set[int]:
    """Every number in the site's stored sets: of its buckets, and of its days' weeks."""
    found: set[int] = set()
    select = prepare(user_sets.SELECT_BUCKET)
    buckets = set(BucketState.objects.filter(site=site).values_list("granularity", "bucket"))
    buckets |= {("week", timebuckets.floor(b, "week")) for g, b in buckets if g == "day"}
    for granularity, bucket in buckets:
        for row in cassandra_session().execute(select, (site.id, granularity, bucket)):
            found |= set(BitMap.deserialize(row["users"]))
    return found


def test_the_user_profile_shows_the_cohort_and_active_periods(client, shop):
    page = client.get(f"/sites/{shop.id}/users/ana-%C3%BC/")
    assert page.status_code == 200
    found = page.context["periods_active"]
    days = [origin() + timedelta(days=d) for d in ACTIVE["ana-ü"]]  # all in the last 35
    assert found["first_day"] == days[0]
    assert found["cohort_week"] == timebuckets.floor(days[0], "week")
    assert found["days"] == days
    assert found["months"] == sorted({timebuckets.floor(d, "month") for d in days})
    assert "First visit" in page.content.decode()
    assert client.get(f"/sites/{shop.id}/users/nobody/").context["periods_active"] == {}


def test_the_range_picker_keeps_the_cohort_choices(client, shop):
    page = client.get(f"/sites/{shop.id}/cohorts/?unit=month&first_event=signup").content.decode()
    picker = page[page.index('id="range-picker"') : page.index('id="range-period"')]
    assert '<input type="hidden" name="unit" value="month">' in picker
    assert '<input type="hidden" name="first_event" value="signup">' in picker


@pytest.mark.heavy
# Last: it empties every table first, the shared shop's rows too.
@pytest.mark.empty_tables  # brute force over every table of the keyspace
def test_an_erased_user_leaves_every_stored_set(client, own_shop, settings):
    shop = own_shop  # it erases a user: a shop of its own
    settings.SUPPRESSION_CACHE_SECONDS = 0
    settings.ERASURE_SETTLE_SECONDS = 0
    number = usersets.numbers_of(shop.id, [GONE], assign=False)[GONE]
    assert number in _stored_numbers(shop)
    root = User.objects.create_superuser("root", password="pw-root-123")
    request = erasures.erasure_request(
        site=shop, key=GONE, kind=ErasureRequest.ANONYMOUS_ID, requested_by=root
    )
    tasks.erase_user.apply(args=[str(request.pk)]).get()
    request.refresh_from_db()
    assert request.state == ErasureRequest.DONE, request.error
    seal_due(shop)
    assert number not in _stored_numbers(shop)
    assert usersets.numbers_of(shop.id, [GONE], assign=False) == {}
    mentions = rows_mentioning(GONE)
    assert not {"user_numbers", "user_number_keys", "user_sets"} & set(mentions), mentions
    kept = usersets.numbers_of(shop.id, ["ana-ü"], assign=False)["ana-ü"]
    assert kept in _stored_numbers(shop)
    assert_exact(shop)  # the raw rows are gone too: the brute force agrees
