"""Test fixtures: real Cassandra (a `test_` keyspace) and real Redis, a fixed UTC clock."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from django.utils import timezone

from tests.support.accounts import member
from tests.support.clock import FIXED_NOW
from tests.support.events import event, minutes, post
from tests.support.hypothesis import profile_load
from tests.support.keyspace import guard_statement
from tests.support.keyspace import tables as keyspace_tables
from tests.support.repo import ROOT
from tests.support.shared import shop_site
from tests.support.signals import report as review_signals

CASSANDRA_DBS = ["default", "cassandra"]
# Before any test module is imported: its @settings(max_examples=examples(n)) reads it.
HYPOTHESIS_PROFILE = profile_load()


def pytest_configure(config: pytest.Config) -> None:
    """TEST_CLOCK=2026-11-27T04:05:00+00:00 runs the suite with the clock starting there.

    It ticks on from there (time_machine: datetime.now, time.time and what reads them, not
    the monotonic clock), so a test that depends on the time of day can be run at 00:05,
    04:05 or 23:55 whenever it is. Processes a test starts keep the real clock.
    """
    start = os.environ.get("TEST_CLOCK")
    if start:
        import time_machine

        time_machine.travel(datetime.fromisoformat(start), tick=True).start()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow tests first, then the browser tests, then the rest (a stable sort).

    With a worker per core (pytest-xdist), a three-minute test that starts last leaves the
    other worker idle for three minutes at the end; started first, the short tests fill in
    beside it.
    """

    def weight(item: pytest.Item) -> int:
        return 0 if item.get_closest_marker("slow") else 1 if item.get_closest_marker("e2e") else 2

    items.sort(key=weight)


SLOWEST_PAGES = 10


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Name the long modules, functions and docs at the end of a run: signals, not failures;
    and the slowest pages of the page walks (their server time, as recorded)."""
    walked = [
        (ms, f"{name} ({report.nodeid.partition('[')[2].partition(']')[0]})")
        for report in terminalreporter.stats.get("passed", [])
        + terminalreporter.stats.get("failed", [])
        if report.when == "call"
        for key, times in report.user_properties
        if key == "server_ms"
        for name, ms in times.items()
    ]
    if walked:
        terminalreporter.section("slowest pages of the walks (server time)", sep="-")
        for ms, name in sorted(walked, reverse=True)[:SLOWEST_PAGES]:
            terminalreporter.write_line(f"{ms:8.0f} ms  {name}")
    busy = _busy_by_worker(terminalreporter.stats)
    if len(busy) > 1:
        terminalreporter.section("time each worker spent in its tests", sep="-")
        terminalreporter.write_line(", ".join(f"{w} {s:.0f} s" for w, s in sorted(busy.items())))
    lines = review_signals()
    if lines:
        terminalreporter.section("review signals", sep="-")
        for line in lines:
            terminalreporter.write_line(line)


def _busy_by_worker(stats: dict[str, list[Any]]) -> dict[str, float]:
    """Seconds of setup, call and teardown each xdist worker ran: far apart, one worker sat
    idle at the end while the other finished (a long group scheduled late)."""
    busy: dict[str, float] = {}
    for reports in stats.values():
        for report in reports:
            node = getattr(report, "node", None)
            if node is not None and getattr(report, "when", None) in RUN_PHASES:
                busy[node.gateway.id] = busy.get(node.gateway.id, 0.0) + report.duration
    return busy


RUN_PHASES = ("setup", "call", "teardown")


@pytest.hookimpl(specname="pytest_collection_modifyitems", trylast=True)
def pytest_collection_modifyitems_xdist_groups(
    config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Under `--dist loadgroup`, each test's id ends with `@<its xdist_group>`, which is how
    xdist's scheduler keeps a group on one worker.

    xdist 3.8 writes that suffix to `item._nodeid`, which pytest 9.2 no longer reads (its
    ids are structured, `item._id`): every group was silently spread over both workers
    (pytest-xdist issue 1386). Here the suffix goes where pytest 9.2 reads it, unless it
    is there already.
    """
    if not getattr(config.option, "loadgroup", False):
        return
    try:
        from _pytest.nodeid import NodeId
    except ImportError:  # an older pytest reads the `_nodeid` xdist writes
        return

    for item in items:
        names = sorted(
            {
                str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                for m in item.iter_markers("xdist_group")
            }
        )
        suffix = "@" + "_".join(names)
        if names and not item.nodeid.endswith(suffix):
            item._id = NodeId.parse(item.nodeid + suffix)


@pytest.fixture(scope="session")
def django_db_setup(django_test_environment, django_db_blocker, django_db_modify_db_settings):
    """Always create both test databases and install the keyspace guard.

    pytest-django only sets up the aliases that collected tests ask for; a test
    that forgot its Cassandra mark would then talk to the real keyspace. Here the
    test_ keyspace is always created (after dropping a leftover one from a crashed
    run), and every statement the driver sends is checked by guard_statement.
    """
    from django.db import connections
    from django.test.utils import setup_databases, teardown_databases
    from django_cassandra_engine.base.operations import CassandraDatabaseOperations

    from sessions_app.foundation.core.cql import cassandra_session
    from sessions_app.foundation.tables import registry

    with django_db_blocker.unblock():
        conn = connections["cassandra"]
        test_name = conn.settings_dict["TEST"]["NAME"]
        assert test_name.startswith("test_"), test_name
        conn.connection.session.execute(f"DROP KEYSPACE IF EXISTS {test_name}", timeout=120)
        # The schema is made with a patient timeout: the request timeout the tests run with
        # (5 s) timed out a CREATE on a node busy with the other worker's tests, and every
        # test of the worker then erred.
        default = conn.connection.session.cluster.profile_manager.default
        tests_timeout, default.request_timeout = default.request_timeout, 120
        try:
            config = setup_databases(
                verbosity=0, interactive=False, aliases=set(CASSANDRA_DBS), serialized_aliases=set()
            )
            registry.indexes_ensure()
        finally:
            default.request_timeout = tests_timeout
        CassandraDatabaseOperations.execute_sql_flush = _flush_nothing
        cassandra_session().add_request_init_listener(lambda future: guard_statement(future.query))
    yield
    # The SQLite file goes; the keyspace stays until the next run drops it first (above):
    # dropping ~30 tables at the end only made the run longer, and timed out on a busy node.
    with django_db_blocker.unblock():
        teardown_databases([c for c in config if c[0].alias == "default"], verbosity=0)


def _flush_nothing(self: Any, sql_list: list[str]) -> None:
    """The Cassandra backend's flush after each test, made a no-op: tests isolate by what
    they write (a fresh site, user and session per test; every table is partitioned by
    site or by an id), so emptying ~50 tables after each one (a memtable flush each on the
    node) bought nothing but time. A test that needs empty tables asks for them with
    `@pytest.mark.empty_tables` (see `_empty_tables`)."""


def truncate_written() -> None:
    """Truncate every table of the test keyspace that holds a row: a one-row read of each,
    all at once, then TRUNCATE only those (each one a memtable flush on the node)."""
    from sessions_app.foundation.core.cql import cassandra_session, keyspace

    db, name, tables = cassandra_session(), keyspace(), keyspace_tables()
    probes = [db.execute_async(f"SELECT * FROM {name}.{table} LIMIT 1") for table in tables]
    written = [t for t, probe in zip(tables, probes, strict=True) if probe.result().one()]
    truncates = [db.execute_async(f"TRUNCATE {name}.{table}", timeout=120) for table in written]
    for truncate in truncates:
        truncate.result()


@pytest.fixture(autouse=True)
def _empty_tables(request: pytest.FixtureRequest) -> None:
    """A test marked `empty_tables` (an installation-wide scan, the partition report)
    starts with every Cassandra table empty, and pays for the truncation itself."""
    if request.node.get_closest_marker("empty_tables"):
        request.getfixturevalue("django_db_setup")
        truncate_written()


_DATABASE_FIXTURES = {"db", "transactional_db", "django_db_setup", "live_server"}


@pytest.fixture(autouse=True)
def _keyspace_guard(request: pytest.FixtureRequest) -> None:
    """Fail any test whose Cassandra keyspace (settings or models) is not test_*.

    Only for a test that uses the databases (a django_db mark or a database fixture): a
    test of pure functions starts no keyspace, so running it alone takes a second.
    """
    if not (
        request.node.get_closest_marker("django_db")
        or _DATABASE_FIXTURES & set(request.fixturenames)
    ):
        return
    request.getfixturevalue("django_db_setup")
    from django.db import connections

    from sessions_app.foundation.models import CASSANDRA_MODELS

    name = connections["cassandra"].settings_dict["NAME"]
    assert name.startswith("test_"), f"Cassandra keyspace {name!r} is not a test keyspace"
    for model in CASSANDRA_MODELS:
        assert (model.__keyspace__ or name).startswith("test_"), model


@pytest.fixture
def now() -> datetime:
    """Return the fixed UTC instant tests treat as the present."""
    return FIXED_NOW


@pytest.fixture
def live_now() -> datetime:
    """Return the real present, millisecond precision (the collector stamps receipt with it)."""
    now = timezone.now()
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


@pytest.fixture
def site(db):
    """Return a fresh site whose allowed origin is https://shop.example."""

    return shop_site()


@pytest.fixture
def replay_site(site):
    """The `site` fixture's site with session replay on."""
    site.replay = True
    site.save()
    return site


@pytest.fixture
def visit(client, replay_site, live_now) -> datetime:
    """A visitor's session of anon-1 whose tracker events started 5 minutes ago."""
    start = live_now - minutes(5)
    response = post(client, replay_site, [event(start), event(start + minutes(1), kind="click")])
    assert response.status_code == 200, response.content
    return start


@pytest.fixture
def measured(client, site) -> datetime:
    """Page views of the `site` fixture's site with their $vitals, sealed (see
    tests/support/vitals.py); the instant they were sent around."""
    from tests.support.vitals import vitals_measured

    return vitals_measured(client, site)


@pytest.fixture
def site_id() -> uuid.UUID:
    """Return a fresh site id, so every test writes to partitions of its own."""
    return uuid.uuid4()


def _worker(queue: str, name: str) -> Iterator[subprocess.Popen[bytes]]:
    """Start a real Celery worker (prefork) on one queue, the test Redis and keyspace."""
    from django.conf import settings
    from django.db import connections

    from clickstream.celery import app

    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "clickstream.settings.test",
        "CASSANDRA_KEYSPACE": connections["cassandra"].settings_dict["NAME"],
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "CELERY_RESULT_BACKEND": settings.CELERY_RESULT_BACKEND,
    }
    log = ROOT / ".state" / "logs"
    log.mkdir(parents=True, exist_ok=True)
    node = f"pytest-{name}-{os.getpid()}@{socket.gethostname()}"
    with open(log / f"test-{name}.log", "ab") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "clickstream",
                "worker",
                "-Q",
                queue,
                "-l",
                "INFO",
                "--pool",
                "prefork",
                "--concurrency",
                "2",
                "-n",
                node,
                "--without-mingle",
                "--without-gossip",
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"celery worker exited with {process.returncode}; see {log}")
        if app.control.ping(destination=[node], timeout=0.5):
            break
    else:
        process.kill()
        raise RuntimeError(f"celery worker did not answer within 60s; see {log}")
    yield process
    process.terminate()
    try:
        process.wait(20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture(scope="session")
def celery_worker_process(django_db_setup) -> Iterator[subprocess.Popen[bytes]]:
    """A worker on the default queue (sealing, erasure, heartbeat), as `make run` starts."""
    yield from _worker("celery", "worker")


@pytest.fixture
def celery_analysis_worker(django_db_setup) -> Iterator[subprocess.Popen[bytes]]:
    """A worker on the analysis queue (funnel day scans), as `make run` starts; only for
    the test asking for it (others check that nothing takes that queue)."""
    yield from _worker("analysis", "analysis-worker")


@pytest.fixture
def erasure_in_process(settings) -> None:
    """An erasure run in the test's process deletes at once: it waits ERASURE_SETTLE_SECONDS
    (20 s) for other collector processes to reload the suppression list, and there are
    none; this process forgets its own cached list when the erasure suppresses a key."""
    settings.SUPPRESSION_CACHE_SECONDS = 0
    settings.ERASURE_SETTLE_SECONDS = 0


@pytest.fixture
def analyst(client, site):
    """Log the test client in as an analyst of the `site` fixture's site."""
    from django.contrib.auth.models import User

    user = member(User.objects.create_user("ana", password="pw-ana-123"), site)
    client.force_login(user)
    return user


@pytest.fixture
def token(site) -> str:
    """Return the API token of an analyst of the `site` fixture's site, made by
    `manage.py create_api_token`."""
    from io import StringIO

    from django.contrib.auth.models import User
    from django.core.management import call_command

    member(User.objects.create_user("api-user", password="pw-api-123"), site)
    out = StringIO()
    call_command("create_api_token", "api-user", stdout=out)
    return out.getvalue().strip().splitlines()[-1]


@pytest.fixture
def broker(settings) -> Iterator[Any]:
    """The Celery broker's Redis, its `analysis` and `celery` queues emptied before and
    after the test (no worker takes them: the test reads or runs the messages)."""
    import redis

    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    client.delete("analysis", "celery")
    yield client
    client.delete("analysis", "celery")
