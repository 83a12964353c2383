"""Any user key works everywhere: dashboard, search, profile, activity, timeline, API.

Keys are whatever the tracker or a Segment library sent, so each is posted through the
real collector, then every page and API route that names a user is opened by the link
the app itself renders (or reverses), and must answer 200 about that user.
"""

from __future__ import annotations

import csv
import html
import io
import json
import re
from datetime import timedelta
from urllib.parse import quote

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from sessions_app.foundation.models import Site
from tests.support.events import event, post

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

KEYS = [
    "org/123",
    "a?b#c",
    "100%",
    "with space",
    "quote\"and'apos",
    "Zoë/ünïcode",
    "~tilde",
    "..",
    ".",
    "back\\slash",
    "plain-key",
    "ana@shop.example",
    "%2F%2e%2e",
    "tab\there",
    "Zoë/" * 64,  # 256 characters, the longest user_id
]


def _send(client: Client, site: Site, key: str, *, as_user_id: bool) -> None:
    """A visit of three events by key through POST /collect (user_id or anonymous_id)."""
    now = timezone.now()
    who = {"user_id": key, "anon": "anon-of-a-user"} if as_user_id else {"anon": key}
    props = {"who": key}
    events = [
        event(now - timedelta(minutes=3), url="https://shop.example/a", props=props, **who),
        event(now - timedelta(minutes=2), kind="click", props=props, **who),
        event(now - timedelta(minutes=1), kind="custom", name="login", props=props, **who),
    ]
    response = post(client, site, events)
    assert response.status_code == 200, response.content
    assert response.json()["accepted"] == 3, response.content


def _as_user_id(key: str) -> bool:
    """anonymous_id holds at most 128 characters; alternate the rest between the two."""
    return len(key) > 128 or KEYS.index(key) % 2 == 0


def _get(client: Client, url: str):
    response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return response


def _text(response) -> str:
    if response.streaming:
        return b"".join(response.streaming_content).decode()
    return response.content.decode()


def _hrefs(page: str) -> list[str]:
    return [html.unescape(h) for h in re.findall(r'href="([^"]*)"', page)]


def _link_to(page: str, url: str) -> str:
    """The href on the page that is url (with or without a query), or fail."""
    found = [h for h in _hrefs(page) if h.split("?")[0] == url]
    assert found, (url, _hrefs(page))
    return found[0]


def _export_rows(response) -> list[dict]:
    if response["Content-Type"] == "text/csv":
        rows = list(csv.DictReader(io.StringIO(_text(response))))
        return [{**r, "props": json.loads(r["props"])} for r in rows]
    return json.loads(_text(response))


@pytest.mark.parametrize("key", KEYS)
def test_every_page_and_api_route_reaches_the_user(client, analyst, site, token, key):
    _send(Client(), site, key, as_user_id=_as_user_id(key))
    shown = html.escape(key)
    profile_url = reverse("sessions_app:user-profile", args=[site.id, key])
    activity_url = reverse("sessions_app:activity", args=[site.id, key])
    export_url = reverse("api-activity-export", args=[site.id, key])
    assert "/" not in profile_url.removeprefix(f"/sites/{site.id}/users/").rstrip("/")

    # dashboard: the live feed links to the profile
    dashboard = _text(_get(client, f"/sites/{site.id}/"))
    assert f'href="{html.escape(profile_url)}">{shown}</a>' in dashboard

    # user search: redirects to the profile, which the redirect target opens
    found = client.get(f"/sites/{site.id}/users/", {"q": key})
    assert found.status_code == 302 and found["Location"] == profile_url

    # profile: about this user, with links to the activity, the export and the session
    profile = _text(_get(client, found["Location"]))
    assert f"<h1>{shown}</h1>" in profile
    _link_to(profile, activity_url)
    csv_link = _link_to(profile, export_url)
    explorer = f"/sites/{site.id}/sessions/"  # the site menu's session explorer
    session_links = [h for h in _hrefs(profile) if explorer in h and not h.endswith(explorer)]
    assert len(session_links) == 1

    # activity page: this user's three events, and a link back to the profile
    activity = _text(_get(client, activity_url))
    assert f'Activity of <a href="{html.escape(profile_url)}">{shown}</a>' in activity
    assert activity.count('<tr class="event">') == 3

    # session timeline: its header names the user and links to the same profile
    session = _text(_get(client, session_links[0]))
    assert f'Session of <a href="{html.escape(profile_url)}">{shown}</a>' in session
    _get(client, _link_to(session, profile_url))

    # the activity export, as the profile links it (CSV) and as JSON
    for response in (
        _get(client, csv_link),
        _get(client, f"{export_url}?format=json"),
    ):
        rows = _export_rows(response)
        assert [r["type"] for r in rows] == ["pageview", "click", "custom"]
        assert all(r["props"] == {"who": key} for r in rows)

    # every API route with a user key, as a token client reaches them
    api = Client(HTTP_AUTHORIZATION=f"Token {token}")
    sessions = _get(api, reverse("api-user-sessions", args=[site.id, key])).json()
    assert sessions["user_key"] == key and len(sessions["sessions"]) == 1
    assert session_links[0].endswith(f"/sessions/{sessions['sessions'][0]['session_id']}/")
    counters_url = reverse("api-user-counters", args=[site.id, key])
    counters = _get(api, f"{counters_url}?event=login").json()
    assert counters["user_key"] == key
    assert [w["count"] for w in counters["windows"]] == [1] * len(counters["windows"])
    events = _get(api, reverse("api-user-activity", args=[site.id, key])).json()["events"]
    assert [e["props"] for e in events] == [{"who": key}] * 3

    # the user's properties (from an identify): API, its export, the profile's link
    who = {"user_id": key, "anon": "anon-of-a-user"} if _as_user_id(key) else {"anon": key}
    trait = event(timezone.now(), kind="custom", name="$identify", props={"who": key}, **who)
    assert post(Client(), site, [trait]).json()["accepted"] == 1
    properties_url = reverse("api-user-properties", args=[site.id, key])
    found = _get(api, properties_url).json()
    assert found["user_key"] == key and found["properties"][0]["value"] == key
    export = _link_to(_text(_get(client, profile_url)), f"{properties_url}/export")
    assert (
        json.loads(next(csv.DictReader(io.StringIO(_text(_get(client, export)))))["value"]) == key
    )


@pytest.mark.parametrize(
    "key", [k for k in KEYS if "/" not in k and not k.startswith("~") and k not in (".", "..")]
)
def test_api_clients_may_send_a_key_without_slash_percent_encoded(site, token, key):
    _send(Client(), site, key, as_user_id=_as_user_id(key))
    api = Client(HTTP_AUTHORIZATION=f"Token {token}")
    sessions = _get(api, f"/api/sites/{site.id}/users/{quote(key, safe='')}/sessions").json()
    assert sessions["user_key"] == key and len(sessions["sessions"]) == 1


def test_the_dashboard_links_every_user_of_its_feed(client, analyst, site):
    for key in KEYS[:12]:  # the feed shows the latest 15 sessions
        _send(Client(), site, key, as_user_id=_as_user_id(key))
    dashboard = _text(_get(client, f"/sites/{site.id}/"))
    for key in KEYS[:12]:
        profile_url = reverse("sessions_app:user-profile", args=[site.id, key])
        assert f'href="{html.escape(profile_url)}">{html.escape(key)}</a>' in dashboard
        assert f"<h1>{html.escape(key)}</h1>" in _text(_get(client, profile_url))


@pytest.mark.parametrize("segment", ["~Q", "~QR", "~_w", "~a+b"])
def test_an_encoded_key_that_does_not_decode_is_404(client, analyst, site, token, segment):
    assert client.get(f"/sites/{site.id}/users/{quote(segment)}/").status_code == 404
    api = Client(HTTP_AUTHORIZATION=f"Token {token}")
    assert api.get(f"/api/sites/{site.id}/users/{quote(segment)}/sessions").status_code == 404


def test_the_api_schema_says_how_a_key_is_written(client, token):
    schema = client.get(
        "/api/schema",
        HTTP_ACCEPT="application/vnd.oai.openapi+json",
        HTTP_AUTHORIZATION=f"Token {token}",
    ).json()
    routes = [ops["get"] for path, ops in schema["paths"].items() if "{user_key}" in path]
    assert len(routes) == 6  # sessions, counters, activity and its export, properties and theirs
    for route in routes:
        [param] = [p for p in route["parameters"] if p["name"] == "user_key"]
        assert param["in"] == "path" and "~b3JnLzEyMw" in param["description"]
