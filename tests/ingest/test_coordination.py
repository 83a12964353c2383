"""Dedup marks: pending until the batch is logged, so a request killed in between loses nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from sessions_app.domain.ingest import coordination
from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.foundation.tables import user_sessions
from tests.support.events import event

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])
DEDUP_TTL = int(settings.DEDUP_TTL.total_seconds())


def _beacon(now):
    return [event(now - timedelta(seconds=3 - i), anon="killed", id=f"k-{i}") for i in range(3)]


def test_a_request_killed_after_marking_does_not_turn_its_retry_into_duplicates(site, monkeypatch):
    monkeypatch.setattr(coordination, "LOCK_WAIT_SECONDS", 0.3)
    now = timezone.now().replace(microsecond=0)
    beacon = _beacon(now)
    # The first attempt marked the ids and the user, then died (kill -9): no log, no finish.
    dead = coordination.begin(
        site_id=site.id,
        client_ids=[e["id"] for e in beacon],
        user_keys=["killed"],
        dedup_ttl=DEDUP_TTL,
    )
    assert all(dead.fresh)
    retry = events_record(source=Source(site=site, received_at=now), raw_events=beacon)
    assert (retry.accepted, retry.duplicates) == (3, 0)
    [summary] = user_sessions.session_list(site_id=site.id, user_key="killed")
    assert summary["event_count"] == 3
    # Once logged, the marks are committed: a replay is all duplicates.
    again = events_record(source=Source(site=site, received_at=now), raw_events=beacon)
    assert (again.accepted, again.duplicates) == (0, 3)


def test_a_pending_mark_that_gets_committed_is_a_duplicate(site, monkeypatch):
    monkeypatch.setattr(coordination, "LOCK_WAIT_SECONDS", 2.0)
    now = timezone.now().replace(microsecond=0)
    ids = [e["id"] for e in _beacon(now)]
    first = coordination.begin(site_id=site.id, client_ids=ids, user_keys=[], dedup_ttl=DEDUP_TTL)
    coordination.finish(first, states={}, ttl=60)  # logged and committed
    second = coordination.begin(site_id=site.id, client_ids=ids, user_keys=[], dedup_ttl=DEDUP_TTL)
    assert second.fresh == [False, False, False]


def test_an_abandoned_claim_frees_its_marks(site):
    ids = ["a-1", "a-2"]
    first = coordination.begin(site_id=site.id, client_ids=ids, user_keys=[], dedup_ttl=DEDUP_TTL)
    coordination.abandon(first)  # the log write failed: nothing was stored
    second = coordination.begin(site_id=site.id, client_ids=ids, user_keys=[], dedup_ttl=DEDUP_TTL)
    assert second.fresh == [True, True]


def test_a_retry_waits_for_a_dead_requests_marks_and_lock_once_not_once_per_event(
    site, monkeypatch
):
    """The kill -9 fault test lost 8 events from a session count: a retry waited
    LOCK_WAIT_SECONDS for each of ten pending marks, the client timed out and sent a
    third copy, which ran beside it without the lock and overwrote its session state."""
    import time

    waits: list[float] = []
    sleep = time.sleep
    monkeypatch.setattr(coordination, "LOCK_WAIT_SECONDS", 0.2)
    monkeypatch.setattr(coordination.time, "sleep", lambda s: (waits.append(s), sleep(s)))
    ids = [f"dead-{i}" for i in range(20)]
    coordination.begin(site_id=site.id, client_ids=ids, user_keys=["dead"], dedup_ttl=DEDUP_TTL)

    started = time.monotonic()
    retry = coordination.begin(
        site_id=site.id, client_ids=ids, user_keys=["dead"], dedup_ttl=DEDUP_TTL
    )

    assert retry.fresh == [True] * 20  # taken over from the dead request
    # One shared deadline: about LOCK_WAIT_SECONDS of polling in all (20 x 0.2 s before).
    assert sum(waits) < 0.2 * 3
    assert time.monotonic() - started < 0.2 * 10
    coordination.finish(retry, states={}, ttl=60)
