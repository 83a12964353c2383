"""Stylesheets stored once per site by content hash (features/replays/assets.py, replay_assets): the
chunks keep a reference, the player's read answers the recording as the recorder sent it,
and a stylesheet past its retention degrades visibly."""

from __future__ import annotations

import copy
import gzip
import hashlib
import json
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User

from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.tables import registry, user_sessions
from tests.support.accounts import member
from tests.support.events import event, post
from tests.support.replays import chunk, send

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

# The shop's stylesheet (> 1 KB, with non-ASCII text) and a small one that stays inline.
SHOP_CSS = (
    "".join(f".product-{i} {{ color: #{i:06x}; margin: {i}px; }}\n" for i in range(60))
    + '.cart::after { content: "→ ✓ 𝄞 «panier»"; }\n'
)
SMALL_CSS = "body { margin: 0; }"
ASSET = "SELECT size, data, ttl(data) AS ttl, writetime(data) AS written FROM {ks}.replay_assets WHERE site_id = ? AND hash = ?"  # noqa: E501
CHUNKS = "SELECT data FROM {ks}.replay_chunks WHERE site_id = ? AND session_id = ?"


def _ms(ts) -> int:
    return round(ts.timestamp() * 1000)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def snapshot(start_ms: int) -> list[dict[str, Any]]:
    """A page load's first rrweb events: meta, then the full snapshot with the shop's
    stylesheet inlined twice (a <link>'s _cssText and a <style>'s text) and a small one."""
    head = [
        {
            "type": 2,
            "tagName": "link",
            "attributes": {"_cssText": SHOP_CSS},
            "childNodes": [],
            "id": 4,
        },
        {
            "type": 2,
            "tagName": "style",
            "attributes": {},
            "id": 5,
            "childNodes": [{"type": 3, "textContent": SHOP_CSS, "isStyle": True, "id": 6}],
        },
        {
            "type": 2,
            "tagName": "style",
            "attributes": {"_cssText": SMALL_CSS},
            "childNodes": [],
            "id": 7,
        },
    ]
    body = [{"type": 3, "textContent": "Signed in as ana", "id": 9}]
    html = {
        "type": 2,
        "tagName": "html",
        "attributes": {"lang": "en"},
        "id": 2,
        "childNodes": [
            {"type": 2, "tagName": "head", "attributes": {}, "childNodes": head, "id": 3},
            {"type": 2, "tagName": "body", "attributes": {}, "childNodes": body, "id": 8},
        ],
    }
    return [
        {
            "type": 4,
            "timestamp": start_ms,
            "data": {"href": "https://shop.example/", "width": 1366, "height": 900},
        },
        {
            "type": 2,
            "timestamp": start_ms + 1,
            "data": {
                "node": {"type": 0, "childNodes": [html], "id": 1},
                "initialOffset": {"left": 0, "top": 0},
            },
        },
        {
            "type": 3,
            "timestamp": start_ms + 2,
            "data": {"source": 8, "id": 5, "adds": [{"rule": "a{}", "index": 0}]},
        },
    ]


def _page_load(site, start, anon: str) -> dict[str, Any]:
    body = chunk(site, start, anon=anon)
    body["events"] = snapshot(_ms(start))
    body["start"], body["end"] = body["events"][0]["timestamp"], body["events"][-1]["timestamp"]
    return body


def _session(site, anon: str):
    [session] = user_sessions.session_list(site_id=site.id, user_key=anon)
    return session["session_id"]


def _stored_text(site, session_id) -> str:
    rows = cassandra_session().execute(prepare(CHUNKS), (site.id, session_id))
    return "".join(gzip.decompress(r["data"]).decode() for r in rows)


def _read(client, site, session_id) -> dict[str, Any]:
    url = f"/api/sites/{site.id}/sessions/{session_id}/replay"
    response = client.get(url)
    assert response.status_code == 200, response.content
    return response.json()


def test_two_sessions_with_the_same_stylesheet_store_it_once(client, replay_site, visit):
    post(client, replay_site, [event(visit, anon="bob")])
    first = _page_load(replay_site, visit + timedelta(seconds=1), "anon-1")
    second = _page_load(replay_site, visit + timedelta(seconds=2), "bob")
    assert send(client, replay_site, first).status_code == 200
    digest = _digest(SHOP_CSS)
    [asset] = cassandra_session().execute(prepare(ASSET), (replay_site.id, digest))
    assert send(client, replay_site, second).status_code == 200
    [again] = cassandra_session().execute(prepare(ASSET), (replay_site.id, digest))
    assert again["written"] == asset["written"]  # not written again for the second session
    assert gzip.decompress(asset["data"]).decode() == SHOP_CSS
    assert asset["size"] == len(SHOP_CSS.encode())
    assert 30 * 86_400 < asset["ttl"] <= 31 * 86_400  # the replay retention and a day
    raw = len(gzip.compress(json.dumps(first).encode()))
    for anon in ("anon-1", "bob"):
        text = _stored_text(replay_site, _session(replay_site, anon))
        assert ".product-59" not in text and text.count(digest) == 2
        assert SMALL_CSS in text  # under 1 KB: stays in the chunk
        assert len(text) < len(json.dumps(first)) - len(SHOP_CSS)
    stored = cassandra_session().execute(
        prepare("SELECT size FROM {ks}.replay_chunks WHERE site_id = ? AND session_id = ?"),
        (replay_site.id, _session(replay_site, "bob")),
    )
    assert stored.one()["size"] < raw


def test_the_player_reads_the_recording_as_it_was_sent(client, replay_site, visit):
    body = _page_load(replay_site, visit + timedelta(seconds=1), "anon-1")
    sent = copy.deepcopy(body["events"])
    assert send(client, replay_site, body).status_code == 200
    member(User.objects.create_user("ana", password="pw-ana-123"), replay_site)
    client.login(username="ana", password="pw-ana-123")
    read = _read(client, replay_site, _session(replay_site, "anon-1"))
    assert read["events"] == json.loads(json.dumps(sent))
    assert read["missing_assets"] == []


def test_a_stylesheet_no_longer_stored_degrades_visibly(client, replay_site, visit):
    body = _page_load(replay_site, visit + timedelta(seconds=1), "anon-1")
    assert send(client, replay_site, body).status_code == 200
    digest = _digest(SHOP_CSS)
    cassandra_session().execute(
        prepare("DELETE FROM {ks}.replay_assets WHERE site_id = ? AND hash = ?"),
        (replay_site.id, digest),
    )
    member(User.objects.create_user("ana", password="pw-ana-123"), replay_site)
    client.login(username="ana", password="pw-ana-123")
    read = _read(client, replay_site, _session(replay_site, "anon-1"))
    assert read["missing_assets"] == [digest]
    link = read["events"][1]["data"]["node"]["childNodes"][0]["childNodes"][0]["childNodes"][0]
    assert link["attributes"]["_cssText"] == (
        f"/* clickstream: this stylesheet ({digest[:12]}) is no longer stored */"
    )
    assert read["events"][0] == body["events"][0]  # the rest plays


def test_the_assets_table_is_registered_and_erased():
    """A page can put a visitor's data in a stylesheet: erasure reads the stylesheets."""
    spec = registry.BY_NAME["replay_assets"]
    assert spec.erasure == "_delete_replays" and spec.purge is None and spec.policies == ()
    assert "replay_assets" in registry.erased_tables()
    assert spec.partition_key == ("site_id", "hash")
