"""The dashboard's entry pages and the Paths page's entrances count different things, and
both pages say so: an entry page is the page of a session's first event (a login, a
click), an entrance its first page view; a session without a page view has an entry page
and no entrance. Checked against the sessions sent."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.support.clock import recent_fixed
from tests.support.dataset import AGENTS
from tests.support.events import event
from tests.support.paths import send
from tests.support.sealing import seal_everything

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

SHOP = "https://shop.example"


def _visits(client, site) -> None:
    """Yesterday: two sessions that land on a page view, one whose login on /login comes
    before its first page view (/account), and one of clicks alone."""
    start = recent_fixed(days_ago=1, at=timedelta(hours=10))
    for n, path in enumerate(["/pricing", "/pricing"]):
        ts = start + timedelta(hours=n)
        send(client, site, [event(ts, anon=f"land-{n}", url=SHOP + path)], AGENTS[0])
    ts = start + timedelta(hours=2)
    login = event(ts, kind="custom", name="$identify", anon="login", url=SHOP + "/login")
    view = event(ts + timedelta(seconds=5), anon="login", url=SHOP + "/account")
    send(client, site, [login, view], AGENTS[1])
    ts = start + timedelta(hours=3)
    clicks = [
        event(ts + timedelta(seconds=s), kind="click", anon="clicker", url=SHOP + "/docs")
        for s in (0, 4)
    ]
    send(client, site, clicks, AGENTS[2])
    seal_everything(site, timezone.now())


def test_entry_pages_and_entrances_differ_as_their_pages_say(client, analyst, site):
    _visits(client, site)
    range_ = {"period": "7d"}

    report = client.get(f"/api/sites/{site.id}/report", range_).json()
    entries = {row["value"]: row["sessions"] for row in report["breakdowns"]["entry"]}
    assert entries == {"/pricing": 2, "/login": 1, "/docs": 1}  # a session's first event

    paths = client.get(f"/api/sites/{site.id}/paths", range_).json()
    entrances = {link["target"]: link["count"] for link in paths["links"] if link["step"] == 0}
    assert entrances == {"/pricing": 2, "/account": 1}  # a session's first page view

    dashboard = client.get(f"/sites/{site.id}/", range_).content.decode()
    assert "The page of each session&#x27;s first event" in dashboard
    assert "Paths count an entrance at its first page view" in dashboard
    page = client.get(f"/sites/{site.id}/paths/", range_).content.decode()
    assert "a session without one has no path" in page
    transitions = client.get(
        f"/sites/{site.id}/transitions/", {**range_, "page": "/account"}
    ).content.decode()
    assert "Entrances: the sessions whose first page view was this page" in transitions
