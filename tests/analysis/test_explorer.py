"""The session explorer (features/analysis/explorer.py) against a brute-force filter of the same
sessions: every filter alone, random combinations, paging across day partitions and
shards, the API and page, bad input, and an index missing."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from cassandra import InvalidRequest, ReadFailure
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from sessions_app.features.analysis import explorer
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.core.cql import cassandra_session, keyspace
from sessions_app.foundation.core.ids import uuid_time
from sessions_app.foundation.tables import registry, site_sessions
from tests.support.accounts import auth
from tests.support.browser import wait_for
from tests.support.dataset import sessions_send, sessions_truth
from tests.support.explorer import candidates, matches
from tests.support.shared import World, built_once, restored, shop_site

pytestmark = [
    pytest.mark.django_db(databases=["default", "cassandra"]),
    pytest.mark.xdist_group("explorer"),  # one worker builds the sessions once
]


def expected(truth, query: explorer.ExplorerQuery) -> list[uuid.UUID]:
    chosen = [
        s
        for s in truth
        if query.start <= uuid_time(s["session_id"]) < query.end and matches(s, query.filters)
    ]
    chosen.sort(key=lambda s: explorer.cassandra_order(s["session_id"]), reverse=True)
    return [s["session_id"] for s in chosen]


def every_page(site, query, limit: int) -> tuple[list[uuid.UUID], int]:
    ids, cursor, pages = [], None, 0
    while True:
        page = explorer.sessions_explore(site_id=site.id, query=query, cursor=cursor, limit=limit)
        ids.extend(s["session_id"] for s in page.sessions)
        pages += 1
        cursor = page.next_cursor
        if cursor is None:
            return ids, pages
        assert pages < 200


@pytest.fixture(scope="module")
def built(django_db_setup, django_db_blocker) -> Iterator[World[tuple[Any, datetime, list]]]:
    """The sessions the tests asking for them read, built once (tests/support/shared.py)."""
    yield from built_once(django_db_blocker, _sessions)


@pytest.fixture
def site(built, db):
    """The sessions' site (no test here writes to a site)."""
    return restored(built)[0]


@pytest.fixture
def sessions(built, site) -> tuple[datetime, list]:
    _, now, truth = built.value
    return now, truth


def _sessions() -> tuple[Any, datetime, list]:
    site = shop_site()
    now = timezone.now().replace(microsecond=0)
    sent = sessions_send(Client(), site, now=now, count=90, days=4, seed=25)
    truth = sessions_truth(site, sent)
    assert len(truth) == 90
    return site, now, truth


def test_every_filter_alone_and_in_random_combinations_matches_the_brute_force(site, sessions):
    now, truth = sessions
    values = candidates(truth)
    query = explorer.ExplorerQuery(start=now - timedelta(days=5), end=now + timedelta(hours=1))
    assert every_page(site, query, 50)[0] == expected(truth, query)
    tried = 0
    for name, options in values.items():
        for value in options:
            q = explorer.ExplorerQuery(start=query.start, end=query.end, filters={name: value})
            got = [
                s["session_id"]
                for s in explorer.sessions_explore(site_id=site.id, query=q, limit=200).sessions
            ]
            assert got == expected(truth, q), (name, value)
            tried += 1
    rng = random.Random(2025)
    nonempty = 0
    for _ in range(150):
        names = rng.sample(sorted(values), rng.randrange(2, 5))
        filters = {n: rng.choice(values[n]) for n in names}
        start = now - timedelta(hours=rng.randrange(2, 120))
        q = explorer.ExplorerQuery(start=start, end=now + timedelta(hours=1), filters=filters)
        want = expected(truth, q)
        assert every_page(site, q, rng.choice([1, 3, 50]))[0] == want, filters
        nonempty += bool(want)
    assert tried > 40 and nonempty > 10  # the combinations did find sessions


def test_pages_cross_days_and_shards_without_gaps_or_repeats(site, sessions):
    now, truth = sessions
    query = explorer.ExplorerQuery(start=now - timedelta(days=5), end=now + timedelta(hours=1))
    days = {uuid_time(s["session_id"]).date() for s in truth}
    assert len(days) >= 4
    for limit in (1, 7, 30):
        ids, pages = every_page(site, query, limit)
        assert ids == expected(truth, query) and pages >= len(ids) // limit


def test_a_request_reads_a_bounded_number_of_partitions_and_says_where_to_go_on(
    site, sessions, monkeypatch
):
    now, truth = sessions
    monkeypatch.setattr(explorer, "MAX_PARTITIONS", 4)  # two days of two shards
    # Up to an hour ahead, but not into tomorrow: six days whatever the time of day.
    end = min(
        now + timedelta(hours=1), timebuckets.next_start(timebuckets.floor(now, "day"), "day")
    )
    query = explorer.ExplorerQuery(
        start=now - timedelta(days=5), end=end, filters={"country": "none"}
    )
    page = explorer.sessions_explore(site_id=site.id, query=query)
    assert page.sessions == [] and page.partitions_read <= 4 and page.next_cursor
    ids, pages = every_page(site, query, 50)
    assert ids == [] and pages == 3  # six days of two shards, four partitions a request
    broad = explorer.ExplorerQuery(start=query.start, end=query.end)
    assert every_page(site, broad, 50)[0] == expected(truth, broad)


def test_the_api_and_the_page_share_the_filter_and_open_timelines(
    client, site, sessions, token, analyst
):
    now, truth = sessions
    target = next(s for s in truth if s["country"] and s["device"])
    params = {
        "country": target["country"],
        "device": target["device"],
        "start": (now - timedelta(days=5)).isoformat(),
    }
    body = client.get(f"/api/sites/{site.id}/sessions", params, **auth(token)).json()
    q = explorer.explorer_query_parse(params, now=timezone.now())
    assert [uuid.UUID(s["session_id"]) for s in body["sessions"]] == expected(truth, q)
    assert body["filters"]["country"] == target["country"]
    page = client.get(reverse("sessions_app:sessions", args=[site.id]), body["filters"])
    html = page.content.decode()
    assert page.status_code == 200
    for s in body["sessions"]:
        assert reverse("sessions_app:session", args=[site.id, s["session_id"]]) in html
    assert f"country={target['country']}" in html  # the share link carries the filter


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"start": "yesterday"}, "start"),
        ({"start": "2026-01-01T00:00:00Z", "end": "2026-06-01T00:00:00Z"}, "end"),
        ({"converted": "maybe"}, "converted"),
        ({"duration_min": "ten"}, "duration_min"),
        ({"events_min": "5", "events_max": "2"}, "events_max"),
        ({"country": "x" * 600}, "country"),
        ({"cursor": "bm9wZQ"}, "cursor"),
        ({"limit": "0"}, "limit"),
    ],
)
def test_bad_input_names_its_field(client, site, token, analyst, params, field):
    response = client.get(f"/api/sites/{site.id}/sessions", params, **auth(token))
    assert response.status_code == 400 and response.json()["field"] == field
    page = client.get(reverse("sessions_app:sessions", args=[site.id]), params)
    if field != "limit":
        assert page.status_code == 400 and field in page.content.decode()


def test_a_missing_index_fails_the_query_instead_of_scanning(site, now):
    query = explorer.ExplorerQuery(
        start=now - timedelta(days=1), end=now, filters={"campaign": "x"}
    )
    explorer.sessions_explore(site_id=site.id, query=query)
    cassandra_session().execute(f"DROP INDEX {keyspace()}.site_sessions_terms")
    try:
        with pytest.raises(InvalidRequest, match="filtering"):
            explorer.sessions_explore(site_id=site.id, query=query)
    finally:
        registry.indexes_ensure()

    def answers() -> bool:  # rebuilt over the rows earlier tests left: ready once built
        try:
            explorer.sessions_explore(site_id=site.id, query=query)
        except ReadFailure as exc:
            assert "INDEX_NOT_AVAILABLE" in str(exc), exc
            return False
        return True

    wait_for(answers, timeout=120)


def test_every_filter_column_has_its_index(site):
    rows = cassandra_session().execute(
        "SELECT options FROM system_schema.indexes WHERE keyspace_name = %s "
        "AND table_name = 'site_sessions'",
        (keyspace(),),
    )
    targets = {
        r["options"]["target"].removeprefix("values(").rstrip(")")
        for r in rows
        if r["options"]["class_name"] in ("sai", "StorageAttachedIndex")
    }
    columns = {clause.split(" ")[0] for clause in site_sessions.filters().values()}
    assert columns == set(site_sessions.indexed()) and columns <= targets


def test_parse_refuses_a_range_over_92_days():
    with pytest.raises(RangeError):
        explorer.explorer_query_parse(
            {"start": "2026-01-01T00:00:00Z", "end": "2026-05-01T00:00:00Z"},
            now=datetime(2026, 6, 1).astimezone(),
        )
