"""The benchmark's raw-driver baseline still writes what the collector writes.

`bench/raw_ingest.py` binds the collector's own statements by position; when a statement
gains a marker (a TTL, a column) the baseline must follow, or `make bench` dies mid-run.
Here it writes for a moment into the test keyspace and its rows land, with the TTLs the
collector binds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime

import pytest
from django.conf import settings
from django.db import connections

from bench import raw_ingest
from sessions_app.foundation.core.cql import cassandra_session
from tests.support.bench import bench_figures
from tests.support.repo import ROOT

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "cassandra"])


def _partitions(started: datetime, ended: datetime, seconds: int) -> set[datetime]:
    return {raw_ingest._floor(started, seconds), raw_ingest._floor(ended, seconds)}


def test_raw_baseline_binds_the_collector_statements_and_writes_its_rows(site):
    keyspace = connections["cassandra"].settings_dict["NAME"]
    started = datetime.now(UTC)
    result = raw_ingest.run(keyspace, str(site.id), 5, 0.3, seed=7)
    ended = datetime.now(UTC)
    assert result["events"] >= raw_ingest.IN_FLIGHT * 5
    batches = result["events"] // 5

    site_rows = sum(
        cassandra_session()
        .execute(
            f"SELECT COUNT(*) AS n FROM {keyspace}.site_events_by_bucket "
            "WHERE site_id = %s AND bucket = %s AND shard = 0",
            (site.id, hour),
        )
        .one()["n"]
        for hour in _partitions(started, ended, 3600)
    )
    assert site_rows == result["events"]
    log = [
        row
        for minute in _partitions(started, ended, 600)
        for shard in range(4)
        for row in cassandra_session().execute(
            f"SELECT applied, TTL(applied) AS ttl, TTL(payload) AS payload_ttl "
            f"FROM {keyspace}.transaction_log WHERE site_id = %s AND minute = %s AND shard = %s",
            (site.id, minute, shard),
        )
    ]
    assert len(log) == batches
    assert all(r["applied"] for r in log)
    assert all(0 < r["ttl"] <= raw_ingest.LOG_TTL and r["payload_ttl"] > 0 for r in log)


def test_the_baseline_the_writer_and_the_tables_import_without_django_settings():
    """make bench runs the baseline in fresh processes that never configure Django."""
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    code = (
        "import bench.raw_ingest, sessions_app.foundation.core.eventdoc, "
        "sessions_app.foundation.tables.registry"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.slow
def test_the_sealing_benchmark_runs_and_checks_its_own_counts():
    """`bench/sealing.py` asserts the seal read every row it wrote and the rolling cover
    counts what the hours count; run it small (a login day every two weeks: every month
    of the year still has two and is sealed and read as a month, 52 logins instead of
    732; a login day a week took twice as long and proved nothing more)."""
    figures = bench_figures("bench.sealing", "2000", "2", "14", timeout=300)
    assert figures["seal"]["events"] == 2000
    assert figures["rolling"]["cover_rows"] < figures["rolling"]["naive_rows"]


@pytest.mark.heavy
def test_the_cohorts_benchmark_builds_the_sets_the_rollups_wrote_from_the_raw_rows():
    """`bench/cohorts.py` asserts its cold triangle (each day's sets counted from the raw
    rows: usersets.rows_sets, numbered, as bitmaps) equals the warm one read from the
    sets it wrote from its own record of who was active; run it small."""
    figures = bench_figures("bench.cohorts", "300", "2", timeout=600)
    assert figures["users"] == 300 and figures["raw_rows"] >= 300
    assert len(figures["cohort_sizes"]) == 12 and sum(figures["cohort_sizes"]) > 0


def test_the_bench_reads_the_applier_queue_from_a_process_without_django():
    """bench/run.py's parent process has no Django settings of its own: reading the
    applier queue (which imports modules that import the models) must not need them."""
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    code = (
        "from bench import run\n"
        f"print(run._queue({{**run._env(), 'REDIS_URL': {settings.REDIS_URL!r}}}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.replace("'", '"')).keys() == {"queued", "inline"}
