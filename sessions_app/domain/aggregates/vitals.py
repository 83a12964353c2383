"""Core Web Vitals: what a `$vitals` event carries, how a bucket counts it, and the
quantile sketch that answers p75 over any range (no I/O; docs/vitals.md).

The tracker's vitals script (static/sessions_app/vitals.js, Google's `web-vitals`
attribution build) sends one custom event named `$vitals` per page view when the page
is hidden (or left by an SPA navigation), its props the metrics measured so far
({"pageview", "lcp", "inp", "cls", "fcp", "ttfb", "lcp_el", "inp_el", "cls_el"}); the
collector checks them (`vitals_problem`) and ingest adds the visitor's device, browser
and country to the event's layout (`VITALS_LAYOUT`), so a seal counts them from the raw
rows or the per-batch tallies alike.

A bucket keeps, per (page, device, country, browser) and at two coarser levels (each
page; the whole site), for every metric: a DDSketch-style log-bucket sketch (a value v
in slot ceil(log(v) / log(GAMMA)), read back as the slot's middle 2·GAMMA^i / (GAMMA +
1): within ALPHA = 1 % of every value in the slot, so any quantile read from merged
sketches is within 1 % of the exact one), the exact good / needs improvement / poor
counts by Google's thresholds, and the elements that caused it (a bounded top list).
Everything adds up across tallies and buckets.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson

from sessions_app.foundation.core import eventnames
from sessions_app.foundation.core.pagepaths import page_path

NAME = eventnames.VITALS  # the custom event's name


@dataclass(frozen=True)
class Metric:
    name: str
    title: str
    unit: str  # "ms" or "" (CLS: a score)
    good: float  # at most this: good (Google's thresholds, web.dev/articles/vitals)
    poor: float  # above this: poor; between: needs improvement
    largest: float  # a value above this is refused by the collector


METRICS: tuple[Metric, ...] = (
    Metric("lcp", "Largest Contentful Paint", "ms", 2500, 4000, 600_000),
    Metric("inp", "Interaction to Next Paint", "ms", 200, 500, 600_000),
    Metric("cls", "Cumulative Layout Shift", "", 0.1, 0.25, 100),
    Metric("fcp", "First Contentful Paint", "ms", 1800, 3000, 600_000),
    Metric("ttfb", "Time to First Byte", "ms", 800, 1800, 600_000),
)
BY_NAME = {m.name: m for m in METRICS}
ELEMENT_OF = {"lcp": "lcp_el", "inp": "inp_el", "cls": "cls_el"}  # metric: its element's prop
FIELDS = ("pageview", *BY_NAME, *ELEMENT_OF.values())
MAX_ELEMENT = 512  # characters of an element's selector
MAX_VIEW_ID = 64
_CONTROL = re.compile(r"[\x00-\x1f]")

# --- the sketch -------------------------------------------------------------------------
ALPHA = 0.01  # relative accuracy of every quantile
GAMMA = (1 + ALPHA) / (1 - ALPHA)
_LOG_GAMMA = math.log(GAMMA)
SMALLEST = 1e-6  # values at or below are counted as 0 (exactly): CLS 0 is common
ZERO = -(2**15)  # the slot of 0

Sketch = Counter[int]  # slot: values


def slot(value: float) -> int:
    """The sketch slot of a value (>= 0)."""
    if value <= SMALLEST:
        return ZERO
    return math.ceil(math.log(value) / _LOG_GAMMA)


def slot_value(index: int) -> float:
    """The value a slot stands for: within ALPHA of every value in it."""
    return 0.0 if index == ZERO else 2 * GAMMA**index / (GAMMA + 1)


def exact_quantile(values: list[float], q: float) -> float | None:
    """The same rank of the raw values (what the sketch's answer is within ALPHA of)."""
    if not values:
        return None
    return sorted(values)[math.floor(q * (len(values) - 1))]


def sketch_pack(sketch: Mapping[int, int]) -> bytes:
    """A sketch as stored: its slots (int16) then their counts (uint32), 6 bytes a slot."""
    kept = sorted((i, n) for i, n in sketch.items() if n)
    slots = np.array([i for i, _ in kept], np.int16)
    counts = np.array([n for _, n in kept], np.uint32)
    return slots.tobytes() + counts.tobytes()


def sketch_unpack(blob: bytes | None) -> Sketch:
    if not blob:
        return Counter()
    n = len(blob) // 6
    slots = np.frombuffer(blob[: 2 * n], np.int16).tolist()
    counts = np.frombuffer(blob[2 * n :], np.uint32).tolist()
    return Counter(dict(zip(slots, counts, strict=True)))


def rating(metric: Metric, value: float) -> int:
    """0 good, 1 needs improvement, 2 poor."""
    return 0 if value <= metric.good else 1 if value <= metric.poor else 2


# --- what a bucket keeps ----------------------------------------------------------------
UNKNOWN = ""  # a dimension ingest did not know (a server-side event, an unknown agent)
Key = tuple[str, str, str, str]  # (page path, device, country, browser)
SITE: Key = ("", "", "", "")  # level 0: the whole site
TOP_ELEMENTS = 10  # elements a row keeps per metric (the worst)
TOP_COMBOS = 5_000  # (page, device, country, browser) rows a bucket keeps (most measured)
TOP_PAGES = 1_000  # page rows a bucket keeps (most measured)


@dataclass
class Cell:
    """The vitals of one (page, device, country, browser) or a coarser level."""

    sketches: dict[str, Sketch] = field(default_factory=dict)
    ratings: dict[str, list[int]] = field(default_factory=dict)  # [good, ni, poor]
    # metric: element: [times it was the cause, of them poor, sum of the values]
    elements: dict[str, dict[str, list[float]]] = field(default_factory=dict)

    def measured(self) -> int:
        return max((sum(r) for r in self.ratings.values()), default=0)

    def add_value(self, metric: Metric, value: float, element: str | None) -> None:
        self.sketches.setdefault(metric.name, Counter())[slot(value)] += 1
        rated = rating(metric, value)
        self.ratings.setdefault(metric.name, [0, 0, 0])[rated] += 1
        if element:
            found = self.elements.setdefault(metric.name, {})
            held = found.setdefault(element, [0, 0, 0.0])
            held[0] += 1
            held[1] += rated == 2
            held[2] += value

    def add(self, other: Cell) -> None:
        for name, sketch in other.sketches.items():
            self.sketches.setdefault(name, Counter()).update(sketch)
        for name, counts in other.ratings.items():
            held = self.ratings.setdefault(name, [0, 0, 0])
            for i, n in enumerate(counts):
                held[i] += n
        for name, elements in other.elements.items():
            mine = self.elements.setdefault(name, {})
            for label, measured in elements.items():
                into = mine.setdefault(label, [0, 0, 0.0])
                into[0] += measured[0]
                into[1] += measured[1]
                into[2] += measured[2]


def worst(
    elements: Mapping[str, list[float]], n: int = TOP_ELEMENTS
) -> list[tuple[str, list[float]]]:
    """The n worst elements: most poor measurements, then the highest sum, then the label."""
    return sorted(elements.items(), key=lambda kv: (-kv[1][1], -kv[1][2], kv[0]))[:n]


def trimmed(cell: Cell) -> Cell:
    cell.elements = {name: dict(worst(found)) for name, found in cell.elements.items()}
    return cell


# --- counting events (rows as stored, or a plan's events as dicts) ---------------------
def _json(value: Any) -> Any:
    return orjson.loads(value) if isinstance(value, str | bytes) else value


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def vitals_count(events: Iterable[dict[str, Any]]) -> dict[Key, Cell]:
    """Count the `$vitals` events among these (humans only) by (page, device, country,
    browser); a value the collector would refuse is skipped (rows written before it
    checked)."""
    counted: dict[Key, Cell] = {}
    for event in events:
        if event.get("is_bot") or event.get("name") != NAME:
            continue
        page = page_path(event.get("url"))
        props = _json(event.get("props")) or {}
        if not page or not isinstance(props, dict):
            continue
        layout = _json(event.get("layout")) or {}
        key = (page, *[str(layout.get(k) or UNKNOWN) for k in ("dev", "cc", "br")])
        assert len(key) == 4
        cell = counted.get(key)
        for metric in METRICS:
            value = _number(props.get(metric.name))
            if value is None or not 0 <= value <= metric.largest:
                continue
            if cell is None:
                counted[key] = cell = Cell()
            element = props.get(ELEMENT_OF.get(metric.name, ""))
            cell.add_value(metric, value, element if isinstance(element, str) else None)
    return counted


def vitals_encode(counted: dict[Key, Cell]) -> dict[str, Any]:
    """A tally's vitals as JSON (tally.tally_encode embeds it)."""
    return {
        "\t".join(key): {
            "s": {name: {str(i): n for i, n in s.items()} for name, s in cell.sketches.items()},
            "r": cell.ratings,
            "e": cell.elements,
        }
        for key, cell in counted.items()
    }


def _counter(encoded: dict[str, int]) -> Sketch:
    return Counter({int(i): n for i, n in encoded.items()})


def vitals_fold(bodies: Iterable[dict[str, Any] | None]) -> dict[Key, Cell]:
    """Add up encoded tallies of disjoint sets of events."""
    total: dict[Key, Cell] = {}
    for body in bodies:
        for joined, part in (body or {}).items():
            page, device, country, browser = joined.split("\t")
            cell = Cell(
                sketches={n: _counter(s) for n, s in part["s"].items()},
                ratings={n: list(r) for n, r in part["r"].items()},
                elements={n: {k: list(v) for k, v in e.items()} for n, e in part["e"].items()},
            )
            into = total.get((page, device, country, browser))
            if into is None:
                total[page, device, country, browser] = cell
            else:
                into.add(cell)
    return total


# --- a bucket's stored rows: three levels --------------------------------------------------
Stored = dict[tuple[int, Key], Cell]  # (level, key): level 0 site, 1 page, 2 combination


def stored_of(counted: Mapping[Key, Cell]) -> Stored:
    """A bucket's rows from its counted combinations: each combination (level 2, the
    TOP_COMBOS most measured), each page (level 1, the TOP_PAGES most measured) and the
    site (level 0), each with its worst elements."""
    if not counted:
        return {}
    site, pages = Cell(), dict[str, Cell]()
    for (page, *_), cell in counted.items():
        site.add(cell)
        pages.setdefault(page, Cell()).add(cell)
    rows: Stored = {(0, SITE): Cell(site.sketches, site.ratings, {})}
    for page, cell in _most_measured(pages, TOP_PAGES):
        rows[1, (page, "", "", "")] = trimmed(cell)
    for key, cell in _most_measured(counted, TOP_COMBOS):
        copy = Cell()
        copy.add(cell)
        rows[2, key] = trimmed(copy)
    return rows


def _most_measured(cells: Mapping[Any, Cell], n: int) -> list[tuple[Any, Cell]]:
    return sorted(cells.items(), key=lambda kv: (-kv[1].measured(), kv[0]))[:n]


def stored_merge(parts: Iterable[Stored]) -> Stored:
    """Merge buckets' rows level by level (days of hours, months of days)."""
    combos: dict[Key, Cell] = {}
    pages: dict[Key, Cell] = {}
    site = Cell()
    for part in parts:
        for (level, key), cell in part.items():
            into = site if level == 0 else (pages if level == 1 else combos).setdefault(key, Cell())
            into.add(cell)
    rows: Stored = {(0, SITE): site} if site.ratings else {}
    for key, cell in _most_measured(pages, TOP_PAGES):
        rows[1, key] = trimmed(cell)
    for key, cell in _most_measured(combos, TOP_COMBOS):
        rows[2, key] = trimmed(cell)
    return rows


# --- the collector's check -------------------------------------------------------------
def vitals_problem(props: Any) -> tuple[str, str] | None:
    """Why a `$vitals` event's props are refused ((field, reason)), None when they are fine."""
    if not isinstance(props, dict):
        return "props", "a $vitals event needs props {pageview, lcp?, inp?, cls?, fcp?, ttfb?}"
    for key in props:
        if key not in FIELDS:
            return f"props.{key}", f"not a vitals field ({', '.join(FIELDS)})"
    view = props.get("pageview")
    if not isinstance(view, str) or not view or len(view) > MAX_VIEW_ID:
        return "props.pageview", f"required: the page view's id (at most {MAX_VIEW_ID} characters)"
    if not any(m.name in props for m in METRICS):
        return "props", "no metric: expected at least one of lcp, inp, cls, fcp, ttfb"
    for metric in METRICS:
        if metric.name not in props:
            continue
        value = _number(props[metric.name])
        unit = "milliseconds" if metric.unit == "ms" else "a score"
        if value is None or not 0 <= value <= metric.largest:
            return f"props.{metric.name}", f"expected {unit} from 0 to {metric.largest:g}"
    for metric_name, key in ELEMENT_OF.items():
        element = props.get(key)
        if element is None:
            continue
        if metric_name not in props:
            return f"props.{key}", f"an element without its metric ({metric_name})"
        if not isinstance(element, str) or len(element) > MAX_ELEMENT or _CONTROL.search(element):
            return f"props.{key}", f"expected a CSS selector of at most {MAX_ELEMENT} characters"
    return None
