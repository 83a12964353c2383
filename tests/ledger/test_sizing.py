"""Sizing math against the sizing guide: its decision matrix cell by cell, verdicts, advice."""

from __future__ import annotations

from datetime import timedelta

import pytest

from sessions_app.domain.ledger import sizing
from sessions_app.domain.ledger.sizing import Verdict
from sessions_app.foundation.core.timebuckets import Width

# Seed 003's "Bucket Size Decision Matrix", copied verbatim.
SEED_003_MATRIX = """
| Write Rate | Row Size | Daily Bucket | Hourly Bucket | 10-Min Bucket |
|------------|----------|--------------|---------------|---------------|
| 1/sec | 100 B | 8.6 MB ✓ | 360 KB | 60 KB |
| 10/sec | 100 B | 86 MB ✓ | 3.6 MB ✓ | 600 KB |
| 100/sec | 100 B | 860 MB ✗ | 36 MB ✓ | 6 MB ✓ |
| 1000/sec | 100 B | 8.6 GB ✗ | 360 MB ✗ | 60 MB ✓ |
| 10000/sec | 100 B | 86 GB ✗ | 3.6 GB ✗ | 600 MB ✗ |
| 1/sec | 1 KB | 86 MB ✓ | 3.6 MB ✓ | 600 KB |
| 10/sec | 1 KB | 860 MB ✗ | 36 MB ✓ | 6 MB ✓ |
| 100/sec | 1 KB | 8.6 GB ✗ | 360 MB ✗ | 60 MB ✓ |
"""
COLUMNS = (Width.DAY, Width.HOUR, Width.TEN_MINUTES)
ROW_SIZES = {"100 B": 100, "1 KB": 1000}


def seed_cells() -> list[tuple[float, int, Width, str, str]]:
    """Return (writes/s, row bytes, width, size text, mark) for every cell of the matrix."""
    cells = []
    for line in SEED_003_MATRIX.strip().splitlines()[2:]:
        rate, row, *sizes = (part.strip() for part in line.strip("|").split("|"))
        for width, cell in zip(COLUMNS, sizes, strict=True):
            mark = cell[-1] if cell.endswith(("✓", "✗")) else ""
            size = cell.removesuffix(mark).strip()
            cells.append((float(rate.removesuffix("/sec")), ROW_SIZES[row], width, size, mark))
    return cells


def test_the_matrix_has_every_cell_of_the_seed() -> None:
    cells = seed_cells()
    assert len(cells) == 24
    assert cells[0] == (1.0, 100, Width.DAY, "8.6 MB", "✓")
    assert cells[-1] == (100.0, 1000, Width.TEN_MINUTES, "60 MB", "✓")


@pytest.mark.parametrize(("rate", "row_bytes", "width", "size", "mark"), seed_cells())
def test_seed_003_decision_matrix_cell(
    rate: float, row_bytes: int, width: Width, size: str, mark: str
) -> None:
    computed = sizing.partition_bytes(writes_per_second=rate, row_bytes=row_bytes, width=width)
    assert sizing.format_size(computed) == size
    assert sizing.verdict(computed).mark == mark


def test_partition_sizes_reproduce_the_matrix_rows() -> None:
    by_row: dict[tuple[float, int], dict[Width, tuple[str, str]]] = {}
    for rate, row_bytes, width, size, mark in seed_cells():
        by_row.setdefault((rate, row_bytes), {})[width] = (size, mark)
    for (rate, row_bytes), expected in by_row.items():
        table = sizing.partition_sizes(writes_per_second=rate, row_bytes=row_bytes)
        assert [w for w, _, _ in table] == [
            Width.TEN_MINUTES,
            Width.HOUR,
            Width.DAY,
            Width.WEEK,
            Width.MONTH,
        ]
        got = {w: (sizing.format_size(s), v.mark) for w, s, v in table if w in expected}
        assert got == expected


def test_seed_worked_examples() -> None:
    # "86,400 rows x ~100 bytes = 8.6 MB" (a daily bucket at one reading a second)
    assert sizing.partition_bytes(writes_per_second=1, row_bytes=100, width=Width.DAY) == 8.64e6
    # Mistake 1: "At 100 events/second: 259 million events/month = 25.9 GB partition"
    month = sizing.partition_bytes(writes_per_second=100, row_bytes=100, width=Width.MONTH)
    assert month == 25.92e9 and sizing.verdict(month) is Verdict.SERIOUS


@pytest.mark.parametrize(
    ("size", "expected"),
    [
        (0, Verdict.TOO_SMALL),
        (999_999, Verdict.TOO_SMALL),
        (1_000_000, Verdict.ACCEPTABLE),  # "Below 1MB" is too small; 1MB itself is not
        (9_999_999, Verdict.ACCEPTABLE),
        (10_000_000, Verdict.TARGET),  # "Target: 10MB - 100MB", both ends included
        (100_000_000, Verdict.TARGET),
        (100_000_001, Verdict.RISK),  # "Above 100MB"
        (1_000_000_000, Verdict.RISK),
        (1_000_000_001, Verdict.SERIOUS),  # "Above 1GB"
    ],
)
def test_verdict_thresholds(size: float, expected: Verdict) -> None:
    assert sizing.verdict(size) is expected


def test_verdicts_use_the_seed_wording_and_flags() -> None:
    assert Verdict.TOO_SMALL.text == "Below 1MB: Partitions are too small (overhead dominates)"
    assert Verdict.TARGET.text == "Target: 10MB - 100MB per partition"
    assert Verdict.RISK.text == "Above 100MB: Risk of timeout issues"
    assert Verdict.SERIOUS.text == "Above 1GB: Serious problems guaranteed"
    assert [v.flag for v in Verdict] == ["below 1 MB", "", "", "above 100 MB", "above 100 MB"]
    assert [v.mark for v in Verdict] == ["", "✓", "✓", "✗", "✗"]


def test_negative_or_nan_sizes_are_refused() -> None:
    with pytest.raises(ValueError, match="cannot be negative"):
        sizing.verdict(-1)
    with pytest.raises(ValueError, match="cannot be negative"):
        sizing.verdict(float("nan"))
    with pytest.raises(ValueError, match="cannot be negative"):
        sizing.span_bytes(writes_per_second=-1, row_bytes=100, span=timedelta(hours=1))
    with pytest.raises(ValueError, match="cannot format"):
        sizing.format_size(float("inf"))


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (0, "0 B"),
        (60, "60 B"),
        (0.6, "0.6 B"),
        (1_500, "1.5 KB"),
        (999_999, "1 MB"),  # rounded before the unit is chosen
        (43_200_000, "43 MB"),
        (2.6e12, "2.6 TB"),
    ],
)
def test_format_size(size: float, text: str) -> None:
    assert sizing.format_size(size) == text


@pytest.mark.parametrize(
    ("rate", "row_bytes", "width", "shards"),
    [
        # Each row of the guide's matrix: the coarsest of its ✓ cells (day, hour, 10 min).
        (1, 100, Width.DAY, 1),
        (10, 100, Width.DAY, 1),
        (100, 100, Width.HOUR, 1),
        (1000, 100, Width.TEN_MINUTES, 1),
        (10000, 100, Width.TEN_MINUTES, 6),  # no ✓ at all: 600 MB in 6 shards of 100 MB
        (1, 1000, Width.DAY, 1),
        (10, 1000, Width.HOUR, 1),
        (100, 1000, Width.TEN_MINUTES, 1),
    ],
)
def test_recommendation_for_each_matrix_row(
    rate: float, row_bytes: int, width: Width, shards: int
) -> None:
    chosen = sizing.recommend_width(writes_per_second=rate, row_bytes=row_bytes)
    assert (chosen.width, chosen.shards) == (width, shards)
    assert chosen.verdict.mark == "✓"
    assert chosen.size_bytes <= sizing.CEILING_BYTES


def test_low_volume_moves_to_a_coarser_width_that_reaches_1mb() -> None:
    # 0.1/s x 100 B: a day is 864 KB (too small), a week 6 MB.
    chosen = sizing.recommend_width(writes_per_second=0.1, row_bytes=100)
    assert chosen.width is Width.WEEK and chosen.verdict is Verdict.ACCEPTABLE
    assert "below 1MB" in chosen.reason and "6 MB" in chosen.reason
    # 0.03/s x 100 B: a day is 259 KB, a week 1.8 MB.
    assert sizing.recommend_width(writes_per_second=0.03, row_bytes=100).width is Width.WEEK
    # 0.01/s x 100 B: a week is 605 KB, a month 2.6 MB.
    assert sizing.recommend_width(writes_per_second=0.01, row_bytes=100).width is Width.MONTH


def test_tiny_volume_stays_below_1mb_at_a_month() -> None:
    chosen = sizing.recommend_width(writes_per_second=0.001, row_bytes=100)
    assert chosen.width is Width.MONTH and chosen.verdict is Verdict.TOO_SMALL
    assert "below 1MB at every width" in chosen.reason


def test_shards_for_uses_the_100mb_ceiling() -> None:
    assert sizing.shards_for(writes_per_second=2000, row_bytes=400, width=Width.HOUR) == 29
    assert sizing.shards_for(writes_per_second=10, row_bytes=400, width=Width.HOUR) == 1
