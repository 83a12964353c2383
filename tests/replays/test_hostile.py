"""POST /replay against what a sender with only the site's public key can send:
every body is refused with a reason naming its field, or stored and readable back; the
session's budget holds against reused chunk ids; what is stored is what was checked."""

from __future__ import annotations

import gzip
import json
import uuid
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessions_app.domain.ledger import quality
from sessions_app.features.replays import chunks
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.tables import replay_chunks, user_sessions
from tests.support.events import ORIGIN
from tests.support.hypothesis import examples
from tests.support.replays import chunk, send

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

ROWS = "SELECT seq, chunk_id, data FROM {ks}.replay_chunks WHERE site_id = ? AND session_id = ?"


def _session_id(site) -> uuid.UUID:
    [session] = user_sessions.session_list(site_id=site.id, user_key="anon-1")
    return session["session_id"]


def _stored(site) -> list[dict[str, Any]]:
    return list(cassandra_session().execute(prepare(ROWS), (site.id, _session_id(site))))


def _nested(depth: int) -> bytes:
    return b"[" * depth + b"1" + b"]" * depth


def _read(client, site) -> Any:
    return client.get(f"/api/sites/{site.id}/sessions/{_session_id(site)}/replay")


@st.composite
def hostile_bodies(draw, base: dict[str, Any]) -> tuple[bytes, uuid.UUID]:
    """A chunk as a hostile sender might shape it (trailers, several gzip members, deep
    nesting, other encodings, sizes, random bytes), and the chunk id it names."""
    chunk_id = uuid.uuid4()
    named = {**base, "chunk": str(chunk_id), "seq": draw(st.integers(0, 5_000))}
    text = json.dumps(named).encode()
    kind = draw(st.sampled_from(["trailer", "members", "deep", "encoding", "size", "bytes"]))
    if kind == "trailer":
        return gzip.compress(text) + draw(st.binary(min_size=1, max_size=64)), chunk_id
    if kind == "members":
        second = draw(st.sampled_from([text, b"GARBAGE", b"\x00" * 200_000]))
        return gzip.compress(text) + gzip.compress(second), chunk_id
    if kind == "deep":
        depth = draw(st.integers(min_value=400, max_value=1_100))
        body = text[:-1] + b', "x": ' + _nested(depth) + b"}"
        return (gzip.compress(body) if draw(st.booleans()) else body), chunk_id
    if kind == "encoding":
        codec = draw(st.sampled_from(["utf-16", "utf-32", "utf-8-sig", "latin-1"]))
        raw = json.dumps({**named, "t": "é—😀"}).encode(codec, "replace")
        return (gzip.compress(raw) if draw(st.booleans()) else raw), chunk_id
    if kind == "size":
        pad = "x" * draw(st.integers(min_value=0, max_value=600_000))
        return gzip.compress(json.dumps({**named, "pad": pad}).encode()), chunk_id
    return draw(st.binary(min_size=1, max_size=2_000)), chunk_id


def test_hostile_bodies_are_refused_with_a_reason_or_stored_and_readable(
    client, replay_site, visit, analyst
):
    base = chunk(replay_site, visit + timedelta(seconds=2))

    @settings(
        max_examples=examples(60),
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(sent=hostile_bodies(base))
    def run(sent: tuple[bytes, uuid.UUID]) -> None:
        body, chunk_id = sent
        response = send(client, replay_site, body)
        assert response.status_code < 500, response.content
        stored = {row["chunk_id"]: row["data"] for row in _stored(replay_site)}
        if response.status_code == 200:
            # what is stored is what was checked: every member a reader inflates, and it parses
            text = chunks.stored_text(stored[chunk_id])
            assert gzip.decompress(stored[chunk_id]) == text
            assert chunks.parse_json_object(text)["chunk"] == str(chunk_id)
        else:
            assert 400 <= response.status_code < 500
            answer = response.json()
            assert answer["field"] and answer["error"].startswith(answer["field"])
            assert chunk_id not in stored
        read = _read(client, replay_site)
        assert read.status_code == 200 and read.json()["unreadable"] == []

    run()


def test_a_trailer_after_the_gzip_member_is_refused(client, replay_site, visit):
    body = json.dumps(chunk(replay_site, visit + timedelta(seconds=2))).encode()
    answer = send(client, replay_site, gzip.compress(body) + b"GARBAGE")
    assert answer.status_code == 400
    assert answer.json()["error"] == "body: bytes after the gzip stream (send one gzip member)"
    bomb = gzip.compress(body) + gzip.compress(b"\x00" * 100 * 2**20)  # 100 MB inflated
    assert len(bomb) < 200_000 and send(client, replay_site, bomb).status_code == 400


def test_nesting_past_the_cap_is_refused_naming_the_body(client, replay_site, visit):
    base = chunk(replay_site, visit + timedelta(seconds=2))
    for depth in (replay_chunks.MAX_JSON_DEPTH + 1, 1_020, 1_100):
        body = json.dumps(base).encode()[:-1] + b', "x": ' + _nested(depth) + b"}"
        answer = send(client, replay_site, gzip.compress(body))
        assert answer.status_code == 400, answer.content
        assert answer.json() == {
            "error": "body: nested deeper than 512 levels of arrays and objects",
            "field": "body",
        }
    ok = json.dumps(base).encode()[:-1] + b', "x": ' + _nested(400) + b"}"
    assert send(client, replay_site, gzip.compress(ok)).status_code == 200


def test_a_reused_chunk_id_stores_nothing_new(client, replay_site, visit, settings):
    """56 chunks filled the session's cap; 30 more reusing the first id were all stored."""
    settings.REPLAY_MAX_SESSION_BYTES = 4_000
    first = chunk(replay_site, visit + timedelta(seconds=1), seq=0, page=visit)
    assert send(client, replay_site, first).json()["duplicate"] is False
    seq = 1
    while True:
        body = chunk(replay_site, visit + timedelta(seconds=1 + seq), seq=seq, page=visit)
        answer = send(client, replay_site, body)
        if answer.status_code == 413:
            assert answer.json()["field"] == "session"
            break
        assert answer.status_code == 200
        seq += 1
    stored = len(_stored(replay_site))
    assert stored == seq
    for n in range(30):
        reuse = {**first, "seq": seq + n}
        answer = send(client, replay_site, reuse)
        assert answer.status_code == 200 and answer.json()["stored"] is False
    assert len(_stored(replay_site)) == stored


def test_a_chunk_id_is_claimed_per_session(client, replay_site, visit, live_now):
    """The same chunk id in another visitor's session is that session's own chunk."""
    from tests.support.events import event, post

    assert post(client, replay_site, [event(visit, anon="anon-2")]).status_code == 200
    mine = chunk(replay_site, visit + timedelta(seconds=2))
    theirs = {**mine, "anonymous_id": "anon-2"}
    assert send(client, replay_site, mine).json()["stored"] is True
    assert send(client, replay_site, theirs).json()["stored"] is True


def test_seq_and_page_are_bounded(client, replay_site, visit):
    start = visit + timedelta(seconds=2)
    too_far = chunk(replay_site, start, seq=5_001)
    assert send(client, replay_site, too_far).json()["field"] == "seq"
    after_start = chunk(replay_site, start, page=start + timedelta(seconds=1))
    assert send(client, replay_site, after_start).json()["field"] == "page"
    long_before = chunk(replay_site, start, page=start - timedelta(days=2))
    assert send(client, replay_site, long_before).json()["field"] == "page"
    assert _stored(replay_site) == []


def test_the_sites_daily_budget_holds(client, replay_site, visit, settings):
    settings.REPLAY_MAX_SITE_BYTES_PER_DAY = 600
    answers = [
        send(client, replay_site, chunk(replay_site, visit + timedelta(seconds=s), seq=s))
        for s in range(1, 12)
    ]
    refused = [a for a in answers if a.status_code == 413]
    assert refused and {a.json()["field"] for a in refused} == {"site"}
    assert sum(len(r["data"]) for r in _stored(replay_site)) <= 600


def test_a_chunk_without_an_origin_is_refused(client, replay_site, visit):
    body = chunk(replay_site, visit + timedelta(seconds=2))
    answer = send(client, replay_site, body, origin=None)
    assert answer.status_code == 403 and answer.json()["field"] == "origin"
    assert send(client, replay_site, body, origin=ORIGIN).status_code == 200


def test_a_dropped_count_is_counted_up_to_its_cap(client, replay_site, visit, live_now):
    body = chunk(replay_site, visit + timedelta(seconds=2), dropped=10**9)
    assert send(client, replay_site, body).status_code == 200
    counted = quality.ingest_counts(site_id=replay_site.id, hour=live_now)["rejected"]
    assert counted == {"replay.dropped": 1_000}
