"""POST /replay and the replay read: stored chunks, limits with reasons, idempotency, TTL,
access, erasure."""

from __future__ import annotations

import gzip
import json
import uuid
from datetime import UTC, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User

from sessions_app import tasks
from sessions_app.domain.erasure import erasures
from sessions_app.domain.ledger import quality
from sessions_app.domain.partitions import partition_report
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.models import ErasureRequest
from sessions_app.foundation.tables import registry, user_sessions
from tests.support.accounts import member
from tests.support.events import ORIGIN, event, minutes, post
from tests.support.replays import _ms, chunk, send

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

SECRET = "hunter2-do-not-store"


def _rows(site) -> list[dict[str, Any]]:
    [session] = user_sessions.session_list(site_id=site.id, user_key="anon-1")
    cql = (
        "SELECT seq, chunk_id, size, data, ttl(data) AS ttl FROM {ks}.replay_chunks "
        "WHERE site_id = ? AND session_id = ?"
    )
    return list(cassandra_session().execute(prepare(cql), (site.id, session["session_id"])))


def test_a_chunk_is_stored_in_its_session_and_read_back_in_order(
    client, replay_site, visit, live_now
):
    first = chunk(replay_site, visit + timedelta(seconds=1), seq=0, page=visit)
    second = chunk(replay_site, visit + timedelta(seconds=30), seq=1, page=visit)
    # sent out of order, one as plain JSON: both land in their session, in recording order
    assert send(client, replay_site, second, compress=False).status_code == 200
    answer = send(client, replay_site, first)
    assert answer.status_code == 200, answer.content
    [session] = user_sessions.session_list(site_id=replay_site.id, user_key="anon-1")
    assert answer.json()["session_id"] == str(session["session_id"])
    rows = _rows(replay_site)
    assert [r["seq"] for r in rows] == [0, 1]
    assert json.loads(gzip.decompress(rows[1]["data"]))["events"] == second["events"]
    assert 29 * 86_400 < rows[0]["ttl"] <= 30 * 86_400  # the site's replay retention

    member(User.objects.create_user("ana", password="pw-ana-123"), replay_site)
    client.login(username="ana", password="pw-ana-123")
    url = f"/api/sites/{replay_site.id}/sessions/{session['session_id']}/replay"
    read = client.get(url).json()
    assert read["events"] == first["events"] + second["events"] and read["next"] is None
    assert [c["seq"] for c in read["chunks"]] == [0, 1]


def test_a_lone_surrogate_and_a_stylesheet_are_stored_and_read_back(client, replay_site, visit):
    """JSON a page can send that orjson refuses (a lone surrogate's escape) goes through
    the stdlib's parser and writer: stored, its stylesheet stored once, read back as sent
    but for the half pair, which the player's API writes as U+FFFD."""
    body = chunk(replay_site, visit + timedelta(seconds=3), n=1)
    css = "body { color: #123456 } " * 60
    body["events"][0]["data"] = {
        "text": "\ud800 half a pair",
        "node": {"type": 2, "tagName": "style", "attributes": {"_cssText": css}},
    }
    assert send(client, replay_site, body).status_code == 200
    [row] = _rows(replay_site)
    assert css.encode() not in gzip.decompress(row["data"])  # the stylesheet: a reference
    [session] = user_sessions.session_list(site_id=replay_site.id, user_key="anon-1")
    member(User.objects.create_user("ana", password="pw-ana-123"), replay_site)
    client.login(username="ana", password="pw-ana-123")
    read = client.get(f"/api/sites/{replay_site.id}/sessions/{session['session_id']}/replay")
    assert read.status_code == 200
    body["events"][0]["data"]["text"] = "\ufffd half a pair"
    assert read.json()["events"] == body["events"]


def test_a_resent_chunk_is_stored_once(client, replay_site, visit):
    body = chunk(replay_site, visit + timedelta(seconds=2))
    assert send(client, replay_site, body).json()["duplicate"] is False
    again = send(client, replay_site, body)
    assert again.status_code == 200 and again.json()["duplicate"] is True
    assert len(_rows(replay_site)) == 1


def test_chunks_the_browser_dropped_are_counted_once(client, replay_site, visit, live_now):
    """A chunk reports the chunks its tab's retry queue dropped since the last report; a
    resend of it (the same chunk id) is not counted again."""
    body = chunk(replay_site, visit + timedelta(seconds=2), dropped=3)
    assert send(client, replay_site, body).status_code == 200
    assert send(client, replay_site, body).json()["duplicate"] is True
    later = chunk(replay_site, visit + timedelta(seconds=9), seq=1, dropped=2)
    assert send(client, replay_site, later).status_code == 200
    counted = quality.ingest_counts(site_id=replay_site.id, hour=live_now)["rejected"]
    assert counted == {"replay.dropped": 5}


def test_a_chunk_resent_later_writes_nothing(client, replay_site, visit, live_now):
    """The recorder's retry queue resends a chunk with a new sent_at (the skew measured
    differs from the first attempt's): the resend is answered a duplicate and writes
    nothing, so the row keeps the first attempt's times."""
    start = visit + timedelta(seconds=2)
    body = chunk(replay_site, start, page=visit, sent_at=_ms(live_now))
    assert send(client, replay_site, body).json()["duplicate"] is False
    again = send(client, replay_site, {**body, "sent_at": _ms(live_now) + 60_000})
    answer = again.json()
    assert again.status_code == 200 and answer["duplicate"] is True
    assert answer["stored"] is False
    [session] = user_sessions.session_list(site_id=replay_site.id, user_key="anon-1")
    rows = list(
        cassandra_session().execute(
            prepare("SELECT start_at FROM {ks}.replay_chunks WHERE site_id = ? AND session_id = ?"),
            (replay_site.id, session["session_id"]),
        )
    )
    assert len(rows) == 1
    assert abs(rows[0]["start_at"].replace(tzinfo=UTC) - start) < timedelta(seconds=2)


def test_the_read_pages_the_first_chunks_first(client, replay_site, visit):
    for seq in range(6):
        body = chunk(replay_site, visit + timedelta(seconds=10 * seq), seq=seq, page=visit, n=1)
        assert send(client, replay_site, body).status_code == 200
    [session] = user_sessions.session_list(site_id=replay_site.id, user_key="anon-1")
    member(User.objects.create_user("ana", password="pw-ana-123"), replay_site)
    client.login(username="ana", password="pw-ana-123")
    url = f"/api/sites/{replay_site.id}/sessions/{session['session_id']}/replay"
    first = client.get(url).json()
    assert [c["seq"] for c in first["chunks"]] == [0, 1, 2, 3] and first["next"]
    rest = client.get(url, {"after": first["next"]}).json()
    assert [c["seq"] for c in rest["chunks"]] == [4, 5] and rest["next"] is None
    bad = client.get(url, {"after": "x:1"})
    assert bad.status_code == 400 and bad.json()["field"] == "after"


def test_the_read_is_for_the_sites_members_only(client, replay_site, visit):
    assert send(client, replay_site, chunk(replay_site, visit)).status_code == 200
    [session] = user_sessions.session_list(site_id=replay_site.id, user_key="anon-1")
    url = f"/api/sites/{replay_site.id}/sessions/{session['session_id']}/replay"
    User.objects.create_user("eve", password="pw-eve-123")
    client.login(username="eve", password="pw-eve-123")
    assert client.get(url).status_code == 404


@pytest.mark.parametrize(
    ("change", "status", "field"),
    [
        ({"chunk": "nope"}, 400, "chunk"),
        ({"seq": -1}, 400, "seq"),
        ({"seq": "1"}, 400, "seq"),
        ({"end": 1}, 400, "end"),
        ({"events": []}, 400, "events"),
        ({"events": [{"type": 2}]}, 400, "events[0]"),
        ({"anonymous_id": None}, 400, "anonymous_id"),
        ({"anonymous_id": "x" * 257}, 400, "anonymous_id"),
        ({"site": "cs_other"}, 400, "site"),
        ({"dropped": -1}, 400, "dropped"),
        ({"dropped": "3"}, 400, "dropped"),
        ({"anonymous_id": "someone-else"}, 409, "session"),
    ],
)
def test_a_bad_chunk_is_refused_naming_its_field(
    client, replay_site, visit, live_now, change, status, field
):
    body = {**chunk(replay_site, visit + timedelta(seconds=5)), **change}
    response = send(client, replay_site, body)
    assert response.status_code == status, response.content
    assert response.json()["field"] == field
    assert response.json()["error"].startswith(f"{field}: ")
    counted = quality.ingest_counts(site_id=replay_site.id, hour=live_now)["rejected"]
    assert counted.get(f"replay.{field}", 0) == (0 if status == 409 else 1)


def test_bodies_that_are_not_chunks(client, replay_site, visit, settings):
    assert send(client, replay_site, b"").json()["field"] == "body"
    assert (
        send(client, replay_site, b"\x1f\x8b broken")
        .json()["error"]
        .startswith("body: invalid gzip")
    )
    assert send(client, replay_site, b"[1, 2]").json()["error"] == "body: expected a JSON object"
    settings.REPLAY_MAX_INFLATED_BYTES = 1000
    bomb = gzip.compress(b" " * 5000)
    response = send(client, replay_site, bomb)
    assert response.status_code == 413 and "decompressed" in response.json()["error"]


def test_an_oversized_chunk_is_refused(client, replay_site, visit):
    body = chunk(replay_site, visit)
    body["events"][0]["data"]["blob"] = uuid.uuid4().hex * 20_000  # ~640 KB, little repeats
    raw = json.dumps(body).encode()
    response = send(client, replay_site, raw)
    assert response.status_code == 413 and response.json()["field"] == "body"
    assert _rows(replay_site) == []


def test_a_sessions_recording_is_capped_in_bytes_and_minutes(client, replay_site, visit, settings):
    first = chunk(replay_site, visit, n=50)
    settings.REPLAY_MAX_SESSION_BYTES = len(gzip.compress(json.dumps(first).encode())) + 10
    assert send(client, replay_site, first).status_code == 200
    over = send(client, replay_site, chunk(replay_site, visit, seq=1, n=50))
    assert over.status_code == 413 and over.json()["field"] == "session"
    settings.REPLAY_MAX_SESSION_BYTES = 10**9
    settings.REPLAY_MAX_SESSION_MINUTES = 3
    late = send(client, replay_site, chunk(replay_site, visit + minutes(4), seq=2))
    assert late.status_code == 413 and "minutes" in late.json()["error"]
    assert [r["seq"] for r in _rows(replay_site)] == [0]


def test_replay_off_unknown_keys_and_other_origins_are_refused(client, site, live_now):
    start = live_now - minutes(2)
    assert post(client, site, [event(start)]).status_code == 200
    off = send(client, site, chunk(site, start))
    assert off.status_code == 403 and off.json()["field"] == "replay"
    site.replay = True
    site.save()
    assert send(client, site, chunk(site, start), key="cs_nope").status_code == 401
    other = send(client, site, chunk(site, start), origin="https://evil.example")
    assert other.status_code == 403 and other.json()["field"] == "origin"
    assert client.get(f"/replay?site={site.key}").status_code == 405


def test_erasing_the_visitor_deletes_their_recordings(client, replay_site, visit, settings):
    settings.SUPPRESSION_CACHE_SECONDS = 0
    settings.ERASURE_SETTLE_SECONDS = 0
    assert send(client, replay_site, chunk(replay_site, visit)).status_code == 200
    post(client, replay_site, [event(visit, anon="bob")])
    assert send(client, replay_site, chunk(replay_site, visit, anon="bob")).status_code == 200
    [session] = user_sessions.session_list(site_id=replay_site.id, user_key="anon-1")
    root = User.objects.create_superuser("root", password="pw-root-123")
    request = erasures.erasure_request(
        site=replay_site, key="anon-1", kind=ErasureRequest.ANONYMOUS_ID, requested_by=root
    )
    tasks.erase_user.apply(args=[str(request.pk)]).get()
    request.refresh_from_db()
    assert request.state == ErasureRequest.DONE and request.counts["replay_chunks"] == 1
    cql = "SELECT seq FROM {ks}.replay_chunks WHERE site_id = ? AND session_id = ?"
    assert (
        list(cassandra_session().execute(prepare(cql), (replay_site.id, session["session_id"])))
        == []
    )
    [bob] = user_sessions.session_list(site_id=replay_site.id, user_key="bob")
    assert list(cassandra_session().execute(prepare(cql), (replay_site.id, bob["session_id"])))
    # and the erased visitor's next chunks are refused
    refused = send(client, replay_site, chunk(replay_site, visit, seq=1))
    assert refused.status_code == 403


def test_the_table_is_in_the_registry_and_erased():
    assert "replay_chunks" in registry.BY_NAME
    assert "replay_chunks" in registry.erased_tables()


def test_the_timeline_plays_and_the_lists_mark_a_recorded_session(client, replay_site, visit):
    member(User.objects.create_user("ana", password="pw-ana-123"), replay_site)
    client.login(username="ana", password="pw-ana-123")
    [session] = user_sessions.session_list(site_id=replay_site.id, user_key="anon-1")
    timeline = f"/sites/{replay_site.id}/sessions/{session['session_id']}/"
    profile = f"/sites/{replay_site.id}/users/anon-1/"
    before = client.get(timeline)
    assert 'id="replay"' not in before.text and "button.seek" not in before.text
    assert "'unsafe-inline'" not in before["Content-Security-Policy"]
    explorer = f"/sites/{replay_site.id}/sessions/?period=24h"
    assert "▶ replay" not in client.get(profile).text
    assert "anon-1" in client.get(explorer).text and "▶ replay" not in client.get(explorer).text

    assert send(client, replay_site, chunk(replay_site, visit)).status_code == 200
    page = client.get(timeline)
    assert 'id="replay"' in page.text and page.text.count('class="seek"') == 2
    assert "'unsafe-inline'" not in page["Content-Security-Policy"]  # only the player's frame
    player = client.get(f"{timeline}player")
    policy = player["Content-Security-Policy"]
    assert "script-src 'self';" in policy and f"img-src 'self' data: blob: {ORIGIN}" in policy
    assert "style-src 'self' 'unsafe-inline'" in policy
    assert "▶ replay" in client.get(profile).text
    assert "▶ replay" in client.get(explorer).text


def test_the_partition_report_counts_a_sessions_chunks(client, replay_site, live_now):
    # The event in its receipt's hour: the report's peak hour is by receipt, its
    # heaviest sessions are those of the peak hour's events.
    assert post(client, replay_site, [event(live_now)]).status_code == 200
    for seq in range(3):
        body = chunk(replay_site, live_now, seq=seq, page=live_now, n=1)
        assert send(client, replay_site, body).status_code == 200
    report = partition_report.partition_report(
        site_id=replay_site.id, event_shards=replay_site.event_shards, now=live_now, hours=2
    )
    [replays] = [t for t in report.tables if t.table == "replay_chunks"]
    assert replays.largest is not None and replays.largest.rows == 3
    assert replays.row_bytes_measured and replays.partition_key == "(site_id, session_id)"
