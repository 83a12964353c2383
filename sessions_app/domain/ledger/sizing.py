"""The sizing formula (writes/s x bucket duration x bytes/row), verdicts, recommendations."""

from __future__ import annotations

import enum
from datetime import timedelta
from typing import NamedTuple

from sessions_app.foundation.core.timebuckets import Width, nominal_duration

KB = 1_000
MB = 1_000_000
GB = 1_000_000_000
TB = 1_000_000_000_000
FLOOR_BYTES = 1 * MB  # "Below 1MB: Partitions are too small (overhead dominates)"
TARGET_BYTES = 10 * MB  # "Target: 10MB - 100MB per partition"
CEILING_BYTES = 100 * MB  # "Above 100MB: Risk of timeout issues"
SERIOUS_BYTES = 1 * GB  # "Above 1GB: Serious problems guaranteed"

WIDTH_LABELS = {
    Width.TEN_MINUTES: "10 min",
    Width.HOUR: "hour",
    Width.DAY: "day",
    Width.WEEK: "week",
    Width.MONTH: "month",
}


def span_bytes(*, writes_per_second: float, row_bytes: float, span: timedelta) -> float:
    """Return the size of a partition written at a steady rate for `span` (the sizing formula)."""
    if not (writes_per_second >= 0 and row_bytes >= 0):  # also refuses NaN
        raise ValueError(
            f"writes_per_second={writes_per_second}, row_bytes={row_bytes}: "
            "rates and row sizes cannot be negative"
        )
    return writes_per_second * span.total_seconds() * row_bytes


def partition_bytes(*, writes_per_second: float, row_bytes: float, width: Width | str) -> float:
    """Return the expected size of one partition of the given bucket width."""
    return span_bytes(
        writes_per_second=writes_per_second, row_bytes=row_bytes, span=nominal_duration(width)
    )


def shards_for(
    *,
    writes_per_second: float,
    row_bytes: float,
    width: Width | str,
    budget_bytes: int = CEILING_BYTES,
) -> int:
    """Return how many shards keep each (bucket, shard) partition within the budget."""
    size = partition_bytes(writes_per_second=writes_per_second, row_bytes=row_bytes, width=width)
    return max(1, -(-int(size) // budget_bytes))


class Verdict(enum.Enum):
    """Seed 003's judgement of a partition size (its "Guidelines")."""

    TOO_SMALL = "too-small"
    ACCEPTABLE = "acceptable"
    TARGET = "target"
    RISK = "risk"
    SERIOUS = "serious"

    @property
    def mark(self) -> str:
        """Return the decision matrix's mark: ✓ for 1MB-100MB, ✗ above, nothing below 1MB."""
        return _VERDICT_MARKS[self]

    @property
    def text(self) -> str:
        """Return the sizing guide's sentence for this size."""
        return _VERDICT_TEXTS[self]

    @property
    def flag(self) -> str:
        """Return what the partition-size report flags: "above 100 MB", "below 1 MB" or ""."""
        if self in (Verdict.RISK, Verdict.SERIOUS):
            return "above 100 MB"
        return "below 1 MB" if self is Verdict.TOO_SMALL else ""


_VERDICT_MARKS = {
    Verdict.TOO_SMALL: "",
    Verdict.ACCEPTABLE: "✓",
    Verdict.TARGET: "✓",
    Verdict.RISK: "✗",
    Verdict.SERIOUS: "✗",
}

_VERDICT_TEXTS = {
    Verdict.TOO_SMALL: "Below 1MB: Partitions are too small (overhead dominates)",
    # The sizing guide has no sentence for 1-10MB; its matrix marks such cells ✓ (8.6 MB, 3.6 MB).
    Verdict.ACCEPTABLE: "Within limits (1MB - 100MB), below the 10MB - 100MB target",
    Verdict.TARGET: "Target: 10MB - 100MB per partition",
    Verdict.RISK: "Above 100MB: Risk of timeout issues",
    Verdict.SERIOUS: "Above 1GB: Serious problems guaranteed",
}


def verdict(size_bytes: float) -> Verdict:
    """Return the sizing guide's verdict on a partition of size_bytes (1MB and 100MB are inside)."""
    if not size_bytes >= 0:
        raise ValueError(f"partition size {size_bytes} cannot be negative")
    if size_bytes > SERIOUS_BYTES:
        return Verdict.SERIOUS
    if size_bytes > CEILING_BYTES:
        return Verdict.RISK
    if size_bytes >= TARGET_BYTES:
        return Verdict.TARGET
    if size_bytes >= FLOOR_BYTES:
        return Verdict.ACCEPTABLE
    return Verdict.TOO_SMALL


def format_size(size_bytes: float) -> str:
    """Return a size as the sizing guide writes it: two significant digits ("8.6 MB")."""
    if not 0 <= size_bytes < float("inf"):
        raise ValueError(f"cannot format a size of {size_bytes} bytes")
    if size_bytes == 0:
        return "0 B"
    rounded = float(f"{size_bytes:.2g}")  # round first: 999,999 B is "1 MB", not "1000 KB"
    for unit, scale in (("TB", TB), ("GB", GB), ("MB", MB), ("KB", KB)):
        if rounded >= scale:
            return f"{_two_digits(rounded / scale)} {unit}"
    return f"{_two_digits(rounded)} B"


def _two_digits(value: float) -> str:
    if value < 1:
        return f"{value:.2g}"
    text = f"{value:.1f}" if value < 10 else f"{value:.0f}"
    return text.removesuffix(".0")


def partition_sizes(
    *, writes_per_second: float, row_bytes: float
) -> list[tuple[Width, float, Verdict]]:
    """Return (width, partition size, verdict) for every width, finest first."""
    sizes = []
    for width in Width:
        size = partition_bytes(
            writes_per_second=writes_per_second, row_bytes=row_bytes, width=width
        )
        sizes.append((width, size, verdict(size)))
    return sizes


class Recommendation(NamedTuple):
    """The bucket width the sizing guide leads to, the shards it needs and why."""

    width: Width
    shards: int
    size_bytes: float  # one (bucket, shard) partition
    verdict: Verdict
    reason: str


def recommend_width(*, writes_per_second: float, row_bytes: float) -> Recommendation:
    """Return the bucket width for a write rate and row size, following the sizing guide.

    A day is the sizing guide's "default starting point" and stays while its partitions
    are within 1MB-100MB (a ✓ in the decision matrix). Above 100MB: the coarsest
    finer width that fits (hour, then 10 minutes), else 10 minutes split into
    shards (a shard suffix against hot partitions). Below 1MB: the finest coarser width that
    reaches 1MB (week, then month), else a month, which at least keeps the
    number of tiny partitions down.
    """
    sizes = {
        width: size
        for width, size, _ in partition_sizes(
            writes_per_second=writes_per_second, row_bytes=row_bytes
        )
    }
    day = sizes[Width.DAY]

    def pick(width: Width, reason: str, shards: int = 1) -> Recommendation:
        size = sizes[width] / shards
        return Recommendation(width, shards, size, verdict(size), reason)

    if FLOOR_BYTES <= day <= CEILING_BYTES:
        return pick(
            Width.DAY,
            f"a day ({format_size(day)}) is within 1MB - 100MB: "
            "the sizing guide's default starting point",
        )
    if day > CEILING_BYTES:
        for width in (Width.HOUR, Width.TEN_MINUTES):
            if sizes[width] <= CEILING_BYTES:
                return pick(
                    width,
                    f"a day would be {format_size(day)} (above 100MB); "
                    f"{WIDTH_LABELS[width]} partitions are {format_size(sizes[width])}",
                )
        shards = shards_for(
            writes_per_second=writes_per_second, row_bytes=row_bytes, width=Width.TEN_MINUTES
        )
        return pick(
            Width.TEN_MINUTES,
            f"even 10-min partitions would be {format_size(sizes[Width.TEN_MINUTES])} "
            f"(above 100MB): split each into {shards} shards",
            shards,
        )
    for width in (Width.WEEK, Width.MONTH):
        if sizes[width] >= FLOOR_BYTES:
            return pick(
                width,
                f"a day would be {format_size(day)} (below 1MB); "
                f"{WIDTH_LABELS[width]} partitions are {format_size(sizes[width])}",
            )
    return pick(
        Width.MONTH,
        f"below 1MB at every width (a month is {format_size(sizes[Width.MONTH])}): "
        "the coarsest width keeps the number of partitions down",
    )
