"""The dashboard's KPIs: a period's counters, the rates derived from them, and the cards
that show each against the comparison period (no I/O).

A visit is a human session, counted in the hour it started; a bounce is a visit with at
most one page view; the conversion rate is the unique visitors who reached a goal over
unique visitors (the goal table's rate: features/analysis/conversions.py counts them from
the goal counts), shown only on a site with goals.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Kpis:
    """A period's KPI counters (what the buckets' aggregates add up to)."""

    visitors: int = 0
    visits: int = 0
    pageviews: int = 0
    bounces: int = 0
    duration_seconds_sum: float = 0.0
    duration_median: float | None = None
    conversions: int = 0  # converted visits
    converting_visitors: int | None = None  # who reached a goal (None: not counted)

    @property
    def views_per_visit(self) -> float | None:
        return self.pageviews / self.visits if self.visits else None

    @property
    def bounce_rate(self) -> float | None:
        return self.bounces / self.visits if self.visits else None

    @property
    def duration_mean(self) -> float | None:
        return self.duration_seconds_sum / self.visits if self.visits else None

    @property
    def conversion_rate(self) -> float | None:
        if self.converting_visitors is None or not self.visitors:
            return None
        return min(1.0, self.converting_visitors / self.visitors)


# The visit-duration sketch: a visit of d whole seconds counts in slot 0 (d = 0) or
# 1 + floor(log(d) / log(GROWTH)); slots add up across buckets, and a slot's value is
# its middle, within (GROWTH - 1) / 2 = 2.5% of any duration in it (slots
# holding one whole second are exact: every duration under 21 s).
GROWTH = 1.05


def duration_slot(seconds: int) -> int:
    """Return the sketch slot of a visit duration in whole seconds."""
    return 0 if seconds <= 0 else 1 + math.floor(math.log(seconds) / math.log(GROWTH) + 1e-9)


def slot_value(slot: int) -> float:
    """Return the duration a slot stands for: the whole second it holds, else its middle."""
    if slot == 0:
        return 0.0
    low, high = GROWTH ** (slot - 1), GROWTH**slot
    whole = range(math.ceil(low - 1e-9), math.ceil(high - 1e-9))
    return float(whole[0]) if len(whole) == 1 else (low + high) / 2


def slots_merge(parts: Iterable[Mapping[int, int]]) -> dict[int, int]:
    """Add up duration sketches."""
    merged: dict[int, int] = {}
    for part in parts:
        for slot, n in part.items():
            merged[slot] = merged.get(slot, 0) + n
    return merged


def slots_median(slots: Mapping[int, int]) -> float | None:
    """Return the median duration of a sketch (the lower median: the visit at rank
    ceil(n / 2) by duration), None when it holds no visit."""
    total = sum(slots.values())
    if not total:
        return None
    rank = (total + 1) // 2
    seen = 0
    for slot in sorted(slots):
        seen += slots[slot]
        if seen >= rank:
            return slot_value(slot)
    return None  # unreachable: the ranks add up to total


# The charted and carded KPIs, in card order: key -> (label, format). A key is a Kpis
# field or property; "format" tells charts.js and the cards how to print a value.
METRICS: dict[str, tuple[str, str]] = {
    "visitors": ("Unique visitors", "count"),
    "visits": ("Visits", "count"),
    "pageviews": ("Pageviews", "count"),
    "views_per_visit": ("Views per visit", "ratio"),
    "bounce_rate": ("Bounce rate", "percent"),
    "duration_median": ("Visit duration", "seconds"),
    "conversion_rate": ("Conversion rate", "percent"),
}
DEFAULT_METRIC = "visitors"
# A fall is good news for these (everything else: a rise is).
LOWER_IS_BETTER = frozenset({"bounce_rate"})


CONVERSION = "conversion_rate"
# The KPIs the main chart draws, as its data island lists them: all but the conversion
# rate, whose card leads to the goal table (each goal's numbers; a goal's page has its days).
CHARTED: dict[str, dict[str, str]] = {
    key: {"label": label, "format": fmt}
    for key, (label, fmt) in METRICS.items()
    if key != CONVERSION
}


def kpi_value(kpis: Kpis, key: str) -> float | None:
    """Return one KPI of a period by its METRICS key."""
    value = getattr(kpis, key)
    return None if value is None else float(value)


def metric_param(value: str | None) -> str:
    """Return the charted KPI a `metric` URL parameter names (the default when unknown)."""
    return value if value in CHARTED else DEFAULT_METRIC


def value_text(value: float | None, fmt: str) -> str:
    """Print a KPI value the way its card shows it."""
    if value is None:
        return "—"
    if fmt == "count":
        return f"{round(value):,}"
    if fmt == "percent":
        return f"{value * 100:.1f}%"
    if fmt == "ratio":
        return f"{value:.2f}"
    seconds = round(value)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m {seconds % 60:02d}s"
    return f"{seconds // 3600}h {seconds % 3600 // 60:02d}m"


NO_EARLIER_DATA = "no earlier data"  # the comparison period had no visits
NO_DATA = "no data"  # this period has none to take a rate or a duration of


def change_text(current: float | None, previous: float | None, fmt: str) -> str:
    """Print a KPI's change against the comparison: percentage points for rates, else
    relative ("new" when the comparison was zero)."""
    if current is None or previous is None:
        return ""
    if fmt == "percent":
        points = (current - previous) * 100
        return f"{points:+.1f} pp"
    if previous == 0:
        return "new" if current else "0%"
    return f"{(current - previous) / previous * 100:+.0f}%"


def kpi_cards(
    current: Kpis, previous: Kpis | None, *, conversion: str | None
) -> list[dict[str, Any]]:
    """Return one card per KPI: key, label, value, its text, the change against `previous`
    (text, direction "up"/"down"/None, good True/False/None), the mean duration on the
    duration card, and which goals the conversion card counts (no such card on a site
    without goals: `conversion` None)."""
    cards = []
    earlier_empty = previous is not None and not previous.visits
    for key, (label, fmt) in METRICS.items():
        if key == CONVERSION and conversion is None:
            continue
        value = kpi_value(current, key)
        before = kpi_value(previous, key) if previous is not None else None
        direction = None
        if value is not None and before is not None and value != before and not earlier_empty:
            direction = "up" if value > before else "down"
        good = None if direction is None else (direction == "down") == (key in LOWER_IS_BETTER)
        if previous is None:
            change = ""
        elif earlier_empty:
            change = NO_EARLIER_DATA  # not "new" nor "no change": nothing to compare with
        elif value is None or before is None:
            change = NO_DATA  # a rate or duration of a period without visits
        else:
            change = change_text(value, before, fmt)
        compared = previous is not None and not earlier_empty and None not in (value, before)
        card = {
            "key": key,
            "label": label,
            "format": fmt,
            "value": value,
            "value_text": value_text(value, fmt),
            "previous": before,
            "previous_text": value_text(before, fmt) if previous is not None else "",
            "change_text": change,
            "compared": compared,  # a change was worked out (not "no data")
            "direction": direction,
            "good": good,
        }
        if key == "duration_median":
            card["mean_text"] = value_text(current.duration_mean, "seconds")
        if key == CONVERSION:
            card["goal"] = conversion
        cards.append(card)
    return cards
