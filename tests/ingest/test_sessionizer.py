"""Server-side sessionization: inactivity split, 24 h cap, late events, Redis loss, identify."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.domain.sessions import lists
from sessions_app.foundation.core.redis_client import redis_client
from sessions_app.foundation.tables import user_sessions
from tests.support.events import event, minutes
from tests.support.sessions import stored_events

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])


def record(site, events, *, received_at=None):
    source = Source(site=site, received_at=received_at or timezone.now())
    return events_record(source=source, raw_events=events)


def starts(site, user_key="anon-1"):
    return sorted(
        s["started_at"] for s in user_sessions.session_list(site_id=site.id, user_key=user_key)
    )


def test_session_splits_after_30_minutes_of_inactivity(site, live_now):
    t0 = live_now - timedelta(hours=2)
    record(site, [event(t0), event(t0 + minutes(29)), event(t0 + minutes(59))])
    assert starts(site) == [t0]  # each gap is 29-30 min: still one session
    record(site, [event(t0 + minutes(89) + timedelta(seconds=1))])
    assert starts(site) == [t0, t0 + minutes(89) + timedelta(seconds=1)]


def test_gap_setting_is_configurable(site, live_now, settings):
    settings.SESSION_INACTIVITY = minutes(5)
    t0 = live_now - timedelta(hours=1)
    record(site, [event(t0), event(t0 + minutes(6))])
    assert len(starts(site)) == 2


def test_sessions_last_at_most_24_hours(site, live_now):
    t0 = live_now - timedelta(hours=26)
    record(site, [event(t0 + minutes(20 * i)) for i in range(76)])  # every 20 min for 25 h
    sessions = user_sessions.session_list(site_id=site.id, user_key="anon-1")
    assert len(sessions) == 2
    for s in sessions:
        assert s["last_seen_at"] - s["started_at"] <= timedelta(hours=24)


def test_events_of_a_batch_are_ordered_by_time_first(site, live_now):
    t0 = live_now - minutes(50)
    events = [event(t0 + minutes(i), url=f"https://shop.example/p{i}") for i in range(10)]
    random.Random(4).shuffle(events)
    record(site, events)
    [summary] = user_sessions.session_list(site_id=site.id, user_key="anon-1")
    assert summary["entry_url"] == "https://shop.example/p0"
    assert summary["exit_url"] == "https://shop.example/p9"
    assert summary["started_at"] == t0 and summary["event_count"] == 10


def test_entry_and_exit_pages_are_the_first_and_last_url_seen(site, live_now):
    """A server-side identify or track (no URL) first or last changes the session's
    times, not its pages; the entry is the first page view's URL, also when the
    events arrive in separate requests."""
    t0 = live_now - minutes(50)
    no_page = [{k: v for k, v in event(t0, kind="custom", name="$identify").items() if k != "url"}]
    record(site, no_page)
    record(site, [event(t0 + minutes(1), url="https://shop.example/landing")])
    record(site, [event(t0 + minutes(2), url="https://shop.example/cart")])
    last = event(t0 + minutes(3), kind="custom", name="purchase")
    del last["url"]
    record(site, [last])
    [summary] = user_sessions.session_list(site_id=site.id, user_key="anon-1")
    assert summary["started_at"] == t0 and summary["event_count"] == 4
    assert summary["entry_url"] == "https://shop.example/landing"
    assert summary["exit_url"] == "https://shop.example/cart"


def test_late_event_lands_in_the_session_that_covers_it(site, live_now):
    morning = live_now - timedelta(hours=6)
    record(site, [event(morning), event(morning + minutes(20))])
    record(site, [event(live_now - minutes(10))])  # a later, separate session
    record(site, [event(morning + minutes(10), id="straggler")])  # arrives hours late
    sessions = {
        s["started_at"]: s for s in user_sessions.session_list(site_id=site.id, user_key="anon-1")
    }
    assert sorted(sessions) == [morning, live_now - minutes(10)]
    assert sessions[morning]["event_count"] == 3
    timeline = stored_events(session_id=sessions[morning]["session_id"])
    assert [e["ts"] for e in timeline] == [morning, morning + minutes(10), morning + minutes(20)]


def test_assignment_survives_a_redis_flush_mid_session(site, live_now):
    t0 = live_now - minutes(40)
    record(site, [event(t0), event(t0 + minutes(5))])
    redis_client().flushdb()
    record(site, [event(t0 + minutes(15))])
    [summary] = user_sessions.session_list(site_id=site.id, user_key="anon-1")
    assert summary["event_count"] == 3
    assert summary["last_seen_at"] == t0 + minutes(15)


def test_a_resend_after_a_redis_flush_is_a_duplicate_not_a_second_count(site, live_now):
    t0 = live_now - minutes(40)
    first = [event(t0), event(t0 + minutes(5))]
    record(site, first)
    record(site, [event(t0 + minutes(10))])
    redis_client().flushdb()  # the dedup marks are gone, the rows are not
    outcome = record(site, [*first, event(t0 + minutes(15))])
    assert (outcome.accepted, outcome.duplicates) == (1, 2)
    [summary] = user_sessions.session_list(site_id=site.id, user_key="anon-1")
    assert summary["event_count"] == summary["pageview_count"] == 4
    assert len(stored_events(session_id=summary["session_id"])) == 4


def test_identify_switches_the_key_and_links_the_anonymous_id(site, live_now):
    t0 = live_now - minutes(30)
    record(site, [event(t0, anon="a-77"), event(t0 + minutes(1), anon="a-77")])
    record(
        site,
        [
            event(t0 + minutes(2), kind="custom", name="$identify", anon="a-77", user_id="u-1"),
            event(t0 + minutes(3), anon="a-77", user_id="u-1"),
        ],
    )
    assert len(user_sessions.session_list(site_id=site.id, user_key="a-77")) == 1
    [user_session] = user_sessions.session_list(site_id=site.id, user_key="u-1")
    assert user_session["user_id"] == "u-1" and user_session["event_count"] == 2
    assert lists.identity_links(site_id=site.id, user_id="u-1") == ["a-77"]


def test_the_session_id_is_a_timeuuid_of_its_first_event(site, live_now):
    from sessions_app.foundation.core.ids import uuid_time

    t0 = live_now - minutes(12)
    record(site, [event(t0 + minutes(2)), event(t0)])
    [summary] = user_sessions.session_list(site_id=site.id, user_key="anon-1")
    assert summary["session_id"].version == 1
    assert uuid_time(summary["session_id"]) == t0
