"""Sealed aggregates equal a recount of the raw rows after the faults the collector
survives: a resend logged twice (Redis lost its dedup marks before the first was
applied), a batch written after its hour was sealed without being late, and a batch
half applied when its writer died, finished by the log redo. The process faults
(kill -9, Redis restarted empty) end with the same check: tests/faults."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app.domain.aggregates import seal, states
from sessions_app.domain.ingest import plan_writes, redo
from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.domain.ingest.steps import apply as apply_step
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.redis_client import redis_client
from sessions_app.foundation.models import BucketState, RedoWatermark, Site
from tests.support.events import event
from tests.support.recount import recount, seal_and_compare, sealed

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])


@pytest.fixture(autouse=True)
def _log_checked_since_hours_ago(site):
    """These batches are received 3 h before now, when the fixture site did not exist yet:
    its redo watermark, set at creation (nothing can be logged before), goes back 6 h."""
    since = timebuckets.floor(timezone.now() - timedelta(hours=6), timebuckets.Width.TEN_MINUTES)
    RedoWatermark.objects.filter(site=site).update(redone_through=since)


def _record(site, received_at, events):
    return events_record(source=Source(site=site, received_at=received_at), raw_events=events)


def _sealed(site, hour) -> dict:
    return {k: v for k, v in sealed(site, hour).items() if k in ("events", "users", "by_type")}


def _recount(site, hour) -> dict:
    return {k: v for k, v in recount(site, hour).items() if k in ("events", "users", "by_type")}


def _replay(settings) -> int:
    """Run the redo over the last few hours of the log (these batches are 3 h old)."""
    settings.TXLOG_REDO_GRACE = timedelta(0)
    settings.TXLOG_REDO_WINDOW = timedelta(hours=5)
    return redo.txlog_redo(now=timezone.now() + timedelta(seconds=1), max_buckets=40)


def _hour():
    now = timezone.now().replace(microsecond=0)
    return now, timebuckets.floor(now - timedelta(hours=3), "hour")


def test_a_resend_logged_twice_is_counted_once(site, monkeypatch, settings):
    now, hour = _hour()
    events = [event(hour + timedelta(minutes=i), anon="twice", id=f"tw-{i}") for i in range(5)]
    events.append(event(hour + timedelta(minutes=9), anon="once", id="tw-other"))
    # The first request is logged, and its write is lost (a crash after the log write).
    monkeypatch.setattr(apply_step, "plan_apply", lambda plan, **kwargs: None)
    assert _record(site, hour + timedelta(minutes=10), events).accepted == 6
    monkeypatch.undo()
    redis_client().flushdb()  # Redis restarted empty: the dedup marks are gone
    # The client's retry: nothing in Redis, nothing in Cassandra yet: logged again.
    assert _record(site, hour + timedelta(minutes=11), events).accepted == 6
    assert _replay(settings) == 1
    assert seal.bucket_seal(site_id=site.id, hour=hour, now=now)
    assert (
        _sealed(site, hour)
        == _recount(site, hour)
        == {
            "events": 6,
            "users": 2,
            "by_type": {"pageview": 6},
        }
    )


def test_a_batch_written_after_its_hour_was_sealed_reopens_it(site, monkeypatch, settings):
    now, hour = _hour()
    first = [event(hour + timedelta(minutes=5), anon="early", id="ap-1")]
    assert _record(site, hour + timedelta(minutes=6), first).accepted == 1
    # Taken in time (not late), but its write waits in a queue past the seal.
    monkeypatch.setattr(apply_step, "plan_apply", lambda plan, **kwargs: None)
    waiting = [event(hour + timedelta(minutes=50), anon="queued", id="ap-2")]
    outcome = _record(site, hour + timedelta(minutes=51), waiting)
    assert outcome.accepted == 1 and outcome.late == 0
    monkeypatch.undo()
    assert seal.bucket_seal(site_id=site.id, hour=hour, now=now)
    assert _sealed(site, hour)["events"] == 1  # the seal ran before the write

    assert _replay(settings) == 1
    state = BucketState.objects.get(site=site, granularity="hour", bucket=hour)
    assert state.state == BucketState.REOPENED
    due = [(g, b) for s, g, b in states.buckets_due(now=now) if s == site.id]
    assert ("hour", hour) in due
    assert seal.bucket_seal(site_id=site.id, hour=hour, now=now)
    assert _sealed(site, hour) == _recount(site, hour)
    assert _sealed(site, hour)["events"] == 2


def test_a_batch_half_applied_when_its_writer_died_is_finished_by_the_replay(
    site, monkeypatch, settings
):
    """The writer dies after half of a plan's statements (events of some partitions,
    perhaps the tally, perhaps not): the hour sealed meanwhile is reopened by the redo's
    write and resealed to the exact figures."""
    now, hour = _hour()
    BucketState.objects.filter(site=site).delete()
    Site.objects.filter(pk=site.pk).update(event_shards=4)  # the hour in four partitions
    site.refresh_from_db()
    visitors = ["half-a", "half-b", "half-c"]
    events = [
        event(
            hour + timedelta(minutes=2 * i, seconds=v),
            anon=visitors[v],
            id=f"half-{v}-{i}",
            url=f"https://shop.example/p/{i % 4}",
            **(
                {"kind": "click", "element": {"tag": "button", "text": f"Buy {i % 2}"}}
                if i % 3
                else {}
            ),
        )
        for i in range(12)
        for v in range(3)
    ]
    real = plan_writes.execute_all
    written: list[int] = []

    def dies_halfway(work):
        # Writes go out concurrently: at a kill any of them may be missing. Every third one.
        landed = [w for i, w in enumerate(work) if i % 3 != 2]
        written.append(len(landed))
        real(landed)
        raise ConnectionError("the worker was killed mid-batch")

    monkeypatch.setattr(plan_writes, "execute_all", dies_halfway)
    assert _record(site, hour + timedelta(minutes=30), events).accepted == 36
    monkeypatch.undo()
    assert written and written[0] > 0  # something of the batch landed
    assert 0 < recount(site, hour)["events"] < 36  # some of the hour's rows landed
    assert seal.bucket_seal(site_id=site.id, hour=hour, now=now)

    assert _replay(settings) == 1
    state = BucketState.objects.get(site=site, granularity="hour", bucket=hour)
    assert state.state == BucketState.REOPENED
    seal_and_compare(site, {hour}, expected_events=36)
    assert recount(site, hour)["users"] == 3
