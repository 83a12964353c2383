"""Fault injection (slow): kill -9 Redis under a live collector and Celery worker, restart it empty.

A Redis of the test's own (a free port, so the suite's Redis is untouched) behind a
gunicorn collector and a real Celery worker. Redis only caches and coordinates:
while it is down the collector answers from Cassandra; once it is back (empty) a
visitor's events stay in one session, a gap over 30 minutes still splits, resent
beacons add no rows and no counts, and a seal lost with the queue is re-derived by
the sweep on the same worker, which reconnected to the new broker by itself.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import pytest
import redis as redis_py
from cassandra.concurrent import execute_concurrent
from cassandra.query import UNSET_VALUE
from celery import Celery
from django.conf import settings
from django.utils import timezone
from kombu.exceptions import OperationalError
from redis.exceptions import RedisError

from ops import redis as launcher
from sessions_app import tasks
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.core.ids import time_uuid
from sessions_app.foundation.models import BucketState
from sessions_app.foundation.tables import user_sessions
from tests.support.faults import (
    BROWSER,
    INSERT_SITE_EVENT,
    collector_start,
    event_id_of,
    free_port,
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
PARKED = "redis-restart-parked"  # a queue no worker consumes


def _send(url: str, site: Any, events: list[dict[str, Any]]) -> tuple[int, dict[str, Any], float]:
    body = json.dumps({"site": site.key, "events": events}).encode()
    request = urllib.request.Request(
        url, data=body, headers={"Content-Type": "text/plain", "Origin": ORIGIN, **BROWSER}
    )
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read()), time.monotonic() - started
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}"), time.monotonic() - started


def _beacon(visitor: str, name: str, times: list[datetime]) -> list[dict[str, Any]]:
    return [
        {
            "id": f"{visitor}-{name}-{i}",
            "type": "pageview",
            "ts": ts.isoformat(),
            "anonymous_id": visitor,
            "url": f"https://shop.example/{name}/{i}",
        }
        for i, ts in enumerate(times)
    ]


def _stored(site: Any, visitor: str, events: list[dict[str, Any]]) -> dict[str, Counter[Any]]:
    """Count the rows of each event table for one visitor, keyed by (event id, session id)."""
    times = [timebuckets.as_utc(datetime.fromisoformat(e["ts"])) for e in events]
    rows: dict[str, Counter[Any]] = {"session": Counter(), "user": Counter(), "site": Counter()}
    by_session = prepare("SELECT event_id FROM {ks}.session_events WHERE session_id = ?")
    for summary in user_sessions.session_list(site_id=site.id, user_key=visitor):
        for row in cassandra_session().execute(by_session, (summary["session_id"],)):
            rows["session"][row["event_id"], summary["session_id"]] += 1
    by_user = prepare(
        "SELECT event_id, session_id FROM {ks}.user_events_by_bucket "
        "WHERE site_id = ? AND user_key = ? AND bucket = ?"
    )
    for day in {timebuckets.floor(t, "day") for t in times}:
        for row in cassandra_session().execute(by_user, (site.id, visitor, day)):
            rows["user"][row["event_id"], row["session_id"]] += 1
    by_site = prepare(
        "SELECT event_id, session_id, user_key FROM {ks}.site_events_by_bucket "
        "WHERE site_id = ? AND bucket = ? AND shard = 0"
    )
    for hour in {timebuckets.floor(t, "hour") for t in times}:
        for row in cassandra_session().execute(by_site, (site.id, hour)):
            if row["user_key"] == visitor:
                rows["site"][row["event_id"], row["session_id"]] += 1
    return rows


def _site_event(site_id: Any, hour: datetime, i: int) -> tuple[Any, ...]:
    """A raw site_events_by_bucket row of one of 40 users, 5 s apart, in shard 0."""
    ts = hour + timedelta(seconds=5 * i)
    user = f"u{i % 40}"
    return (
        site_id,
        hour,
        0,
        time_uuid(ts, f"k{i}"),
        time_uuid(hour, f"s-{user}"),
        user,
        "pageview",
        UNSET_VALUE,
        ts,
        "https://shop.example/",
        UNSET_VALUE,
        False,
    )


def _client(url: str) -> Celery:
    """A Celery app of the project's configuration whose broker is this Redis.

    `clickstream.celery.app` sends control commands (ping) through its own broker
    whatever connection is passed, and CELERY_BROKER_URL in the environment beats
    `broker_url`; the read and write URLs come first.
    """
    client = Celery("clickstream", set_as_current=False)
    client.config_from_object("django.conf:settings", namespace="CELERY")
    client.conf.update(broker_read_url=url, broker_write_url=url)
    return client


def _ping(client: Celery) -> list[Any]:
    """Ping the workers; a connection the restart broke counts as no answer (it reconnects)."""
    try:
        return client.control.ping(timeout=0.5) or []
    except (OSError, OperationalError, RedisError):
        return []


def _start_worker(env: dict[str, str], client: Celery) -> subprocess.Popen[bytes]:
    with open(log_path("fault-redis-worker.log"), "ab") as log:
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
                f"redis-restart-{time.time()}@%h",
                "--without-mingle",
                "--without-gossip",
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + 60
    while not _ping(client):
        if worker.poll() is not None or time.monotonic() > deadline:
            process_stop(worker)
            raise AssertionError("the worker did not start")
    return worker


def test_redis_restarted_sessions_stay_right_and_no_work_is_lost(site):
    port = free_port()
    # The suite's Redis database number (one per xdist worker): the processes it starts
    # inherit PYTEST_XDIST_WORKER, and their settings pick that database on any Redis.
    url_of_redis = f"redis://127.0.0.1:{port}{urlsplit(settings.REDIS_URL).path}"
    env = {
        **suite_env(),
        "REDIS_URL": url_of_redis,
        "CELERY_BROKER_URL": url_of_redis,
        "CELERY_RESULT_BACKEND": url_of_redis,
    }
    now = timezone.now().replace(microsecond=0)
    # A due hour bucket for the seal (as test_kill.py makes one), far from the visitors' hours.
    hour = timebuckets.floor(now - timedelta(hours=8), "hour")
    BucketState.objects.create(site=site, granularity="hour", bucket=hour, shards=1)
    sealed_events = 400
    insert = prepare(INSERT_SITE_EVENT)
    work = [(insert, _site_event(site.id, hour, i)) for i in range(sealed_events)]
    execute_concurrent(cassandra_session(), work, concurrency=64, raise_on_first_error=True)

    launcher.start(port)
    store = redis_py.Redis.from_url(url_of_redis)
    client = _client(url_of_redis)
    web, base = collector_start(env, log_name="fault-redis-gunicorn.log")
    worker = None
    url = f"{base}/collect"
    a, b = "rr-steady", "rr-returning"
    t0 = now - timedelta(minutes=10)  # visitor a: one session, beacons 20 s apart
    beacons = {
        n: _beacon(a, f"b{n}", [t0 + timedelta(seconds=20 * n + i) for i in range(3)])
        for n in range(6)
    }
    t1 = (now - timedelta(hours=4)).replace(second=0)  # visitor b: late events, hours ago
    minutes = [timedelta(minutes=m) for m in (0, 10, 39, 70, 75)]
    b_before = _beacon(b, "before", [t1 + m for m in minutes[:2]])
    b_after = _beacon(b, "after", [t1 + m for m in minutes[2:]])
    statuses: list[tuple[str, int, float]] = []
    try:
        worker = _start_worker(env, client)

        def send(events: list[dict[str, Any]], phase: str) -> dict[str, Any]:
            status, answer, took = _send(url, site, events)
            statuses.append((phase, status, round(took, 2)))
            assert status == 200, (phase, status, answer)
            assert answer["accepted"] + answer["duplicates"] == len(events), answer
            assert not answer["rejected"], answer
            return answer

        # 1. Healthy: two beacons of a, the first half of b's visit; a seal parked in Redis.
        for n in (0, 1):
            assert send(beacons[n], "up")["accepted"] == 3
        assert send(b_before, "up")["accepted"] == 2
        [first] = user_sessions.session_list(site_id=site.id, user_key=a)
        session_id = first["session_id"]
        assert first["event_count"] == 6
        assert store.exists(f"cs:sess:{site.id}:{a}")  # the cache Redis will lose
        client.send_task(
            tasks.seal_bucket.name,
            (str(site.id), "hour", hour.isoformat()),
            queue=PARKED,
            ignore_result=True,
        )
        assert store.llen(PARKED) == 1

        # 2. kill -9 Redis: the collector answers from Cassandra.
        os.kill(launcher.pid_of(port), signal.SIGKILL)  # type: ignore[arg-type]
        deadline = time.monotonic() + 10
        while launcher.ping(port):
            assert time.monotonic() < deadline
            time.sleep(0.1)
        for n in (2, 3):
            assert send(beacons[n], "down")["accepted"] == 3
        # A resend of an acknowledged beacon: no dedup marks, Cassandra has its rows.
        assert send(beacons[0], "down")["duplicates"] == 3

        # 3. Restart Redis on the same port, empty (no persistence).
        assert launcher.start(port)
        assert store.llen(PARKED) == 0  # the parked seal is gone with Redis
        assert BucketState.objects.get(site=site, granularity="hour", bucket=hour).state == "open"
        assert not store.exists(f"cs:sess:{site.id}:{a}")
        for n in (4, 5):
            assert send(beacons[n], "restarted")["accepted"] == 3
        # The collector's Redis connections recovered: the cache and the marks are back.
        assert store.exists(f"cs:sess:{site.id}:{a}")
        assert store.exists(f"cs:ev:{site.id}:{beacons[5][0]['id']}")
        for n in (1, 2):  # resends of beacons acknowledged before and during the outage
            assert send(beacons[n], "restarted")["duplicates"] == 3
        assert send(b_after, "restarted")["accepted"] == 3

        # 4. The worker was never restarted: a sweep sent now re-derives the lost seal.
        deadline = time.monotonic() + 60
        while not _ping(client):
            assert time.monotonic() < deadline, "the worker did not reconnect to Redis"
        client.send_task(tasks.seal_due_buckets.name, ignore_result=True)
        deadline = time.monotonic() + 90
        while BucketState.objects.get(site=site, granularity="hour", bucket=hour).state != "sealed":
            assert time.monotonic() < deadline, "the lost seal was not re-derived"
            time.sleep(0.5)
        assert worker.poll() is None
    finally:
        process_stop(web)
        if worker is not None:
            process_stop(worker)
        client.close()
        store.close()
        launcher.stop(port)
        shutil.rmtree(launcher.home(port), ignore_errors=True)
    print("status codes (phase, status, seconds):", statuses)

    # a: one session, every distinct event once, in every table.
    sent_a = [e for n in range(6) for e in beacons[n]]
    [summary] = user_sessions.session_list(site_id=site.id, user_key=a)
    assert summary["session_id"] == session_id
    assert summary["event_count"] == summary["pageview_count"] == len(sent_a) == 18
    assert summary["started_at"] == t0
    assert summary["last_seen_at"] == t0 + timedelta(seconds=20 * 5 + 2)
    expected = Counter((event_id_of(site, e), session_id) for e in sent_a)
    assert _stored(site, a, sent_a) == {"session": expected, "user": expected, "site": expected}

    # b: split by the 30-minute gap from Cassandra alone: 0, 10, 39 | 70, 75.
    sessions = sorted(
        user_sessions.session_list(site_id=site.id, user_key=b), key=lambda s: s["started_at"]
    )
    assert [(s["started_at"], s["event_count"]) for s in sessions] == [
        (t1, 3),
        (t1 + minutes[3], 2),
    ]
    assert sessions[0]["last_seen_at"] == t1 + minutes[2]
    in_session = [sessions[0]["session_id"]] * 3 + [sessions[1]["session_id"]] * 2
    sent_b = b_before + b_after
    expected_b = Counter(zip([event_id_of(site, e) for e in sent_b], in_session, strict=True))
    assert _stored(site, b, sent_b) == {
        "session": expected_b,
        "user": expected_b,
        "site": expected_b,
    }

    # The seal lost with Redis was redone by the sweep, with the right aggregate.
    aggregate = bucket_aggregate(site_id=site.id, granularity="hour", bucket=hour)
    assert aggregate is not None
    assert aggregate["events"] == aggregate["rows_read"] == sealed_events
    assert aggregate["users"] == 40

    # Every hour the visitors wrote into, sealed after the outage: the aggregates (events,
    # sessions, users, pages, per-user counts) equal a recount of the raw rows, resends
    # counted once; the hour sealed by the sweep too.
    seal_and_compare(site, hours_of(sent_a + sent_b), expected_events=len(sent_a + sent_b))
    assert assert_exact(site, hour, raw_rows_only=True) == sealed_events  # as swept
