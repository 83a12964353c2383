"""site_sessions' partition-local terms (foundation/tables/site_sessions.py): a termed filter binds
its partition's term, the column still decides, and rows written before the terms get
them from `manage.py site_sessions_terms`."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from sessions_app.features.analysis import explorer, session_filter
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import cassandra_session, keyspace, prepare
from sessions_app.foundation.core.ids import time_uuid, uuid_time
from sessions_app.foundation.tables import site_sessions

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

UPSERT = site_sessions.with_dimensions(site_sessions.UPSERT)


def write(
    site_id: uuid.UUID,
    session_id: uuid.UUID,
    version: int,
    *,
    terms: bool = True,
    **dimensions: str,
) -> None:
    """One session's row as ingest writes it (without its terms: as an older release did)."""
    started = uuid_time(session_id)
    site, day, shard, sid = site_sessions.row_key(site_id, session_id)
    params = tuple(
        site_sessions.upsert_params(
            timestamp=version,
            ttl=3600,
            user_key=f"u-{sid}",
            identified=False,
            started_at=started,
            last_seen_at=started,
            duration_s=0,
            event_count=1,
            pageview_count=1,
            converted=False,
            is_bot=False,
            dimensions=dimensions,
            pages={"/"},
            events=set(),
            site_id=site,
            day=day,
            shard=shard,
            session_id=sid,
            terms=site_sessions.terms_of(site, day, shard, dimensions) if terms else set(),
        )
    )
    cassandra_session().execute(prepare(UPSERT, write=True), params)


def found(site_id, start, end, filters) -> set[uuid.UUID]:
    query = explorer.ExplorerQuery(start=start, end=end, filters=filters)
    page = explorer.sessions_explore(site_id=site_id, query=query, limit=100)
    counted = session_filter.sessions_counting(
        site_id=site_id, start=start, end=end, filters=filters, kpis_only=True
    )()
    assert {r["session_id"] for r in counted.rows} == {s["session_id"] for s in page.sessions}
    return {s["session_id"] for s in page.sessions}


def test_a_term_belongs_to_one_partition():
    site, day = uuid.uuid4(), timebuckets.floor(timezone.now(), "day")
    dims = {"country": "DE", "device": "mobile", "entry": "/", "exit": "/x"}
    [a] = site_sessions.terms_of(site, day, 0, {"country": "DE"})
    terms = {
        site_sessions.partition_digest(s, d, shard)
        for s in (site, uuid.uuid4())
        for d in (day, day - timedelta(days=1))
        for shard in (0, 1)
    }
    assert len(terms) == 8 and a.endswith(" country=DE")
    # entry and exit pages change as a session goes on: filtered through their columns
    assert {t.split(" ", 1)[1] for t in site_sessions.terms_of(site, day, 0, dims)} == {
        "country=DE",
        "device=mobile",
    }


def test_a_filter_finds_what_the_columns_say_now(site, now):
    start, end = now - timedelta(days=2), now
    ids = [time_uuid(now - timedelta(hours=h), f"t{h}") for h in (1, 30)]
    write(site.id, ids[0], 1, country="DE", device="mobile", source="google")
    write(site.id, ids[1], 1, country="DE", device="desktop", source="google")
    assert found(site.id, start, end, {"country": "DE"}) == set(ids)
    assert found(site.id, start, end, {"country": "DE", "device": "mobile"}) == {ids[0]}
    assert found(site.id, start, end, {"country": "FR"}) == set()
    # An earlier landing event moved the first session's source: its old term stays in
    # the set, its column decides.
    write(site.id, ids[0], 2, country="DE", device="mobile", source="bing")
    assert found(site.id, start, end, {"source": "google"}) == {ids[1]}
    assert found(site.id, start, end, {"source": "bing", "device": "mobile"}) == {ids[0]}


def test_rows_written_before_the_terms_get_them_from_the_command(site):
    now = timezone.now()  # the command reads back from the present
    start, end = now - timedelta(days=3), now
    ids = [time_uuid(now - timedelta(hours=h), f"o{h}") for h in (2, 50)]
    for sid in ids:
        write(site.id, sid, 1, terms=False, country="NL", browser="Firefox")
    assert found(site.id, start, end, {"country": "NL"}) == set()
    call_command("site_sessions_terms", stdout=open("/dev/null", "w"))  # noqa: SIM115
    assert found(site.id, start, end, {"country": "NL", "browser": "Firefox"}) == set(ids)
    # The terms expire with the row.
    key = site_sessions.row_key(site.id, ids[0])
    [row] = cassandra_session().execute(
        f"SELECT TTL(user_key) AS kept, terms, TTL(terms) AS left FROM {keyspace()}.site_sessions "
        "WHERE site_id = %s AND day = %s AND shard = %s AND session_id = %s",
        key,
    )
    assert len(row["terms"]) == 2 and 3000 < row["kept"] <= 3600
    assert all(row["kept"] - 60 <= left <= row["kept"] for left in row["left"])
