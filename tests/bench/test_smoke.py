"""Every read benchmark `make bench` runs, run small: it ends, prints its figures, and the
bench table renders them (a refactor that breaks one shows here, not 35 minutes into a
`make bench`). The sealing and cohort benchmarks have their own tests
(test_baseline.py); the ingest rows need wrk and gunicorn, and their table is
test_render.py's."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bench import run
from tests.support.bench import bench_figures

pytestmark = [
    pytest.mark.heavy,
    # The modules write their SQL rows (a site, a user) into the test's SQLite file,
    # where a live server reads them.
    pytest.mark.django_db(transaction=True, databases=["default", "cassandra"]),
]

URL = "{live_server}"
# The key of bench/run.py's reads each module's figures go to (None: they are merged in),
# the module and its arguments: a few rows a day and a run or two of each figure.
SMALL = {
    "reads": (None, "bench.reads", URL, "5"),
    "explorer": ("explorer", "bench.explorer", "400", "2", URL),
    "paths": ("paths", "bench.paths", "20", "2"),
    "heatmaps": ("heatmaps", "bench.heatmaps", "200", "2"),
    "vitals": ("vitals", "bench.vitals", "60", "2"),
    "funnels": ("funnels", "bench.funnels", "20", "2"),
    "directory": ("directory", "bench.directory", "200", "2"),
    "dashboard": ("dashboard", "bench.dashboard", "1", "2"),
    "goals": ("goals", "bench.goals", "10", "2", "200"),
    "replay": ("replay", "bench.replay", "3", "2"),
    "replay_player": ("replay_player", "bench.replay_player", URL, "1"),
}
ENV = {
    "BENCH_SMOKE": "1",  # a few days of data, a warm-up of one round (bench/__init__.py)
    # bench.reads waits this long before timing the materialized timeline; the live
    # server reads the same (settings below).
    "TIMELINE_MATERIALIZE_MARGIN_SECONDS": "1",
}


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.e2e) if n == "replay_player" else n for n in SMALL],
)
def test_every_read_benchmark_runs_small_and_its_rows_render(name, request, settings):
    key, module, *args = SMALL[name]
    if URL in args:
        settings.TIMELINE_MATERIALIZE_MARGIN = timedelta(seconds=1)
        url = request.getfixturevalue("live_server").url
        args = [url if a == URL else a for a in args]
    figures = bench_figures(module, *args, timeout=300, env=ENV)
    assert isinstance(figures, dict) and figures

    reads = figures if key is None else {key: figures}
    empty = set(run.render([], {}, workers=4, threads=1, seconds=20).splitlines())
    table = run.render([], reads, workers=4, threads=1, seconds=20).splitlines()
    added = [line for line in table[1:] if line not in empty]
    assert added, f"no row of the table shows {name}'s figures"
    assert all(line.startswith("| ") and line.endswith("|") for line in added), added
    assert not any("nan" in line.split("|")[2] for line in added), added
