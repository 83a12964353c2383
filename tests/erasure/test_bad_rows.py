"""Whatever is stored, an erasure finishes: rows no reader expects, damaged or
written by an older version, in every table the erasure reads are deleted and counted in
the receipt, and the brute-force scan finds nothing of the user after."""

from __future__ import annotations

import gzip
import json
import uuid
import zlib
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from sessions_app import tasks
from sessions_app.domain.erasure import erasures
from sessions_app.domain.ingest.txlog import LOG_WIDTH
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import cassandra_session, keyspace, prepare
from sessions_app.foundation.core.ids import time_uuid
from sessions_app.foundation.models import ErasureRequest
from sessions_app.foundation.tables import (
    failed_events,
    registry,
    replay_assets,
    replay_chunks,
    transaction_log,
    user_sets,
)
from tests.support import anywhere
from tests.support.erasure import ALICE, ALICE_ANON, BOB, Traffic

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

CHUNKS = "SELECT seq, data FROM {ks}.replay_chunks WHERE site_id = ? AND session_id = ?"


def _schema(table: str) -> list[dict[str, Any]]:
    return list(
        cassandra_session().execute(
            "SELECT column_name, kind, type FROM system_schema.columns "
            "WHERE keyspace_name = %s AND table_name = %s",
            (keyspace(), table),
        )
    )


def _unexpected(kind: str, needle: str) -> Any:
    """A value no reader expects that still shows the needle (so the final scan sees a
    row that survived): a blob that is neither gzip nor zlib, text that is not JSON,
    and nothing at all for every other type."""
    if kind == "blob":
        return b"\xff\x00 not gzip, not zlib " + needle.encode()
    if kind == "text":
        return "{[ not JSON " + json.dumps(needle)
    return None


# The columns that say whose a row is: left as they are (damaged, the row would be
# someone else's, and no reader could tell).
IDENTIFIERS = {"user_key", "anonymous_id", "user_id", "session_id", "timeline_site", "prefix_user"}


def damage_rows_mentioning(needle: str) -> Counter[str]:
    """Rewrite every regular column but the identifiers of every row, in every table an
    erasure reads, that mentions the needle; return how many rows of each table were
    damaged."""
    damaged: Counter[str] = Counter()
    session = cassandra_session()
    for table in registry.erased_tables():
        columns = _schema(table)
        keys = [c["column_name"] for c in columns if c["kind"] in ("partition_key", "clustering")]
        regular = [
            c for c in columns if c["kind"] == "regular" and c["column_name"] not in IDENTIFIERS
        ]
        if not regular:
            continue
        # Names from the schema, not from input.
        sets = ", ".join(f'"{c["column_name"]}" = ?' for c in regular)
        where = " AND ".join(f'"{k}" = ?' for k in keys)
        update = session.prepare(f"UPDATE {keyspace()}.{table} SET {sets} WHERE {where}")
        for row in session.execute(f"SELECT * FROM {keyspace()}.{table}"):
            text = " ".join(t for v in row.values() for t in anywhere._texts(v))
            if needle not in text:
                continue
            values = [_unexpected(c["type"], needle) for c in regular]
            session.execute(update, (*values, *(row[k] for k in keys)))
            damaged[table] += 1
    return damaged


def _chunk_row(site, session_id: uuid.UUID, seq: int, data: bytes | None) -> None:
    now = timezone.now().replace(microsecond=0)
    row = replay_chunks.Row(
        site_id=site.id,
        session_id=session_id,
        page_start=now,
        seq=seq,
        chunk_id=uuid.uuid4(),
        user_key=BOB,
        last_event_id=None,
        start_at=now,
        end_at=now,
        events=1,
        size=len(data or b""),
        data=data,  # a row an older version may have left: None
        ttl=86_400,
    )
    cassandra_session().execute(prepare(replay_chunks.INSERT, write=True), row)


def _json_chunk(body: Any) -> bytes:
    return gzip.compress(json.dumps(body).encode())


def _plant_in_other_sessions(site, t: Traffic) -> dict[str, Any]:
    """Bob's recording: chunks no reader expects, one naming two stylesheets (one showing
    alice, one damaged), one clean; a rejected event whose payload nests past the parser's
    limit; log entries that are not plans; a user set that is not a bitmap."""
    [bob_session] = t.sessions[BOB][:1]
    deep = b'{"events": [{"type": 3, "timestamp": 1}], "deep": ' + b"[" * 1020 + b"]" * 1020 + b"}"
    shows, damaged = "a" * 64, "b" * 64
    references = [{"_cs_asset": shows}, {"_cs_asset": damaged}]
    named = {"events": [{"type": 2, "timestamp": 1, "data": references}]}
    chunks = {
        0: _json_chunk({"events": [{"type": 3, "timestamp": 1}]}) + b"GARBAGE",
        1: gzip.compress(deep),
        2: None,
        3: gzip.compress(json.dumps(named, separators=(",", ":")).encode()),
        4: _json_chunk({"events": [{"type": 3, "timestamp": 1, "text": "clean"}]}),
    }
    for seq, data in chunks.items():
        _chunk_row(site, bob_session, seq, data)
    sheets = {shows: gzip.compress(f'a::after{{content:"{ALICE}"}}'.encode()), damaged: b"?"}
    for digest, data in sheets.items():
        row = replay_assets.Row(
            site_id=site.id, hash=digest, kind="css", size=len(data), data=data, ttl=86_400
        )
        cassandra_session().execute(prepare(replay_assets.INSERT, write=True), row)

    h1 = t.hours[0]
    day = timebuckets.floor(h1, "day")
    payload = '{"anonymous_id": ' + json.dumps(ALICE_ANON) + ', "x": ' + "[" * 5000
    failed = failed_events.Row(
        site_id=site.id,
        day=day,
        failed_id=time_uuid(h1, "deep"),
        received_at=h1,
        reason="planted",
        field="body",
        source="collect",
        payload=payload,
        ttl=86_400,
    )
    cassandra_session().execute(prepare(failed_events.INSERT, write=True), failed)

    minute = timebuckets.floor(h1 + timedelta(minutes=3), LOG_WIDTH)
    not_a_plan = zlib.compress(json.dumps({"not": "a plan", "of": ALICE_ANON}).encode())
    for n, entry in enumerate((not_a_plan, b"neither zlib nor a plan")):
        log_row = transaction_log.Row(
            site_id=site.id,
            minute=minute,
            shard=0,
            batch_id=time_uuid(minute, f"bad-{n}"),
            received_at=minute,
            event_count=1,
            payload=entry,
            ttl=86_400,
        )
        cassandra_session().execute(prepare(transaction_log.INSERT, write=True), log_row)

    bad_set = (site.id, "hour", h1, "planted", b"not a bitmap", set(), True, 86_400)
    cassandra_session().execute(prepare(user_sets.UPSERT, write=True), bad_set)
    return {"bob_session": bob_session, "shows": shows, "damaged": damaged}


@pytest.mark.empty_tables  # brute force over every table of the keyspace
def test_an_erasure_finishes_whatever_is_stored(site, traffic, root):
    t = traffic
    site.replay = True
    site.save()
    planted = _plant_in_other_sessions(site, t)
    damaged = damage_rows_mentioning(ALICE_ANON) + damage_rows_mentioning(ALICE)
    # every table of the user's own rows was damaged (the rows were there to damage)
    own = {"user_sessions", "session_events", "site_sessions", "user_events_by_bucket"}
    assert own | {"transaction_log"} <= set(damaged), damaged

    request = erasures.erasure_request(
        site=site, key=ALICE, kind=ErasureRequest.USER_ID, requested_by=root
    )
    tasks.erase_user.apply(args=[str(request.pk)]).get()
    request.refresh_from_db()

    assert request.state == ErasureRequest.DONE, request.error
    assert request.attempts == 1
    counts = request.counts
    assert counts["replay_unreadable"] >= 4  # 3 chunks of bob's, a stylesheet
    assert counts["replay_assets"] == 2  # the one showing alice, the damaged one
    assert counts["transaction_log_unreadable"] >= 2
    assert counts["user_sets_unreadable"] == 1  # found through the number's reverse row
    assert anywhere.rows_mentioning(ALICE, ALICE_ANON) == Counter()
    left = cassandra_session().execute(prepare(CHUNKS), (site.id, planted["bob_session"]))
    assert sorted(r["seq"] for r in left) == [3, 4]  # readable, and not showing alice
    sheets = [planted["shows"], planted["damaged"]]
    assert replay_assets.assets_read(site_id=site.id, hashes=sheets) == {}
