"""Shared by the fault tests: ports, processes, a fresh keyspace, a gunicorn collector,
the redo task in its own process, an event's stored id, the environment and user agent
of what a test starts and sends."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connections

from sessions_app.domain.ingest.order import ranked_times
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.ids import event_uuid
from sessions_app.foundation.core.timebuckets import as_utc
from tests.support.repo import ROOT


def log_path(name: str) -> Any:
    """Return .state/logs/<name> (the folder made if missing: a test may run alone)."""
    logs = ROOT / ".state" / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    return logs / name


def free_port() -> int:
    """Return a loopback TCP port nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def children(pid: int) -> list[int]:
    """Return the pids of a process's direct children."""
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def keyspace_recreate(driver: Any, keyspace: str, env: dict[str, str]) -> None:
    """Drop a keyspace through `driver` (then shut it down) and sync it anew as `env` says."""
    with driver.connect() as setup:
        setup.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=60)
    driver.shutdown()
    # The schema is made with a patient timeout of its own: `env` may carry the short one
    # a fault test gives the collector, and a node that has just started answers DDL slowly.
    sync_env = {**env, "CASSANDRA_REQUEST_TIMEOUT": "60"}
    attempts = 3
    for _ in range(attempts):
        done = subprocess.run(
            [sys.executable, "manage.py", "sync_cassandra"],
            cwd=ROOT,
            env=sync_env,
            capture_output=True,
            text=True,
        )
        if done.returncode == 0:
            return
        time.sleep(5)
    raise AssertionError(f"sync_cassandra failed {attempts} times:\n{done.stderr[-4000:]}")


def redo_run(env: dict[str, str], *, ahead: timedelta, max_buckets: int = 24) -> int:
    """Run the transaction-log redo once, configured by `env`, as if the redo grace
    and `ahead` had passed; return how many entries it applied."""
    code = (
        "from datetime import timedelta; from django.conf import settings; "
        "from django.utils import timezone; "
        "from sessions_app.domain.ingest.redo import txlog_redo; "
        "print(txlog_redo(now=timezone.now() + settings.TXLOG_REDO_GRACE "
        f"+ timedelta(seconds={ahead.total_seconds()}), max_buckets={max_buckets}))"
    )
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return int(done.stdout.split()[-1])


def collector_start(
    env: dict[str, str], *, log_name: str, workers: int = 2
) -> tuple[subprocess.Popen[bytes], str]:
    """Start gunicorn (sync workers) on a free port; return it and its base URL once its
    workers are forked and one of them answers.

    Its output goes to .state/logs/<log_name>; it runs in a session of its own so a
    test can kill the master and its workers together.
    """
    port = free_port()
    with open(log_path(log_name), "ab") as log:
        web = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "clickstream.wsgi",
                "-b",
                f"127.0.0.1:{port}",
                "-w",
                str(workers),
                "-k",
                "sync",
                "--timeout",
                "60",
                "--log-level",
                "warning",
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while len(children(web.pid)) < workers or not answers(base):
        if time.monotonic() > deadline or web.poll() is not None:
            process_stop(web)
            raise AssertionError(f"gunicorn did not start (log: .state/logs/{log_name})")
        time.sleep(0.2)
    return web, base


def answers(base: str) -> bool:
    """True once the collector at `base` answers a request (400 for a body without a site)."""
    request = urllib.request.Request(
        f"{base}/collect", data=b"{}", headers={"Content-Type": "text/plain"}
    )
    try:
        urllib.request.urlopen(request, timeout=2).close()
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False
    return True


def process_stop(process: subprocess.Popen[bytes]) -> None:
    """Stop a process started in a session of its own, and its children: TERM, then KILL."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)


def event_id_of(site: Any, event: dict[str, Any]) -> Any:
    """Return the TimeUUID the collector stores for a beacon event of this site, when no
    other event of its visitor in its request has the same time."""
    ts = timebuckets.as_utc(datetime.fromisoformat(event["ts"]))
    return event_uuid(site_id=site.id, client_event_id=event["id"], ts=ts)


def event_ids_of(site: Any, events: list[dict[str, Any]]) -> list[Any]:
    """The TimeUUIDs the collector stores for beacon events sent in this order, when a
    visitor's events of one time were all sent in one request (domain/ingest/order.py: the
    k-th of them is k µs later)."""
    times = ranked_times(
        [
            (e.get("user_id") or e["anonymous_id"], as_utc(datetime.fromisoformat(e["ts"])))
            for e in events
        ]
    )
    return [
        event_uuid(site_id=site.id, client_event_id=e["id"], ts=at)
        for e, at in zip(events, times, strict=True)
    ]


# Beacons come from browsers: urllib's own agent is on the crawler list (a bot).
BROWSER = {"User-Agent": "Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0.0.0 Safari/537.36"}


def suite_env() -> dict[str, str]:
    """The environment of a process the test starts: the suite's settings, keyspace and Redis."""
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "clickstream.settings.test",
        "CASSANDRA_KEYSPACE": connections["cassandra"].settings_dict["NAME"],
        "REDIS_URL": settings.REDIS_URL,
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "CELERY_RESULT_BACKEND": settings.CELERY_RESULT_BACKEND,
    }


INSERT_SITE_EVENT = """
INSERT INTO {ks}.site_events_by_bucket
  (site_id, bucket, shard, event_id, session_id, user_key, type, name, ts, url, element, is_bot)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
