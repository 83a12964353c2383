"""A session's summary reflects every beacon, whatever order its requests took the lock in
(domain/ingest/versions.py): summaries are ordered as they were computed, not as they arrived."""

from __future__ import annotations

from datetime import timedelta

import pytest

from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.domain.ingest.plan import version_of
from sessions_app.domain.ingest.state import SessionState, state_key
from sessions_app.domain.ingest.versions import plan_version, write_deadline_seconds
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.core.redis_client import redis_client
from sessions_app.foundation.tables import site_sessions, user_sessions
from tests.support.conversion import purchase_goal
from tests.support.events import event, minutes

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])
SECOND = timedelta(seconds=1)


def _summaries(site, user_key: str) -> tuple[dict, dict]:
    [summary] = user_sessions.session_list(site_id=site.id, user_key=user_key)
    statement = prepare(
        "SELECT event_count, WRITETIME(event_count) AS version FROM {ks}.site_sessions"
        " WHERE site_id = ? AND day = ? AND shard = ? AND session_id = ?"
    )
    key = site_sessions.row_key(site.id, summary["session_id"])
    return summary, cassandra_session().execute(statement, key).one()


def _unload(site, live_now, anon: str, *, forget_cache: bool = False):
    """Two beacons of one visitor sent together: the big one arrived first, the small one
    reached the lock first; return the plan outcomes in processing order."""
    purchase_goal(site)  # the purchase converts the session
    t0 = live_now - minutes(3)
    big = [event(t0, anon=anon), event(t0 + SECOND, kind="click", anon=anon)]
    big.append(event(t0 + 2 * SECOND, kind="custom", name="purchase", anon=anon))
    small = [event(t0 + 3 * SECOND, kind="click", anon=anon)]
    first = events_record(source=Source(site=site, received_at=live_now), raw_events=small)
    if forget_cache:  # Redis lost the state: the next request reads the summary's write time
        redis_client().delete(state_key(site.id, anon))
    second = events_record(source=Source(site=site, received_at=live_now - SECOND), raw_events=big)
    return first, second


def test_a_summary_computed_after_a_later_received_one_keeps_every_event(site, live_now):
    first, second = _unload(site, live_now, "unload-1")
    assert first.accepted == 1 and second.accepted == 3
    summary, explorer = _summaries(site, "unload-1")
    assert summary["event_count"] == 4 and summary["click_count"] == 2
    assert summary["converted"] is True
    assert explorer["event_count"] == 4
    # Above the small plan's version by a microsecond: its receipt time plus 1 µs.
    assert summary["version"] == explorer["version"] == version_of(live_now) + 1


def test_the_order_holds_when_the_state_is_read_back_from_cassandra(site, live_now):
    _unload(site, live_now, "unload-2", forget_cache=True)
    summary, explorer = _summaries(site, "unload-2")
    assert summary["event_count"] == explorer["event_count"] == 4
    assert summary["version"] == version_of(live_now) + 1


def test_a_plan_in_arrival_order_keeps_its_receipt_time(site, live_now):
    t0 = live_now - minutes(3)
    for n, received in enumerate((live_now - SECOND, live_now)):
        batch = [event(t0 + n * SECOND, anon="in-order")]
        events_record(source=Source(site=site, received_at=received), raw_events=batch)
    summary, _ = _summaries(site, "in-order")
    assert summary["event_count"] == 2 and summary["version"] == version_of(live_now)


def test_a_version_leads_its_receipt_time_by_at_most_the_write_deadline(site, live_now):
    """A cached state stamped far ahead (a web worker's clock gone wrong) cannot carry a
    plan past the time after which an erasure's deletes must win."""
    t0 = live_now - minutes(3)
    events_record(source=Source(site=site, received_at=live_now), raw_events=[event(t0)])
    key = state_key(site.id, "anon-1")
    state = SessionState.from_json(redis_client().get(key))
    state.version = version_of(live_now) + 3_600 * 1_000_000
    redis_client().set(key, state.to_json())
    later = live_now + SECOND
    events_record(source=Source(site=site, received_at=later), raw_events=[event(t0 + SECOND)])
    summary, _ = _summaries(site, "anon-1")
    assert summary["event_count"] == 2
    assert summary["version"] == version_of(later) + write_deadline_seconds() * 1_000_000
    assert 0 < write_deadline_seconds() < 20


def test_plan_version_is_receipt_time_or_just_above_what_it_read():
    lead = write_deadline_seconds() * 1_000_000
    assert plan_version(1_000, []) == 1_000
    assert plan_version(1_000, [0, 999]) == 1_000
    assert plan_version(1_000, [1_000]) == 1_001
    assert plan_version(1_000, [5_000, 7]) == 5_001
    assert plan_version(1_000, [10**18]) == 1_000 + lead
