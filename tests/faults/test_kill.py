"""Fault injection (slow): kill -9 a gunicorn worker under beacon load, kill -9 the Celery
worker in the middle of a seal. Nothing acknowledged is lost or doubled."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from datetime import timedelta
from typing import Any

import pytest
from cassandra.concurrent import execute_concurrent
from cassandra.query import UNSET_VALUE
from django.conf import settings
from django.utils import timezone

from sessions_app import tasks
from sessions_app.domain.aggregates import states
from sessions_app.domain.ingest.redo import txlog_redo
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.core.ids import time_uuid
from sessions_app.foundation.models import BucketState, Site
from sessions_app.foundation.tables import user_sessions
from tests.support.faults import (
    BROWSER,
    INSERT_SITE_EVENT,
    children,
    collector_start,
    event_id_of,
    log_path,
    process_stop,
    suite_env,
)
from tests.support.recount import assert_exact, hours_of, seal_and_compare
from tests.support.repo import ROOT
from tests.support.sealing import bucket_aggregate

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True, databases=["default", "cassandra"]),
]
ORIGIN = "https://shop.example"


def _post(url: str, body: bytes) -> dict[str, Any] | None:
    """POST a beacon, retrying like the tracker does (with backoff) until it is answered 200."""
    for attempt in range(40):
        request = urllib.request.Request(
            url, data=body, headers={"Content-Type": "text/plain", "Origin": ORIGIN, **BROWSER}
        )
        try:
            with urllib.request.urlopen(request, timeout=15) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            assert exc.code >= 500 or exc.code == 429, exc.read()  # never a 4xx for good data
        except OSError:
            pass  # connection reset by the killed worker
        time.sleep(min(0.05 * 2**attempt, 1.0))
    return None


def _beacon_load(url: str, site: Site, now: Any, kill: Any) -> dict[str, Any]:
    """Four visitors send 30 beacons of 10 events each, retrying; `kill()` runs 1.5 s in.

    Returns every event sent, once each visitor has had all its beacons acknowledged.
    """
    sent: dict[str, Any] = {}
    acknowledged: set[str] = set()
    lock = threading.Lock()

    def visitor(n: int) -> None:
        for b in range(30):
            events = [
                {
                    "id": f"v{n}-b{b}-e{i}",
                    "type": "pageview",
                    "ts": (now - timedelta(seconds=300 - b * 5 - i / 10)).isoformat(),
                    "anonymous_id": f"fault-{n}",
                    "url": "https://shop.example/",
                }
                for i in range(10)
            ]
            body = json.dumps({"site": site.key, "events": events}).encode()
            with lock:
                sent.update({e["id"]: e for e in events})
            answer = _post(url, body)
            if answer is not None:
                assert answer["accepted"] + answer["duplicates"] == 10, answer
                with lock:
                    acknowledged.update(e["id"] for e in events)

    threads = [threading.Thread(target=visitor, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    time.sleep(1.5)
    kill()
    for thread in threads:
        thread.join(300)
    assert acknowledged == set(sent)  # the retries got every beacon through
    return sent


def _assert_stored_exactly_once(site: Site, now: Any, sent: dict[str, Any]) -> None:
    # A batch logged but not applied (killed worker or applier) is completed by the redo.
    txlog_redo(now=timezone.now() + settings.TXLOG_REDO_GRACE + timedelta(seconds=1))
    statement = prepare(
        "SELECT event_id FROM {ks}.user_events_by_bucket "
        "WHERE site_id = ? AND user_key = ? AND bucket = ?"
    )
    day = timebuckets.floor(now - timedelta(seconds=300), "day")
    stored: list[Any] = []
    for n in range(4):
        for bucket in {day, timebuckets.floor(now, "day")}:
            stored += [
                r["event_id"]
                for r in cassandra_session().execute(statement, (site.id, f"fault-{n}", bucket))
            ]
    expected = {event_id_of(site, e) for e in sent.values()}
    assert len(stored) == len(set(stored))
    assert set(stored) == expected  # every acknowledged event exactly once, nothing else
    for n in range(4):  # and counted once in its session summary
        summaries = user_sessions.session_list(site_id=site.id, user_key=f"fault-{n}")
        assert sum(s["event_count"] for s in summaries) == 300
    # and once in the sealed hours: aggregates equal a recount of the raw rows
    seal_and_compare(site, hours_of(list(sent.values())), expected_events=len(sent))


def test_kill_9_a_web_worker_under_load_loses_no_acknowledged_event(site):
    master, base = collector_start(suite_env(), log_name="fault-gunicorn.log")
    now = timezone.now().replace(microsecond=0)
    try:
        sent = _beacon_load(
            f"{base}/collect",
            site,
            now,
            kill=lambda: os.kill(random.choice(children(master.pid)), signal.SIGKILL),
        )
    finally:
        process_stop(master)
    _assert_stored_exactly_once(site, now, sent)


def test_kill_9_the_applier_under_load_loses_no_acknowledged_event(site):
    """Plans the applier popped and never wrote are in the log: the redo writes them.
    Once its alive key expires, the web workers write their plans themselves."""
    from sessions_app.domain.ingest.applier import backlog

    env = suite_env()
    with open(log_path("fault-applier.log"), "ab") as out:
        applier = subprocess.Popen(
            [sys.executable, "manage.py", "run_applier"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    master, base = collector_start(env, log_name="fault-applier-gunicorn.log")
    now = timezone.now().replace(microsecond=0)
    try:
        deadline = time.monotonic() + 60
        while not backlog()["alive"]:
            assert time.monotonic() < deadline, "the applier never announced itself"
            time.sleep(0.2)
        sent = _beacon_load(
            f"{base}/collect", site, now, kill=lambda: os.killpg(applier.pid, signal.SIGKILL)
        )
    finally:
        process_stop(master)
        applier.wait(10)
    assert applier.returncode == -signal.SIGKILL
    _assert_stored_exactly_once(site, now, sent)


def _worker_log_tail(lines: int = 20) -> str:
    """Return the end of the fault workers' log, for a failure message."""
    log = log_path("fault-worker.log")
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def _start_worker(queue: str) -> tuple[subprocess.Popen[bytes], str]:
    """Start a one-process Celery worker on queue; return it and its node name once it answers."""
    from clickstream.celery import app

    name = f"fault-{time.time()}@{socket.gethostname()}"
    with open(log_path("fault-worker.log"), "ab") as log:
        worker = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "clickstream",
                "worker",
                "-l",
                "INFO",
                "--pool",
                "prefork",
                "--concurrency",
                "1",
                "-n",
                name,
                "-Q",
                queue,
                "--without-mingle",
                "--without-gossip",
            ],
            cwd=ROOT,
            env=suite_env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + 60
    # Ask this worker alone: another one (the suite's) answering says nothing about it.
    while not app.control.ping(destination=[name], timeout=0.5):
        assert worker.poll() is None and time.monotonic() < deadline, (
            f"worker did not start:\n{_worker_log_tail()}"
        )
    return worker, name


def test_kill_9_the_celery_worker_mid_seal_then_the_sweep_seals_it_right(site):
    Site.objects.filter(pk=site.pk).update(event_shards=4)
    now = timezone.now().replace(microsecond=0)
    hour = timebuckets.floor(now - timedelta(hours=3), "hour")
    BucketState.objects.create(site=site, granularity="hour", bucket=hour, shards=4)
    insert = prepare(INSERT_SITE_EVENT)
    # Enough for the seal to take ~2 s on an idle machine (longer under the suite): the kill
    # lands within ~0.1 s of the worker reporting it active. 120,000 took a minute more to
    # insert, seal and recount, and proved nothing more.
    events = 40_000
    work = [
        (
            insert,
            (
                site.id,
                hour,
                i % 4,
                time_uuid(hour + timedelta(milliseconds=50 * i), f"k{i}"),
                time_uuid(hour, f"s{i % 500}"),
                f"u{i % 250}",
                "pageview",
                UNSET_VALUE,
                hour + timedelta(milliseconds=50 * i),
                "https://shop.example/",
                UNSET_VALUE,
                False,
            ),
        )
        for i in range(events)
    ]
    execute_concurrent(cassandra_session(), work, concurrency=128, raise_on_first_error=True)

    # A queue of its own: the suite's session-wide worker must not take this seal.
    worker, name = _start_worker("faults")
    try:
        from clickstream.celery import app

        tasks.seal_bucket.apply_async((str(site.id), "hour", hour.isoformat()), queue="faults")
        # Kill as soon as this worker reports the seal running: asking it alone and
        # returning on its reply keeps the poll at milliseconds, well inside the seal.
        inspect = app.control.inspect(destination=[name], timeout=2.0, limit=1)
        deadline = time.monotonic() + 30
        while not (inspect.active() or {}).get(name):
            assert time.monotonic() < deadline, f"the seal did not start:\n{_worker_log_tail()}"
        for pid in [*children(worker.pid), worker.pid]:
            os.kill(pid, signal.SIGKILL)
        worker.wait(10)
        assert (
            BucketState.objects.get(site=site, granularity="hour", bucket=hour).state != "sealed"
        )  # killed mid-way
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)

    worker, _ = _start_worker("celery")  # the restart; the queue may have lost the task
    try:
        assert tasks.seal_due_buckets.apply().get() >= 1  # the sweep finds it from SQL
        deadline = time.monotonic() + 120
        while BucketState.objects.get(site=site, granularity="hour", bucket=hour).state != "sealed":
            assert time.monotonic() < deadline, "not sealed after the restart"
            time.sleep(0.5)
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(30)
    aggregate = bucket_aggregate(site_id=site.id, granularity="hour", bucket=hour)
    assert aggregate["events"] == aggregate["rows_read"] == events
    assert aggregate["users"] == 250
    assert (site.id, "hour", hour) not in states.buckets_due(now=now)
    assert assert_exact(site, hour, raw_rows_only=True) == events  # pages, per-user counts
