"""bench/tail.py reads gunicorn's access log, the JVM's gc log and Redis's command counts
into a table of where a paced request's time went; these tests feed it known lines."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from types import SimpleNamespace

import pytest
from gunicorn.config import Config
from gunicorn.glogging import Logger, SafeAtoms

from bench import run, tail


def _access_line(micros: int, timing: str) -> str:
    """The line gunicorn writes with bench.run.ACCESS_FORMAT for one answer."""
    config = Config()
    config.set("accesslog", "-")
    config.set("access_log_format", run.ACCESS_FORMAT)
    headers = [("Content-Type", "application/json")]
    if timing:
        headers.append(("Server-Timing", timing))
    response = SimpleNamespace(status="200 OK", headers=headers, sent=10)
    request = SimpleNamespace(headers=[])
    environ = {"REQUEST_METHOD": "POST", "RAW_URI": "/collect", "SERVER_PROTOCOL": "HTTP/1.1"}
    atoms = Logger(config).atoms(response, request, environ, timedelta(microseconds=micros))
    return config.access_log_format % SafeAtoms(atoms)  # as Logger.access formats it


def test_a_logged_request_is_read_back_with_its_steps():
    timing = "validate;dur=1.50, log;dur=4.25, gc;dur=0.10, total;dur=7.00"
    lines = [_access_line(9_000, timing), _access_line(2_000, ""), "garbage"]
    [served] = tail.parse_access(lines)
    assert served.worker_ms == 9.0
    assert served.steps == {"validate": 1.5, "log": 4.25, "gc": 0.1, "total": 7.0}


def test_stages_split_the_worker_time_without_losing_any():
    served = [
        tail.Served(10.0, {"validate": 2.0, "log": 3.0, "gc": 0.5, "total": 8.0}),
        tail.Served(30.0, {"validate": 9.0, "log": 11.0, "gc": 0.0, "total": 25.0}),
    ]
    stages = dict(tail.stages(served))
    assert stages["step validate"] == [2.0, 9.0]
    assert stages["the view outside the steps (parse, site, rate limits, answer)"] == [3.0, 5.0]
    assert stages["gunicorn and Django around the view"] == [2.0, 5.0]
    parts = [v for name, v in stages.items() if "garbage" not in name]
    assert [sum(column) for column in zip(*parts, strict=True)] == [10.0, 30.0]


@pytest.mark.parametrize(("q", "expected"), [(50, 50.0), (99, 99.0), (100, 100.0), (1, 1.0)])
def test_percentile_is_the_nearest_rank(q, expected):
    assert tail.percentile([float(v) for v in range(100, 0, -1)], q) == expected


def test_gc_pauses_are_read_from_the_jvm_log():
    lines = [
        "[2026-12-07T13:11:32.519+0000][0.008s] Using G1",
        "[2026-12-07T13:11:48.173+0000][15.663s] GC(11) Pause Young (Normal) "
        "(G1 Evacuation Pause) 285M->121M(1024M) 132.127ms",
        "[2026-12-07T13:12:01.000+0000][28.1s] GC(12) Pause Remark 300M->290M(1024M) 4.5ms",
        "[2026-12-07T13:12:02.000+0000][29.1s] GC(12) Concurrent Mark Cycle 80.211ms",
    ]
    assert tail.gc_pauses(lines) == [132.127, 4.5]


def test_redis_calls_are_the_difference_by_command():
    before = {"cmdstat_get": {"calls": 10}, "cmdstat_evalsha": {"calls": 4}}
    after = {
        "cmdstat_get": {"calls": 25},
        "cmdstat_evalsha": {"calls": 4},
        "cmdstat_rpush": {"calls": 3},
    }
    assert tail.redis_calls(before, after) == Counter({"get": 15, "rpush": 3})


def test_the_table_shows_the_wait_for_a_worker_and_each_steps_share_of_the_tail():
    served = [
        tail.Served(10.0, {"validate": 2.0, "log": 3.0, "gc": 0.0, "total": 8.0}) for _ in range(99)
    ]
    served.append(tail.Served(100.0, {"validate": 10.0, "log": 80.0, "gc": 1.0, "total": 95.0}))
    result = {
        "events": 5,
        "served": served,
        "wrk": {"requests_per_second": 80, "share_of_peak": 0.8, "p50_ms": 12.0, "p99_ms": 40.0},
        "peak_rps": 100.0,
        "gc_pauses": [20.0, 40.0],
        "redis": Counter({"evalsha": 200, "get": 100}),
        "cpu": {"web workers": 7.5, "applier": 4.0},
    }
    table = "\n".join(tail.render_pass(result))
    assert "| wrk: sent → answered | 12.0 | 40.0 | — |" in table
    # p50: 12 - 10 ms; p99 (nearest rank of 100 values: the 99th, 10 ms): 40 - 10.
    assert "| waiting for a free worker (wrk minus worker, at each percentile) | 2.0 | 30.0 |" in (
        table
    )
    assert "| step log | 3.0 | 3.0 | 80% |" in table  # the slowest request: 80 of its 100 ms
    assert "2 pauses, 60 ms in all, longest 40.0 ms" in table
    assert "Redis commands per request: 3.0 (evalsha 2.00, get 1.00)" in table
    assert "| | 7.5 | 4.0 |" in table


def test_the_ab_row_compares_the_medians():
    rows = tail.render_ab(30, {0: [150.0, 170.0, 160.0], 10: [120.0, 100.0, 128.0]})
    assert rows[-1] == "| 150 / 170 / 160 vs 120 / 100 / 128 | 160.0 | 120.0 | 0.75 |"
