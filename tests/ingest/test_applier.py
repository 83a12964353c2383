"""The applier queue: plans handed over in Redis land in every table, many at once.

Real Redis and Cassandra; `applier.announce()` plays a running applier for the
collector and `drain_once` is the applier's own round, except in the last test,
which runs `manage.py run_applier` as a process.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connections
from django.utils import timezone

from sessions_app.domain.ingest import applier
from sessions_app.domain.ingest.coordination import ALIVE_KEY, INLINE_KEY, QUEUE_KEY
from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.domain.ingest.redo import txlog_redo
from sessions_app.domain.ledger import suppression
from sessions_app.domain.sessions import feed, lists
from sessions_app.domain.sessions.activity import user_activity
from sessions_app.domain.system import health
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.core.redis_client import redis_client
from sessions_app.foundation.models import Suppression
from sessions_app.foundation.tables import user_sessions
from tests.support.events import event, minutes
from tests.support.sessions import stored_events

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _empty_queue():
    redis_client().delete(QUEUE_KEY, ALIVE_KEY, INLINE_KEY)
    yield
    redis_client().delete(QUEUE_KEY, ALIVE_KEY, INLINE_KEY)


def _record(site, events, at=None):
    return events_record(
        source=Source(site=site, received_at=at or timezone.now()), raw_events=events
    )


def _log_applied(site) -> list[bool]:
    statement = prepare(
        "SELECT applied FROM {ks}.transaction_log WHERE site_id = ? AND minute = ? AND shard = ?"
    )
    minutes_ = {timebuckets.floor(timezone.now() - minutes(m), "10m") for m in (0, 1)}
    return [
        row["applied"]
        for minute in minutes_
        for shard in range(4)
        for row in cassandra_session().execute(statement, (site.id, minute, shard))
    ]


def _site_event_count(site, hour) -> int:
    statement = prepare(
        "SELECT count(*) AS n FROM {ks}.site_events_by_bucket "
        "WHERE site_id = ? AND bucket = ? AND shard = ?"
    )
    return sum(
        cassandra_session().execute(statement, (site.id, hour, s)).one()["n"] for s in range(4)
    )


def test_queued_plans_are_written_to_every_table_in_one_round(site, live_now):
    applier.announce()
    t0 = live_now - minutes(5)
    visitors = [f"q-{n}" for n in range(12)]
    for n, anon in enumerate(visitors):
        outcome = _record(
            site,
            [
                event(t0, anon=anon, url=f"https://shop.example/p{n}"),
                event(t0 + minutes(1), kind="click", anon=anon, element={"tag": "a", "text": "Go"}),
                event(
                    t0 + minutes(2), kind="custom", name="$identify", anon=anon, user_id=f"u-{n}"
                ),
            ],
        )
        assert outcome.queued and outcome.accepted == 3
    assert applier.backlog()["queued"] == 12
    # Acknowledged and logged, not written yet.
    assert user_sessions.session_list(site_id=site.id, user_key="q-0") == []
    assert _log_applied(site) == [False] * 12

    done = applier.drain_once()

    assert (done.popped, done.applied, done.stale, done.failed) == (12, 12, 0, 0)
    # 12 plans x 8 statements one by one; packed, far fewer requests.
    assert done.statements < 12 * 8 / 2
    assert applier.backlog()["queued"] == 0
    for n, anon in enumerate(visitors):
        [summary] = user_sessions.session_list(site_id=site.id, user_key=anon)
        assert summary["event_count"] == 2 and summary["click_count"] == 1
        assert summary["entry_url"] == f"https://shop.example/p{n}"
        [linked] = user_sessions.session_list(site_id=site.id, user_key=f"u-{n}")
        assert linked["event_count"] == 1
        assert len(stored_events(session_id=summary["session_id"])) == 2
        activity = user_activity(site_id=site.id, user_key=anon, start=t0, end=live_now).events
        assert len(activity) == 2
        assert lists.identity_links(site_id=site.id, user_id=f"u-{n}") == [anon]
    hours = {timebuckets.floor(t0 + minutes(k), "hour") for k in range(3)}
    assert sum(_site_event_count(site, hour) for hour in hours) == 36
    assert len(feed.feed_latest(site_id=site.id, limit=50)) >= 24
    assert _log_applied(site) == [True] * 12


def test_the_newest_plan_of_a_session_wins_whatever_the_order_in_a_round(site, live_now):
    applier.announce()
    t0 = live_now - minutes(5)
    _record(site, [event(t0, anon="same", url="https://shop.example/a")])
    _record(site, [event(t0 + minutes(1), anon="same", url="https://shop.example/b")])
    first, second = redis_client().lpop(QUEUE_KEY, 2)

    done = applier.apply_payloads([second, first])  # the older plan written after the newer

    assert done.applied == 2
    [summary] = user_sessions.session_list(site_id=site.id, user_key="same")
    assert summary["event_count"] == 2
    assert (summary["entry_url"], summary["exit_url"]) == (
        "https://shop.example/a",
        "https://shop.example/b",
    )
    assert len(stored_events(session_id=summary["session_id"])) == 2


def test_with_no_applier_alive_or_a_full_queue_the_collector_writes_the_plan_itself(
    site, live_now, settings
):
    t0 = live_now - minutes(5)
    outcome = _record(site, [event(t0, anon="alone")])
    assert not outcome.queued
    assert user_sessions.session_list(site_id=site.id, user_key="alone")[0]["event_count"] == 1

    applier.announce()
    settings.APPLY_QUEUE_MAX_PLANS = 1
    assert _record(site, [event(t0, anon="first")]).queued
    outcome = _record(site, [event(t0, anon="second")])
    assert not outcome.queued  # the queue holds its maximum
    assert user_sessions.session_list(site_id=site.id, user_key="second")[0]["event_count"] == 1
    assert user_sessions.session_list(site_id=site.id, user_key="first") == []
    state = applier.backlog()
    assert (state["queued"], state["alive"], state["inline"]) == (1, 1, 2)

    settings.APPLY_QUEUE = False
    assert not _record(site, [event(t0, anon="off")]).queued


def test_a_plan_that_waited_too_long_is_left_to_the_redo_task(site, live_now, settings):
    applier.announce()
    t0 = live_now - minutes(5)
    _record(site, [event(t0, anon="slow")])
    [payload] = redis_client().lpop(QUEUE_KEY, 5)
    late = timezone.now() + applier.max_age() + minutes(0.1)

    done = applier.apply_payloads([payload], now=late)

    assert (done.stale, done.applied) == (1, 0)
    assert user_sessions.session_list(site_id=site.id, user_key="slow") == []
    settings.TXLOG_REDO_GRACE = minutes(0)
    assert txlog_redo(now=timezone.now()) >= 1
    assert user_sessions.session_list(site_id=site.id, user_key="slow")[0]["event_count"] == 1


def test_a_payload_that_does_not_decode_is_counted_and_the_others_are_written(site, live_now):
    applier.announce()
    _record(site, [event(live_now - minutes(5), anon="next-to-junk")])
    [payload] = redis_client().lpop(QUEUE_KEY, 5)

    done = applier.apply_payloads([b"junk", payload])

    assert (done.popped, done.failed, done.applied) == (2, 1, 1)
    assert (
        user_sessions.session_list(site_id=site.id, user_key="next-to-junk")[0]["event_count"] == 1
    )


def test_a_key_erased_while_its_plan_waited_is_not_written(site, live_now):
    applier.announce()
    t0 = live_now - minutes(5)
    _record(site, [event(t0, anon="erased-soon")])
    _record(site, [event(t0, anon="kept")])
    Suppression.objects.create(site=site, key="erased-soon")
    suppression.suppressed_keys_forget(site_id=site.id)

    done = applier.drain_once()

    assert done.applied == 2
    assert user_sessions.session_list(site_id=site.id, user_key="erased-soon") == []
    assert user_sessions.session_list(site_id=site.id, user_key="kept")[0]["event_count"] == 1
    assert _log_applied(site) == [True, True]  # nothing left for the redo to write


def test_run_applier_applies_queued_plans_and_hands_back_when_stopped(site, live_now):
    from django.conf import settings

    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "clickstream.settings.test",
        "CASSANDRA_KEYSPACE": connections["cassandra"].settings_dict["NAME"],
        "REDIS_URL": settings.REDIS_URL,
    }
    process = subprocess.Popen(
        [sys.executable, "manage.py", "run_applier"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while not redis_client().exists(ALIVE_KEY):
            assert process.poll() is None, process.stdout.read().decode()  # type: ignore[union-attr]
            assert time.monotonic() < deadline, "the applier never announced itself"
            time.sleep(0.2)
        t0 = live_now - minutes(5)
        assert _record(
            site, [event(t0, anon="via-process"), event(t0, kind="click", anon="via-process")]
        ).queued
        deadline = time.monotonic() + 30
        while not user_sessions.session_list(site_id=site.id, user_key="via-process"):
            assert time.monotonic() < deadline, "the applier did not write the queued plan"
            time.sleep(0.1)
        assert (
            user_sessions.session_list(site_id=site.id, user_key="via-process")[0]["event_count"]
            == 2
        )
    finally:
        process.send_signal(signal.SIGTERM)
        output = process.communicate(timeout=30)[0].decode()
    assert process.returncode == 0, output
    assert "applied 1 plans" in output
    assert not redis_client().exists(ALIVE_KEY)
    assert not _record(site, [event(live_now, anon="after-stop")]).queued


def test_the_oldest_plans_wait_is_the_lag_the_health_check_shows_and_the_log_warns_of(
    site, live_now, settings, caplog
):
    redis_client().delete(QUEUE_KEY)
    applier.announce()
    t0 = live_now - minutes(5)
    assert _record(site, [event(t0, anon="lag-1")]).queued
    assert _record(site, [event(t0, anon="lag-2")]).queued
    assert applier.backlog()["oldest_ms"] < 60_000
    later = timezone.now() + timedelta(seconds=3)
    assert 3_000 <= applier.backlog(now=later)["oldest_ms"] < 63_000

    settings.APPLIER_LAG_WARN_SECONDS = 60
    assert health._applier_state()["lagging"] is False
    settings.APPLIER_LAG_WARN_SECONDS = 0.001
    assert health._applier_state()["lagging"] is True

    settings.APPLIER_LAG_WARN_SECONDS = 2
    done = applier.apply_payloads(redis_client().lpop(QUEUE_KEY, 2), now=later)
    assert done.applied == 2 and 3 <= done.waited < 63
    assert applier.backlog()["oldest_ms"] == 0  # nothing waits
    with caplog.at_level(logging.WARNING, logger=applier.log.name):
        assert applier.lag_warn(applier.Round(waited=1.5), warned=-1e9, now=0.0) == -1e9
        warned = applier.lag_warn(done, warned=-1e9, now=100.0)
        quiet = applier.lag_warn(done, warned=warned, now=130.0)  # within the minute
        again = applier.lag_warn(done, warned=quiet, now=161.0)
    assert (warned, quiet, again) == (100.0, 100.0, 161.0)
    lags = [r.getMessage() for r in caplog.records if "applier lag" in r.getMessage()]
    assert len(lags) == 2 and f"waited {done.waited:.1f} s" in lags[0]
