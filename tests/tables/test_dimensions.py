"""The dimension registry: a dimension added in this one file is derived at ingest,
stored, broken down, titled, filtered, splits funnels and is in the API schema."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from sessions_app.domain.aggregates import breakdowns, sources
from sessions_app.features.analysis import explorer
from sessions_app.features.funnels import defs
from sessions_app.features.funnels import results as funnel_results
from sessions_app.foundation import dimensions
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import cassandra_session, keyspace
from sessions_app.foundation.dimensions import AGENT, Dimension
from sessions_app.foundation.tables import site_sessions, user_sessions
from sessions_app.foundation.tables.site_sessions import SiteSession
from sessions_app.foundation.tables.user_sessions import UserSession
from tests.support.accounts import auth
from tests.support.clock import recent_fixed
from tests.support.dataset import AGENTS, SHOP
from tests.support.events import event, post
from tests.support.sealing import seal_everything

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

# The browser's major version again, under another name and column: derived from what
# enrich.agent already yields, so only the column is new.
MAJOR = Dimension(
    "major",
    "Browser majors",
    "Browser major",
    "browser_major",
    (AGENT, "browser_version"),
    breaks_down=True,
    filters=True,
    splits_funnels=True,
    example="131",
    width=4,
)
SCHEMA = (
    "ALTER TABLE {ks}.user_sessions ADD browser_major text",
    "ALTER TABLE {ks}.site_sessions ADD browser_major text",
)  # no index: a dimension of the agent is looked up through the row's terms
UNDO = (
    "ALTER TABLE {ks}.site_sessions DROP browser_major",
    "ALTER TABLE {ks}.user_sessions DROP browser_major",
)


def send(client, site, events: list[dict], agent: str) -> None:
    response = post(client, site, events, HTTP_USER_AGENT=agent, REMOTE_ADDR="8.8.8.8")
    assert response.status_code == 200 and response.json()["accepted"] == len(events)


def _run(statements: tuple[str, ...]) -> None:
    for cql in statements:
        cassandra_session().execute(cql.format(ks=keyspace()), timeout=120)


@pytest.fixture
def major(monkeypatch):
    """MAJOR in the registry, its columns in the keyspace (what sync_cassandra adds for an
    entry in foundation/dimensions.py), both gone after."""
    _run(SCHEMA)
    monkeypatch.setattr(dimensions, "DIMENSIONS", (*dimensions.DIMENSIONS, MAJOR))
    yield MAJOR
    monkeypatch.undo()
    _run(UNDO)


def test_the_models_columns_and_the_indexes_come_from_the_registry():
    assert set(user_sessions.columns_of()) <= set(UserSession._columns)
    assert {d.column for d in dimensions.explored()} <= set(SiteSession._columns)
    indexed = " ".join(site_sessions.INDEXES)
    looked_up = {d.name for d in site_sessions.termed()}
    assert "(terms)" in indexed and looked_up == {
        "source",
        "medium",
        "campaign",
        "country",
        "device",
        "browser",
        "os",
    }
    assert all(f"({d.column})" in indexed or d.name in looked_up for d in dimensions.filters())
    assert [d.name for d in dimensions.breakdowns()] == list(breakdowns.names())


def test_a_dimension_added_in_one_place_is_in_every_place(
    client, analyst, site, token, major, settings
):
    settings.FUNNEL_INLINE_DAYS = 100  # no worker here: every day is scanned in the request
    at = recent_fixed(days_ago=2, at=timedelta(hours=10))
    day = timebuckets.floor(at, "day")
    for anon, agent in (("m1", AGENTS[0]), ("m2", AGENTS[1]), ("m3", AGENTS[0])):
        checkout = event(at + timedelta(minutes=1), kind="custom", anon=anon, name="checkout")
        send(client, site, [event(at, anon=anon, url=SHOP + "/"), checkout], agent)
    # Derived at ingest and stored: the summary (user_sessions) and the explorer's row.
    [summary] = user_sessions.session_list(site_id=site.id, user_key="m2")
    assert summary["browser_major"] == "133" and summary["browser_version"] == "133"
    end = timebuckets.next_start(day, "day")
    query = explorer.explorer_query_parse(
        {"major": "131", "start": day.isoformat(), "end": end.isoformat()},
        now=timezone.now(),
    )
    found = explorer.sessions_explore(site_id=site.id, query=query)
    assert sorted(s["user_key"] for s in found.sessions) == ["m1", "m3"]
    assert query.params()["major"] == "131"
    # Broken down, live and sealed, and titled on the dashboard.
    rows = sources.started_rows(site_id=site.id, hour=at)
    live = breakdowns.breakdown_count(rows)["major"]
    assert {v: e.sessions for v, e in live.items()} == {"131": 2, "133": 1}
    seal_everything(site, timezone.now())
    page = client.get(
        reverse("sessions_app:dashboard", args=[site.id]),
        {"start": day.isoformat(), "end": end.isoformat(), "width": "day"},
    )
    html = page.content.decode()
    assert page.status_code == 200 and "Browser majors" in html and 'data-dimension="major"' in html
    # A filter field on the explorer's page.
    page = client.get(reverse("sessions_app:sessions", args=[site.id]), {"major": "133"})
    assert '<input name="major" value="133" placeholder="131" size="4">' in page.content.decode()
    # Splits funnels.
    steps = [
        {"kind": "pageview", "path": "/", "match": "exact"},
        {"kind": "event", "name": "checkout"},
    ]
    funnel = defs.funnel_create(site=site, name="m", definition={"steps": steps})
    result = funnel_results.funnel_units(site=site, version=funnel.current, start=day, end=end)
    split = funnel_results.funnel_summary(funnel.current.definition, result, breakdown="major")
    assert {b["value"]: b["counts"] for b in split["breakdown"]} == {"131": [2, 2], "133": [1, 1]}
    # In the API schema: a filter of the explorer, a value of the funnel breakdown.
    schema = json.loads(
        client.get(
            "/api/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json", **auth(token)
        ).content
    )
    paths = schema["paths"]
    explored = paths["/api/sites/{site_id}/sessions"]["get"]["parameters"]
    assert "major" in {p["name"] for p in explored}
    results = paths["/api/sites/{site_id}/funnels/{funnel_id}/results"]["get"]["parameters"]
    [breakdown] = [p for p in results if p["name"] == "breakdown"]
    assert "major" in breakdown["schema"]["enum"]


def test_a_cached_funnel_day_split_by_other_dimensions_is_scanned_again(
    client, site, monkeypatch, major, settings
):
    settings.FUNNEL_INLINE_DAYS = 100
    at = recent_fixed(days_ago=2, at=timedelta(hours=10))
    day = timebuckets.floor(at, "day")
    checkout = event(at + timedelta(minutes=1), kind="custom", anon="c1", name="checkout")
    send(client, site, [event(at, anon="c1", url=SHOP + "/"), checkout], AGENTS[2])
    seal_everything(site, timezone.now())
    steps = [
        {"kind": "pageview", "path": "/", "match": "exact"},
        {"kind": "event", "name": "checkout"},
    ]
    funnel = defs.funnel_create(site=site, name="c", definition={"steps": steps})
    end = timebuckets.next_start(day, "day")
    with monkeypatch.context() as before:  # the registry before MAJOR joined it
        before.setattr(dimensions, "DIMENSIONS", dimensions.DIMENSIONS[:-1])
        for cached in (0, 1):
            result = funnel_results.funnel_units(
                site=site, version=funnel.current, start=day, end=end
            )
            assert result.days_cached == cached
    result = funnel_results.funnel_units(site=site, version=funnel.current, start=day, end=end)
    assert result.days_cached == 0
    split = funnel_results.funnel_summary(funnel.current.definition, result, breakdown="major")
    assert split["breakdown"] == [{"value": "17", "counts": [1, 1], "rate": 1.0}]
