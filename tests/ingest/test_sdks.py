"""Every field a Segment SDK sends is kept: three real SDKs against a live server.

The official Segment Python SDK, the RudderStack Python SDK (gzip on) and
@segment/analytics-node from npm each make the same calls to the live collector;
everything is read back through the API (timeline, activity, sessions, properties).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from sessions_app.foundation.core.userkeys import to_path as to_url
from tests.support.accounts import auth

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "cassandra"])

ROOT = Path(__file__).resolve().parents[2]
NODE_SCRIPT = Path(__file__).with_name("segment_node.mjs")
SNAKE = {
    "userId": "user_id",
    "anonymousId": "anonymous_id",
    "previousId": "previous_id",
    "groupId": "group_id",
}


def _python_call(client: Any, method: str, params: dict[str, Any]) -> None:
    kwargs = {SNAKE.get(k, k): v for k, v in params.items()}
    if isinstance(kwargs.get("timestamp"), str):
        kwargs["timestamp"] = datetime.fromisoformat(kwargs["timestamp"])
    getattr(client, method)(**kwargs)


def segment_python(url: str, key: str, calls: list[tuple[str, dict]]) -> None:
    from segment.analytics.client import Client

    client = Client(write_key=key, host=url, max_retries=1)
    for method, params in calls:
        _python_call(client, method, params)
    client.flush()
    client.shutdown()


def rudder_python(url: str, key: str, calls: list[tuple[str, dict]]) -> None:
    from rudderstack.analytics.client import Client

    client = Client(write_key=key, host=url, max_retries=1, gzip=True)
    for method, params in calls:
        _python_call(client, method, params)
    client.flush()
    client.shutdown()


def segment_node(url: str, key: str, calls: list[tuple[str, dict]], tmp: Path) -> None:
    node = shutil.which("node")
    assert node, "Node.js is needed for @segment/analytics-node"
    assert (ROOT / "node_modules" / "@segment" / "analytics-node").exists(), "run npm ci"
    script = tmp / "calls.json"
    script.write_text(json.dumps(calls))
    run = subprocess.run(
        [node, str(NODE_SCRIPT), url, key, str(script)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr


SDKS = {
    "segment-python": ("analytics-python", segment_python),
    "rudderstack-python": ("analytics-python", rudder_python),
    "segment-node": ("@segment/analytics-node", segment_node),
}


def _send(sdk: str, live_server, site, calls, tmp_path) -> None:
    _, send = SDKS[sdk]
    if sdk == "segment-node":
        send(live_server.url, site.key, calls, tmp_path)
    else:
        send(live_server.url, site.key, calls)


def _get(client, token, path: str, **params: Any) -> Any:
    response = client.get(path, params, **auth(token))
    assert response.status_code == 200, response.content
    return response.json()


def _user(site, key: str, route: str) -> str:
    """The API path of a user route (keys with "/" are written ~base64url)."""
    return f"/api/sites/{site.id}/users/{to_url(key)}/{route}"


def _activity(client, token, site, key: str) -> list[dict]:
    return _get(client, token, _user(site, key, "activity"), limit=1000)["events"]


def _timeline(client, token, site, key: str) -> list[dict]:
    sessions = _get(client, token, _user(site, key, "sessions"))["sessions"]
    events: list[dict] = []
    for s in sorted(sessions, key=lambda s: s["started_at"]):
        path = f"/api/sites/{site.id}/sessions/{s['session_id']}/events"
        events += _get(client, token, path)["events"]
    return events


def _iso(ts: datetime) -> str:
    return ts.isoformat(timespec="milliseconds")


CONTEXT = {
    "campaign": {
        "source": "newsletter",
        "medium": "email",
        "name": "spring-sale",
        "term": "shoes",
        "content": "hero",
    },
    "page": {
        "url": "https://shop.example/pricing?ref=mail",
        "path": "/pricing",
        "referrer": "https://search.example/?q=shop",
        "title": "Pricing",
        "search": "?ref=mail",
    },
    "userAgent": "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0",
    "ip": "203.0.113.77",
    "locale": "de-DE",
    "timezone": "Europe/Berlin",
    "somethingNew": {"nested": [1, 2, 3]},  # unknown: kept out, never a rejection
}


@pytest.mark.parametrize("sdk", list(SDKS))
def test_every_segment_field_is_kept(sdk, live_server, site, token, client, tmp_path):
    library, _ = SDKS[sdk]
    anon, user = f"anon-{sdk}", f"org/{sdk}"  # a "/" in the user id, as Segment ids have
    t0 = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=10)
    at = [_iso(t0 + timedelta(seconds=10 * i)) for i in range(8)]
    calls: list[tuple[str, dict]] = [
        (
            "page",
            {
                "anonymousId": anon,
                "category": "Docs",
                "name": "Pricing",
                "properties": {"plan_shown": "pro"},
                "context": CONTEXT,
                "timestamp": at[0],
            },
        ),
        (
            "track",
            {
                "anonymousId": anon,
                "event": "Plan Chosen",
                "properties": {"plan": "pro", "price": 49.5},
                "context": {"page": CONTEXT["page"], "locale": "de-DE"},
                "timestamp": at[1],
            },
        ),
        ("alias", {"previousId": anon, "userId": user, "timestamp": at[2]}),
        (
            "identify",
            {
                "userId": user,
                "traits": {"plan": "pro", "email": "ana@example.com", "seats": 3},
                "timestamp": at[3],
            },
        ),
        (
            "group",
            {"userId": user, "groupId": "acme", "traits": {"name": "Acme"}, "timestamp": at[4]},
        ),
        (
            "screen",
            {
                "userId": user,
                "name": "Home",
                "category": "App",
                "properties": {"tab": 2},
                "timestamp": at[5],
            },
        ),
        ("identify", {"userId": user, "traits": {"plan": "enterprise"}, "timestamp": at[6]}),
    ]
    _send(sdk, live_server, site, calls, tmp_path)

    # The anonymous page view and track, with every page, campaign and context field.
    [page, track] = _timeline(client, token, site, anon)
    assert (page["type"], page["name"], page["title"]) == ("pageview", "Pricing", "Pricing")
    assert page["url"] == "https://shop.example/pricing?ref=mail"
    assert page["referrer"] == "https://search.example/?q=shop"
    assert page["props"] == {"plan_shown": "pro"}
    context = page["context"]
    assert context["library"]["name"] == library and context["library"].get("version")
    assert {k: v for k, v in context.items() if k != "library"} == {
        "category": "Docs",
        "path": "/pricing",
        "search": "?ref=mail",
        "utm_source": "newsletter",
        "utm_medium": "email",
        "utm_campaign": "spring-sale",
        "utm_term": "shoes",
        "utm_content": "hero",
        "locale": "de-DE",
        "timezone": "Europe/Berlin",
        "user_agent": CONTEXT["userAgent"],
        "ip": "203.0.113.0",  # anonymized like every IP
    }
    assert (track["name"], track["props"]) == ("Plan Chosen", {"plan": "pro", "price": 49.5})
    assert track["context"]["path"] == "/pricing" and track["url"] == page["url"]

    # The user's own events, in call order, with identify traits, group and screen.
    events = _activity(client, token, site, user)
    assert [e["name"] for e in events] == ["$alias", "$identify", "$group", "$screen", "$identify"]
    assert events[0]["props"] == {"previous_id": anon}
    assert events[1]["props"] == {"plan": "pro", "email": "ana@example.com", "seats": 3}
    assert events[2]["props"] == {"group_id": "acme", "traits": {"name": "Acme"}}
    assert events[3]["context"]["screen"] == "Home"
    assert events[3]["context"]["category"] == "App" and events[3]["props"] == {"tab": 2}

    # alias linked the anonymous id exactly as an identify after anonymous activity does.
    sessions = _get(client, token, _user(site, user, "sessions"))
    assert sessions["linked_anonymous_ids"] == [anon]
    assert {s["user_key"] for s in sessions["sessions"]} == {anon, user}

    # User properties: the latest value of each trait, when it was first and last set.
    props = _get(client, token, _user(site, user, "properties"))["properties"]
    by_name = {p["name"]: p for p in props}
    assert {n: p["value"] for n, p in by_name.items()} == {
        "email": "ana@example.com",
        "plan": "enterprise",
        "seats": 3,
    }
    assert by_name["plan"]["first_set_at"].startswith(at[3][:19])
    assert by_name["plan"]["last_set_at"].startswith(at[6][:19])
    assert by_name["email"]["last_set_at"].startswith(at[3][:19])


def test_identify_first_then_page_and_tracks_come_back_in_call_order(
    live_server, site, token, client, tmp_path
):
    """The report: through analytics-node (milliseconds only), four tracks came back
    1, 3, 0, 2 and the identify made first was shown after the page view."""
    user = "node-order"
    calls = [("identify", {"userId": user, "traits": {"plan": "pro"}})]
    calls.append(("page", {"userId": user, "name": "Home", "context": CONTEXT}))
    calls += [("track", {"userId": user, "event": f"track-{i}"}) for i in range(4)]
    segment_node(live_server.url, site.key, calls, tmp_path)
    names = [e["name"] for e in _timeline(client, token, site, user)]
    assert names == ["$identify", "Home", "track-0", "track-1", "track-2", "track-3"]


def test_a_hundred_tracks_in_a_tight_loop_come_back_in_call_order(live_server, site, token, client):
    from segment.analytics.client import Client

    sdk = Client(write_key=site.key, host=live_server.url, max_retries=1)
    for i in range(100):
        sdk.track(anonymous_id="loop", event=f"e{i:03d}")
    sdk.flush()
    sdk.shutdown()
    expected = [f"e{i:03d}" for i in range(100)]
    assert [e["name"] for e in _activity(client, token, site, "loop")] == expected
    assert [e["name"] for e in _timeline(client, token, site, "loop")] == expected


def test_unknown_fields_never_reject_a_message(client, site, token):
    """Extra top-level fields, odd context values and URLs that are not http(s) are
    left out; the message is kept."""
    now = datetime.now(UTC) - timedelta(minutes=1)
    body = {
        "batch": [
            {
                "type": "track",
                "messageId": "m-unknown",
                "anonymousId": "odd",
                "event": "Odd",
                "timestamp": _iso(now),
                "brandNew": {"a": 1},
                "integrations": {"All": False},
                "context": {
                    "page": {"url": "android-app://com.shop/home", "referrer": ""},
                    "locale": 42,
                    "timezone": "x" * 500,
                    "library": "not-an-object",
                    "campaign": "not-an-object",
                    "traits": [1, 2],
                },
            },
            {
                "type": "page",
                "messageId": "m-server-page",
                "userId": "server",
                "name": "Checkout",
                "timestamp": _iso(now),
            },
        ],
        "writeKey": site.key,
        "somethingElse": True,
    }
    response = client.post("/v1/batch", json.dumps(body), content_type="application/json")
    assert response.status_code == 200, response.content
    assert response.json()["accepted"] == 2, response.json()
    [odd] = _activity(client, token, site, "odd")
    assert odd["name"] == "Odd" and odd["url"] is None
    assert odd["context"] == {"timezone": "x" * 64}  # cut to its limit
    [page] = _activity(client, token, site, "server")
    assert (page["type"], page["name"], page["url"]) == ("pageview", "Checkout", None)
