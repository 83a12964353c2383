"""Rows are freed when a request ends, not by Python's cycle collector.

A timeline request holds 1,000 rows (a dict and two UUIDs each). If anything
keeps them in a reference cycle, they outlive the request until a collection
runs, and those collections were what made the API's p95.
"""

from __future__ import annotations

import gc
import io
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.core.handlers.wsgi import WSGIHandler
from django.test import RequestFactory
from django.utils import timezone

from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.tables import user_sessions
from tests.support.events import event

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

EVENTS = 300
CALLS = 5  # the driver's own threads make a little cyclic garbage meanwhile (< 400 objects)


@pytest.fixture
def collector_paused() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _unreachable() -> int:
    time.sleep(0.05)  # the driver's event loop drops its cancelled timers
    return gc.collect()


@pytest.fixture
def timeline(site):
    now = timezone.now().replace(microsecond=0)
    events_record(
        source=Source(site=site, received_at=now),
        raw_events=[
            event(now - timedelta(seconds=EVENTS - i), anon="mem", id=f"m{i}")
            for i in range(EVENTS)
        ],
    )
    [summary] = user_sessions.session_list(site_id=site.id, user_key="mem")
    return summary["session_id"]


EVENT_COLUMNS = """
SELECT event_id, site_id, user_key, ts FROM {ks}.session_events WHERE session_id = ? LIMIT ?
"""


def test_a_finished_query_leaves_no_cyclic_garbage(timeline, collector_paused):
    statement = prepare(EVENT_COLUMNS)
    assert len(list(cassandra_session().execute(statement, (timeline, 1000)))) == EVENTS
    _unreachable()
    for _ in range(CALLS):
        assert len(list(cassandra_session().execute(statement, (timeline, 1000)))) == EVENTS
    # Without the driver fix every row (a dict and two UUIDs) waits for the
    # collector: about 3 * EVENTS objects a call.
    assert _unreachable() < CALLS * EVENTS // 2


def test_a_paged_query_still_reads_every_page(timeline):
    statement = prepare(EVENT_COLUMNS).bind((timeline, 1000))
    statement.fetch_size = 50
    assert len(list(cassandra_session().execute(statement))) == EVENTS


@pytest.mark.parametrize("endpoint", ["timeline", "activity"])
def test_an_api_request_frees_its_payload(site, timeline, token, collector_paused, endpoint):
    """The timeline (its own JSON body) and a DRF Response of as many rows (activity)."""
    start = (timezone.now() - timedelta(hours=1)).isoformat()
    path, marker = {
        "timeline": (f"sessions/{timeline}/events", b'"event_count":%d' % EVENTS),
        "activity": ("users/mem/activity", b'"strategy":'),
    }[endpoint]
    handler = WSGIHandler()
    environ = (
        RequestFactory()
        .get(
            f"/api/sites/{site.id}/{path}",
            {"limit": 1000, "start": start} if endpoint == "activity" else {},
            HTTP_AUTHORIZATION=f"Token {token}",
        )
        .environ
    )

    def call() -> bytes:
        request = {**environ, "wsgi.input": io.BytesIO(b"")}
        statuses = []
        body = handler(request, lambda status, headers: statuses.append(status))
        try:
            content = b"".join(body)
        finally:
            body.close()
        assert statuses == ["200 OK"], content[:300]
        return content

    call()  # first use: lazy imports, prepared statements, caches
    _unreachable()
    for _ in range(CALLS):
        content = call()
        assert marker in content and content.count(b'"event_id":') == EVENTS
    # DRF's view <-> response <-> renderer context cycles held each payload's
    # events (about 3 * EVENTS objects); what is left is ~75 objects a request.
    assert _unreachable() < CALLS * EVENTS // 2


def test_the_web_process_tunes_the_cycle_collector():
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import gc, clickstream.wsgi; print(gc.get_threshold()[0], gc.get_freeze_count() > 0)",
        ],
        env={**os.environ, "WEB_GC_THRESHOLD": "12345"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.split() == ["12345", "True"]


def test_worker_processes_tune_the_cycle_collector():
    # A Celery worker child (worker_process_init) and the applier command both call it.
    from celery.signals import worker_process_init

    import clickstream.celery as app

    code = (
        "import gc, django; django.setup(); "
        "from clickstream import celery; celery._tune_gc(); "
        "print(gc.get_threshold()[0], gc.get_freeze_count() > 0)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "WORKER_GC_THRESHOLD": "23456"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.split() == ["23456", "True"]
    receivers = [ref() for _, ref in worker_process_init.receivers]
    assert app._tune_gc in receivers
