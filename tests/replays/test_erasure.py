"""Erasure reads inside the recordings (erasure/scan.replay_rows_mentioning): a chunk of
another visitor's session that shows the erased user id in the page's text is deleted,
through the real collector and the erasure task; chunks without it stay."""

from __future__ import annotations

import gzip
from datetime import timedelta

import pytest
from django.contrib.auth.models import User

from sessions_app import tasks
from sessions_app.domain.erasure import erasures
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.models import ErasureRequest
from sessions_app.foundation.tables import user_sessions
from tests.support.events import event, post
from tests.support.replays import chunk, send

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

USER = "alice@example.com"
CHUNKS = "SELECT seq, data FROM {ks}.replay_chunks WHERE site_id = ? AND session_id = ?"


def _text_chunk(site, start, *, anon: str, text: str, seq: int = 0, **extra):
    """A chunk whose DOM mutation adds a text node (recorded unmasked)."""
    body = chunk(site, start, anon=anon, seq=seq, page=start, n=1, **extra)
    body["events"].append(
        {
            "type": 3,
            "timestamp": body["end"],
            "data": {
                "source": 0,
                "adds": [
                    {
                        "parentId": 8,
                        "nextId": None,
                        "node": {"type": 3, "textContent": text, "id": 40 + seq},
                    }
                ],
                "removes": [],
                "texts": [],
                "attributes": [],
            },
        }
    )
    return body


def _chunks(site, key: str) -> dict[int, str]:
    [session] = user_sessions.session_list(site_id=site.id, user_key=key)
    rows = cassandra_session().execute(prepare(CHUNKS), (site.id, session["session_id"]))
    return {r["seq"]: gzip.decompress(r["data"]).decode() for r in rows}


def test_a_chunk_showing_the_user_id_is_erased_in_any_session(client, replay_site, visit, settings):
    settings.SUPPRESSION_CACHE_SECONDS = 0
    settings.ERASURE_SETTLE_SECONDS = 0
    start = visit + timedelta(seconds=5)
    for anon, extra in (("alice-device", {"user_id": USER}), ("desk-1", {}), ("carol", {})):
        assert post(client, replay_site, [event(visit, anon=anon, **extra)]).status_code == 200
    mine = _text_chunk(replay_site, start, anon="alice-device", text="Orders", user_id=USER)
    shown = _text_chunk(replay_site, start, anon="desk-1", text=f"Signed in as {USER}")
    later = _text_chunk(
        replay_site, start + timedelta(seconds=5), anon="desk-1", seq=1, text="Signed out"
    )
    near = _text_chunk(replay_site, start, anon="carol", text="Write to malice@example.com.au")
    for body in (mine, shown, later, near):
        assert send(client, replay_site, body).status_code == 200
    assert USER in _chunks(replay_site, "desk-1")[0]

    root = User.objects.create_superuser("root", password="pw-root-123")
    request = erasures.erasure_request(
        site=replay_site, key=USER, kind=ErasureRequest.USER_ID, requested_by=root
    )
    tasks.erase_user.apply(args=[str(request.pk)]).get()
    request.refresh_from_db()
    assert request.state == ErasureRequest.DONE, request.error
    assert request.counts["replay_chunks_mentioning"] == 1
    assert user_sessions.session_list(site_id=replay_site.id, user_key=USER) == []
    assert list(_chunks(replay_site, "desk-1")) == [1]  # the chunk showing the id is gone
    assert "malice@example.com.au" in _chunks(replay_site, "carol")[0]  # another word
