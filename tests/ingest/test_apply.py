"""Applying plans on a stock node: no batch goes over Cassandra's batch_size_warn_threshold
(5 KiB), so a busy collector or applier logs no per-request driver warning."""

from __future__ import annotations

import logging

import pytest

from sessions_app.domain.ingest import applier
from sessions_app.domain.ingest.coordination import ALIVE_KEY, INLINE_KEY, QUEUE_KEY
from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.foundation.core.redis_client import redis_client
from tests.support.events import event, minutes

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])


@pytest.fixture(autouse=True)
def _empty_queue():
    redis_client().delete(QUEUE_KEY, ALIVE_KEY, INLINE_KEY)
    yield
    redis_client().delete(QUEUE_KEY, ALIVE_KEY, INLINE_KEY)


def _big_request(anon: str, start) -> list[dict]:
    """60 events of one visitor, ~600 bytes of props each: ~50 KB in each of its partitions."""
    props = {f"p{i}": "v" * 40 for i in range(12)}
    return [
        event(start + minutes(i / 10), kind="custom", name=f"n{i % 3}", anon=anon, props=props)
        for i in range(60)
    ]


def _driver_warnings(caplog) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name.startswith("cassandra") and r.levelno >= logging.WARNING
    ]


def test_a_big_plan_written_inline_logs_no_driver_warning(site, live_now, caplog):
    caplog.set_level(logging.WARNING, logger="cassandra")
    source = Source(site=site, received_at=live_now)
    outcome = events_record(source=source, raw_events=_big_request("big", live_now - minutes(8)))
    assert outcome.accepted == 60 and not outcome.queued
    assert _driver_warnings(caplog) == []


def test_an_applier_round_of_big_plans_logs_no_driver_warning(site, live_now, caplog):
    caplog.set_level(logging.WARNING, logger="cassandra")
    applier.announce()
    for n in range(6):
        raw = _big_request(f"big-{n}", live_now - minutes(8))
        outcome = events_record(source=Source(site=site, received_at=live_now), raw_events=raw)
        assert outcome.queued and outcome.accepted == 60
    done = applier.drain_once()
    assert (done.applied, done.failed) == (6, 0)
    assert _driver_warnings(caplog) == []
