"""`make test`'s own report (ops/stack.py): how the cores' time went while pytest ran."""

from __future__ import annotations

from pathlib import Path

from ops.stack import cpu_shares, cpu_times, reference_seconds


def test_the_shares_of_busy_idle_and_stolen_time(tmp_path: Path):
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3\n")
    before = cpu_times(stat)
    assert before == [100, 0, 50, 800, 50, 0, 0, 0]
    stat.write_text("cpu  700 0 150 1000 100 0 0 250 0 0\n")
    # 1,200 ticks: 700 busy (600 user, 100 system), 250 idle or waiting, 250 stolen.
    assert cpu_shares(before, cpu_times(stat)) == "CPU busy 58%, idle 21%, stolen by the host 21%"


def test_no_reading_says_so(tmp_path: Path):
    assert cpu_times(tmp_path / "missing") == []
    assert cpu_shares([], []) == "CPU shares unknown"


def test_the_reference_loop_is_timed_and_grows_with_its_work():
    short, long = reference_seconds(20_000), reference_seconds(2_000_000)
    assert 0 < short < long  # a hundred times the loops: never less time
