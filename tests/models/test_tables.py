"""A round trip per Cassandra table on the real node, through the writer and selectors."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.db import connections

from sessions_app.domain.ingest.plan import EventRow, Plan, SessionSummary, version_of
from sessions_app.domain.ingest.plan_writes import plan_apply
from sessions_app.domain.ingest.state import SessionState
from sessions_app.domain.sessions import activity
from sessions_app.domain.system import health
from sessions_app.foundation.core import bounds, timebuckets
from sessions_app.foundation.core.ids import event_uuid
from sessions_app.foundation.models import SessionEvent, UserEventByBucket, UserSession
from sessions_app.foundation.tables import user_sessions
from tests.support.sessions import stored_events

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])


def _apply(site_id, *, events=(), sessions=(), links=(), now=None):
    from django.utils import timezone

    received = now or timezone.now()
    plan = Plan(
        site_id=site_id,
        batch_id=uuid.uuid1(),
        received_at=received,
        version=version_of(received),
        events=list(events),
        sessions=list(sessions),
        links=list(links),
    )
    return plan_apply(plan)


def _event(site_id, session_id, ts, n, kind="pageview", **extra):
    return EventRow(
        site_id=site_id,
        user_key="u1",
        session_id=session_id,
        event_id=event_uuid(site_id=site_id, client_event_id=f"e{n}", ts=ts),
        type=kind,
        ts=ts,
        url=f"https://shop.example/p{n}",
        **extra,
    )


def test_user_sessions_come_back_newest_first(site_id, now) -> None:
    summaries = []
    for hours_ago in (30, 2, 10):
        start = now - timedelta(hours=hours_ago)
        sid = event_uuid(site_id=site_id, client_event_id=f"s{hours_ago}", ts=start)
        summaries.append(
            SessionSummary(
                site_id=site_id,
                user_key="u1",
                state=SessionState(
                    session_id=sid,
                    started_at=start,
                    last_seen_at=start + timedelta(minutes=5),
                    event_count=3,
                    entry_url="/a",
                    exit_url="/b",
                    converted=hours_ago == 2,
                ),
            )
        )
    _apply(site_id, sessions=summaries)

    got = user_sessions.session_list(site_id=site_id, user_key="u1")

    assert [s["started_at"] for s in got] == [
        now - timedelta(hours=2),
        now - timedelta(hours=10),
        now - timedelta(hours=30),
    ]
    assert got[0]["converted"] is True and got[0]["event_count"] == 3
    assert got[0]["started_at"].tzinfo is not None
    # The cqlengine model maps the same table.
    assert UserSession.objects(site_id=site_id, user_key="u1").count() == 3


def test_session_events_are_in_time_order_whatever_the_write_order(site_id, now) -> None:
    sid = event_uuid(site_id=site_id, client_event_id="s", ts=now)
    rows = [
        _event(
            site_id,
            sid,
            now + timedelta(seconds=s),
            s,
            element={"tag": "button", "text": "Buy"} if s == 20 else None,
            props={"plan": "pro"} if s == 5 else None,
        )
        for s in (20, 0, 5)
    ]
    _apply(site_id, events=rows)

    got = stored_events(session_id=sid)

    assert [e["ts"] for e in got] == [now, now + timedelta(seconds=5), now + timedelta(seconds=20)]
    assert got[1]["props"] == {"plan": "pro"}
    assert got[2]["element"] == {"tag": "button", "text": "Buy"}
    assert SessionEvent.objects(session_id=sid).count() == 3


def test_rewriting_the_same_events_adds_no_rows(site_id, now) -> None:
    sid = event_uuid(site_id=site_id, client_event_id="s", ts=now)
    rows = [_event(site_id, sid, now + timedelta(seconds=s), s) for s in range(4)]
    _apply(site_id, events=rows)
    _apply(site_id, events=rows)
    assert len(stored_events(session_id=sid)) == 4


def test_user_events_by_bucket_span_buckets_in_order(site_id, now) -> None:
    sid = event_uuid(site_id=site_id, client_event_id="s", ts=now)
    day = timebuckets.floor(now, "day")
    times = [day - timedelta(minutes=1), day, day + timedelta(hours=30), day + timedelta(days=2)]
    _apply(site_id, events=[_event(site_id, sid, ts, n) for n, ts in enumerate(times)])

    got = activity.user_activity(
        site_id=site_id, user_key="u1", start=day - timedelta(hours=1), end=times[-1]
    ).events

    # Three day partitions; the end is exclusive, so the last event is out.
    assert [e["ts"] for e in got] == times[:3]
    partitions = {
        (row.bucket)
        for row in UserEventByBucket.objects(
            site_id=site_id, user_key="u1", bucket=timebuckets.floor(times[2], "day")
        )
    }
    assert len(partitions) == 1


def test_user_events_range_is_capped(site_id, now) -> None:
    with pytest.raises(bounds.RangeError, match="longer than 92 days"):
        activity.user_activity(
            site_id=site_id, user_key="u1", start=now - timedelta(days=200), end=now
        )


def test_pipeline_heartbeat_round_trip(now) -> None:
    worker = f"test-{uuid.uuid4()}"
    health.heartbeat_record(beat_at=now, now=now + timedelta(seconds=1), worker=worker)
    [row] = [r for r in health.heartbeat_list() if r["worker"] == worker]
    assert row["beat_at"] == now and row["written_at"] == now + timedelta(seconds=1)


def test_tables_have_the_documented_primary_keys() -> None:
    keyspace = connections["cassandra"].settings_dict["NAME"]
    session = connections["cassandra"].connection.session
    rows = session.execute(
        "SELECT table_name, column_name, kind, position, clustering_order "
        "FROM system_schema.columns WHERE keyspace_name = %s",
        (keyspace,),
    )
    keys: dict[str, dict[str, list[tuple[int, str, str]]]] = {}
    for r in rows:
        if r["kind"] in ("partition_key", "clustering"):
            keys.setdefault(r["table_name"], {}).setdefault(r["kind"], []).append(
                (r["position"], r["column_name"], r["clustering_order"])
            )

    def names(table, kind):
        return [
            (c, o) if kind == "clustering" else c for _, c, o in sorted(keys[table].get(kind, []))
        ]

    assert names("user_sessions", "partition_key") == ["site_id", "user_key"]
    assert names("user_sessions", "clustering") == [("session_id", "desc")]
    assert names("session_events", "partition_key") == ["session_id"]
    assert names("session_events", "clustering") == [("event_id", "asc")]
    assert names("user_events_by_bucket", "partition_key") == ["site_id", "user_key", "bucket"]
    assert names("user_events_by_bucket", "clustering") == [("event_id", "asc")]
