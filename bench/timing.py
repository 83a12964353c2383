"""Timing helpers the read benchmarks share: interleaved rounds and nearest-rank figures,
the raw driver's reads, a fresh site. Imported after django.setup() (it reads models)."""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from cassandra.concurrent import execute_concurrent_with_args

from sessions_app.domain.ledger import sites
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import cassandra_session, prepare


def pct(values: list[float], q: float) -> float:
    """The q-quantile of values (nearest rank, as the benchmarks report p95)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def interleaved(
    calls: dict[str, Callable[[], Any]], *, runs: int, warmup: int
) -> tuple[dict[str, float], dict[str, Any]]:
    """Run every call once a round, warmup + runs rounds; return each call's p50/p95 in
    ms over the runs ({"<name>_p50_ms": ..., "<name>_p95_ms": ...}) and its last result."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    last = {}
    for _ in range(warmup + runs):
        for name, call in calls.items():
            began = time.perf_counter()
            last[name] = call()
            times[name].append((time.perf_counter() - began) * 1000)
    kept = {name: values[warmup:] for name, values in times.items()}
    figures = {f"{n}_p50_ms": statistics.median(v) for n, v in kept.items()}
    figures.update({f"{n}_p95_ms": pct(v, 0.95) for n, v in kept.items()})
    return figures, last


def raw_rows(query: str, params: list[tuple[Any, ...]]) -> int:
    """The driver alone reading these partitions at once (a stored read's floor); rows."""
    results = execute_concurrent_with_args(cassandra_session(), prepare(query), params)
    return sum(len(list(r.result_or_exc)) for r in results)


def sizes(default_size: int, default_runs: int) -> tuple[int, int]:
    """[SIZE] [RUNS] from the command line."""
    size = int(sys.argv[1]) if len(sys.argv) > 1 else default_size
    return size, int(sys.argv[2]) if len(sys.argv) > 2 else default_runs


def fresh_site(prefix: str, days: int) -> tuple[Any, Any, Any]:
    """A new site for a run, today's midnight (UTC) and the first of `days` days before."""
    site = sites.site_create(name=f"{prefix}-{int(time.time())}", origins=[])
    today = timebuckets.floor(datetime.now(UTC), "day")
    return site, today, today - timedelta(days=days)
