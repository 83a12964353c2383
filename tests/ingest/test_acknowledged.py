"""Every acknowledged event is applied, whatever path logged it.

Each path runs with an applier announced (as under `make run`): its plans wait in
the queue. Either an applier round then runs (and leaves stale plans to the redo),
or the applier stays stopped past the redo window; then the redo task runs. Every
event the path acknowledged must be in session_events and site_events_by_bucket,
and every log entry marked applied. Real Redis and Cassandra.
"""

from __future__ import annotations

import base64
import json
from datetime import datetime, timedelta
from io import StringIO

import pytest
from cassandra.concurrent import execute_concurrent_with_args
from django.conf import settings
from django.core.management import call_command
from django.utils import timezone

from sessions_app.domain.ingest import applier
from sessions_app.domain.ingest.coordination import ALIVE_KEY, INLINE_KEY, QUEUE_KEY
from sessions_app.domain.ingest.plan import plan_decode
from sessions_app.domain.ingest.redo import txlog_redo
from sessions_app.domain.system import demo
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.core.redis_client import redis_client
from sessions_app.foundation.models import Site
from tests.support.events import event, minutes, post

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])
DAYS = 2  # generated and demo data: events up to two days old


@pytest.fixture(autouse=True)
def _empty_queue():
    redis_client().delete(QUEUE_KEY, ALIVE_KEY, INLINE_KEY)
    yield
    redis_client().delete(QUEUE_KEY, ALIVE_KEY, INLINE_KEY)


def _collector(client, site: Site) -> int:
    t0 = timezone.now() - minutes(20)
    events = [event(t0, anon="c-1"), event(t0 + minutes(1), kind="click", anon="c-1")]
    response = post(client, site, [*events, event(t0, anon="c-2")])
    assert response.status_code == 200
    return int(response.json()["accepted"])


def _segment(client, site: Site) -> int:
    t0 = timezone.now() - minutes(20)
    batch = [
        {
            "type": "track",
            "event": "purchase",
            "userId": "seg-user",
            "messageId": f"seg-{n}",
            "timestamp": (t0 + minutes(n)).isoformat(),
        }
        for n in range(3)
    ]
    auth = base64.b64encode(f"{site.key}:".encode()).decode()
    response = client.post(
        "/v1/batch",
        json.dumps({"batch": batch}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Basic {auth}",
    )
    assert response.status_code == 200
    return int(response.json()["accepted"])


def _generate_clicks(client, site: Site) -> int:
    out = StringIO()
    call_command(
        "generate_clicks",
        *("--site", site.key, "--users", "4", "--days", str(DAYS), "--seed", "35"),
        stdout=out,
        stderr=StringIO(),
    )
    return int(out.getvalue().split()[0])


def _demo(client, site: Site) -> int:
    # What bootstrap_local does into an empty keyspace (the shared test keyspace is not).
    return demo.clicks_generate(site=site, users=3, days=DAYS, now=timezone.now(), seed=36)


PATHS = {
    "collector": _collector,
    "segment": _segment,
    "generate_clicks": _generate_clicks,
    "demo": _demo,
}


def _log_plans(site: Site, since: datetime) -> list[tuple[bool, object]]:
    """Return (applied, plan) of every log entry of the site from since to now."""
    statement = prepare(
        "SELECT applied, payload FROM {ks}.transaction_log "
        "WHERE site_id = ? AND minute = ? AND shard = ?"
    )
    keys = [
        (site.id, minute, shard)
        for minute in timebuckets.iter_buckets(since, timezone.now() + minutes(10), "10m")
        for shard in range(settings.TXLOG_SHARDS)
    ]
    results = execute_concurrent_with_args(cassandra_session(), statement, keys, concurrency=64)
    assert all(success for success, _ in results)
    return [
        (bool(row["applied"]), plan_decode(row["payload"])) for _, rows in results for row in rows
    ]


def _stored_ids(site: Site, plans) -> tuple[set, set]:
    """Return the event ids of the plans found in session_events and site_events_by_bucket."""
    sessions, partitions = set(), set()
    for plan in plans:
        for e in plan.events:
            sessions.add(e.session_id)
            partitions.add((site.id, timebuckets.floor(e.ts, "hour"), e.shard))
    by_session = execute_concurrent_with_args(
        cassandra_session(),
        prepare("SELECT event_id FROM {ks}.session_events WHERE session_id = ?"),
        [(s,) for s in sessions],
    )
    by_site = execute_concurrent_with_args(
        cassandra_session(),
        prepare(
            "SELECT event_id FROM {ks}.site_events_by_bucket "
            "WHERE site_id = ? AND bucket = ? AND shard = ?"
        ),
        list(partitions),
    )
    return (
        {r["event_id"] for _, rows in by_session for r in rows},
        {r["event_id"] for _, rows in by_site for r in rows},
    )


def _assert_all_applied(site: Site, accepted: int, since: datetime) -> None:
    entries = _log_plans(site, since)
    plans = [plan for _, plan in entries]
    ids = {e.event_id for plan in plans for e in plan.events}  # type: ignore[attr-defined]
    assert accepted > 0 and len(ids) == accepted
    in_sessions, in_site = _stored_ids(site, plans)
    assert ids - in_sessions == set()
    assert ids - in_site == set()
    assert [applied for applied, _ in entries] == [True] * len(entries)


@pytest.mark.parametrize("path", PATHS)
def test_a_running_applier_and_the_redo_apply_every_acknowledged_event(client, site, path):
    since = timezone.now() - timedelta(days=DAYS + 1)
    applier.announce()
    accepted = PATHS[path](client, site)
    queued = applier.backlog()["queued"]
    assert queued > 0  # under `make run` the plans go to the applier
    applier.drain_once(limit=queued)  # plans logged under past minutes were dropped as stale

    txlog_redo(now=timezone.now() + settings.TXLOG_REDO_GRACE + timedelta(seconds=1))

    _assert_all_applied(site, accepted, since)


@pytest.mark.parametrize("path", ["collector", "segment", "generate_clicks"])
def test_entries_of_an_applier_stopped_longer_than_the_redo_window_are_redone(client, site, path):
    since = timezone.now() - timedelta(days=DAYS + 1)
    applier.announce()
    accepted = PATHS[path](client, site)
    assert applier.backlog()["queued"] > 0
    redis_client().delete(QUEUE_KEY, ALIVE_KEY)  # the applier died with its queue
    later = timezone.now() + settings.TXLOG_REDO_WINDOW + timedelta(minutes=30)

    txlog_redo(now=later)

    _assert_all_applied(site, accepted, since)
