"""Running a benchmark module small, as `make bench` runs it, against the test keyspace."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from django.conf import settings
from django.db import connections

from tests.support.repo import ROOT


def bench_figures(module: str, *args: str, timeout: int, env: dict[str, str] | None = None) -> Any:
    """Run `python -m <module> <args>` (bench/run.py's `_step`) on the test keyspace, SQLite
    file and Redis database; return the JSON it prints last, or fail with its stderr."""
    run_env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "clickstream.settings.test",
        "CASSANDRA_KEYSPACE": connections["cassandra"].settings_dict["NAME"],
        "REDIS_URL": settings.REDIS_URL,
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "CELERY_RESULT_BACKEND": settings.CELERY_RESULT_BACKEND,
        # Its data set-up writes each batch before going on, as under `make bench`.
        "APPLY_QUEUE": "false",
        # One poll of the node's background work before each figure, not a wait for quiet.
        "BENCH_SETTLE_TIMEOUT": "1",
        **(env or {}),
    }
    result = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        env=run_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, f"{module} failed:\n{result.stderr[-3000:]}"
    return json.loads(result.stdout.strip().splitlines()[-1])
