"""Events come back in the order they happened, also within one millisecond.

Through the real collector, Cassandra and Redis: the timeline, the activity explorer
and both exports list a visitor's events by time, then (within one instant) in the
order their request listed them; the tracker's microseconds order events of one page.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta

import pytest

from sessions_app.foundation.core.redis_client import redis_client
from sessions_app.foundation.tables.user_sessions import session_list
from tests.support.events import event, post

pytestmark = pytest.mark.django_db


def _timeline(client, site, token, session_id) -> list[dict]:
    response = client.get(
        f"/api/sites/{site.id}/sessions/{session_id}/events", HTTP_AUTHORIZATION=f"Token {token}"
    )
    assert response.status_code == 200
    return response.json()["events"]


def _session_ids(site, key) -> list:
    return [s["session_id"] for s in session_list(site_id=site.id, user_key=key, limit=10)]


def _everywhere(client, site, token, key) -> dict[str, list[str]]:
    """The event names (or url for page views) in the order each reader lists them."""
    auth = {"HTTP_AUTHORIZATION": f"Token {token}"}
    base = f"/api/sites/{site.id}/users/{key}"

    def label(e: dict) -> str:
        return e["name"] or e["url"]

    [session_id] = _session_ids(site, key)
    activity = client.get(f"{base}/activity", {"limit": 1000}, **auth).json()["events"]
    exported = json.loads(client.get(f"{base}/activity/export", {"format": "json"}, **auth).content)
    session_csv = client.get(
        f"/api/sites/{site.id}/sessions/{session_id}/export", {"format": "csv"}, **auth
    )
    rows = list(csv.DictReader(io.StringIO(b"".join(session_csv.streaming_content).decode())))
    return {
        "timeline": [label(e) for e in _timeline(client, site, token, session_id)],
        "activity": [label(e) for e in activity],
        "activity export": [label(e) for e in exported],
        "session export": [r["name"] or r["url"] for r in rows],
    }


def test_one_requests_events_at_the_same_millisecond_keep_the_requests_order(
    client, site, token, live_now
):
    """An SDK that sends milliseconds only: 40 events in one instant, in call order."""
    at = live_now - timedelta(minutes=5)
    names = [f"step-{i:02d}" for i in range(40)]
    events = [event(at, kind="custom", anon="sdk-user", name=n, id=f"o-{n}") for n in names]
    assert post(client, site, events).json()["accepted"] == 40
    for reader, order in _everywhere(client, site, token, "sdk-user").items():
        assert order == names, reader


def test_microseconds_order_one_millisecond_whatever_the_request_order(
    client, site, token, live_now
):
    """The tracker's events of one millisecond (a click, then the SPA page view it
    caused) carry counting microseconds: time decides, not the position in the request."""
    at = live_now - timedelta(minutes=5)
    ms = at.isoformat(timespec="milliseconds")[:-6]  # "YYYY-MM-DDTHH:MM:SS.mmm"
    click = event(at, kind="click", anon="spa", id="c1", element={"tag": "a", "text": "Shop"})
    click["ts"] = f"{ms}000Z"
    view = event(at, anon="spa", id="v1", url="https://shop.example/shop")
    view["ts"] = f"{ms}001Z"
    later = event(at, kind="custom", anon="spa", id="t1", name="added")
    later["ts"] = f"{ms}002Z"
    assert post(client, site, [later, view, click]).json()["accepted"] == 3
    [session_id] = _session_ids(site, "spa")
    timeline = _timeline(client, site, token, session_id)
    assert [e["type"] for e in timeline] == ["click", "pageview", "custom"]
    # The stored time is the millisecond; all three share it.
    assert len({e["ts"] for e in timeline}) == 1


def test_a_resent_request_maps_to_the_same_rows(client, site, token, live_now):
    at = live_now - timedelta(minutes=5)
    events = [event(at, kind="custom", anon="resend", name=f"n{i}", id=f"r{i}") for i in range(6)]
    assert post(client, site, events).json()["accepted"] == 6
    assert post(client, site, events).json()["duplicates"] == 6
    # Without Redis's dedup marks the collector falls back to Cassandra: the tie-broken
    # row keys must be found again, so nothing is counted twice.
    redis_client().flushdb()
    again = post(client, site, events).json()
    assert (again["accepted"], again["duplicates"]) == (0, 6)
    [session_id] = _session_ids(site, "resend")
    assert [e["name"] for e in _timeline(client, site, token, session_id)] == [
        f"n{i}" for i in range(6)
    ]


def test_requests_are_ordered_by_time_between_them(client, site, token, live_now):
    at = live_now - timedelta(minutes=5)
    second = [event(at + timedelta(seconds=1), kind="custom", anon="two", name="b", id="b")]
    first = [event(at, kind="custom", anon="two", name="a", id="a")]
    post(client, site, second)
    post(client, site, first)
    [session_id] = _session_ids(site, "two")
    assert [e["name"] for e in _timeline(client, site, token, session_id)] == ["a", "b"]
