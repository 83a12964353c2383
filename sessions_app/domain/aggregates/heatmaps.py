"""Click heatmaps, rage and dead clicks and scroll depth, per page and layout, per bucket.

Counted from the clicks and `$pageleave` events of a bucket, by (page path, viewport
class): every click with a position adds one to its cell of the document grid
(GRID_COLUMNS columns across the document's width, ROW_PX rows down from its top) and,
with a position inside its element, to that element's own SPOT by SPOT grid (what the
overlay draws into the element's box as it is laid out now, so a centred layout on a
wide screen does not shift the marks); every click counts for its element (label: the
selector, else text, else tag) with its rage and dead flags, and the element's text is
kept beside its label (`texts`: "" once its clicks said different things, as a selector
matching several cards does), for the analyst's page to name it by what it said. A page
view's scroll depth is the deepest reading of its `$pageleave` events in the bucket (the
tracker may send several: each time the page is hidden); each page view counts once per
bucket at its deepest percent, with its fold height.

Counts add up across tallies (a seal folds the applier's per-batch tallies; readings of
one page view keep their maximum) and across buckets (days merge hours, months days),
so the overlay reads one row per day of a range. Stored in bucket_heatmaps
(domain/aggregates/heatmap_rows.py); pure counting here (the seal's tally embeds it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from sessions_app.domain.aggregates.labels import click_label, click_text
from sessions_app.foundation.core import eventnames
from sessions_app.foundation.core.pagepaths import page_path
from sessions_app.foundation.core.timebuckets import driver_ms

GRID_COLUMNS = 64  # across the document's width
ROW_PX = 16  # CSS px a grid row
MAX_ROWS = 1_250  # 20,000 px; clicks further down count in the last row
SPOT = 8  # an element's box, SPOT by SPOT
FOLD_PX = 50  # fold heights counted in steps of 50 px
TOP_ELEMENTS = 300  # elements a row keeps (most clicked); the rest's clicks in `dropped`
TOP_PAGES = 1_000  # rows a bucket keeps (by clicks and page views)
SAMPLES = 10  # rage or dead clicks an element keeps a bucket (the latest) to show who
LEAVE = eventnames.PAGELEAVE
UNKNOWN = "(unknown)"  # no viewport class sent (older trackers, server-side SDKs)

Key = tuple[str, str]  # (page path, viewport class)


@dataclass
class Heat:
    """One page's counts in one layout."""

    clicks: int = 0
    cells: Counter[int] = field(default_factory=Counter)  # row * GRID_COLUMNS + column
    elements: dict[str, list[int]] = field(default_factory=dict)  # label: [clicks, rage, dead]
    spots: dict[str, Counter[int]] = field(default_factory=dict)  # label: its box's cells
    scroll: Counter[int] = field(default_factory=Counter)  # deepest percent: page views
    folds: Counter[int] = field(default_factory=Counter)  # fold px (floored): page views
    dropped: int = 0
    texts: dict[str, str] = field(default_factory=dict)  # label: what it said ("": varied)
    # label: its latest rage or dead clicks, [ts ms, event id, session id, user key, rage,
    # dead], newest first: the sessions behind an element's frustration.
    samples: dict[str, list[list[Any]]] = field(default_factory=dict)


@dataclass
class HeatTally:
    """Additive: clicks per (page, layout), and each page view's deepest reading."""

    pages: dict[Key, Heat] = field(default_factory=dict)
    # page view id: [page, layout, deepest percent, fold px]
    readings: dict[str, list[Any]] = field(default_factory=dict)


def _json(value: Any) -> Any:
    return orjson.loads(value) if isinstance(value, str | bytes) else value


def _whole(value: Any, low: int, high: int) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        return None
    return int(value)


def heat_count(events: Iterable[dict[str, Any]]) -> HeatTally:
    """Count human clicks and `$pageleave` readings (rows as stored, or plan events)."""
    counted = HeatTally()
    for event in events:
        if event.get("is_bot"):
            continue
        page = page_path(event.get("url"))
        if not page:
            continue
        layout = _json(event.get("layout")) or {}
        key = (page, layout.get("vp") or UNKNOWN)
        if event["type"] == "click":
            _click(
                counted.pages.setdefault(key, Heat()), layout, _json(event.get("element")), event
            )
        elif event.get("name") == LEAVE:
            props = _json(event.get("props")) or {}
            view, deepest = props.get("pageview"), _whole(props.get("scroll"), 0, 100)
            if not isinstance(view, str) or not view or len(view) > 64 or deepest is None:
                continue
            fold = _whole(props.get("fold"), 0, 20_000) or 0
            held = counted.readings.get(view)
            if held is None or deepest > held[2]:
                counted.readings[view] = [key[0], key[1], deepest, fold]
    return counted


def _click(
    heat: Heat, layout: dict[str, Any], element: dict[str, Any] | None, event: dict[str, Any]
) -> None:
    heat.clicks += 1
    x, y = layout.get("x"), layout.get("y")
    if x is not None and y is not None:
        column = min(int(x * GRID_COLUMNS), GRID_COLUMNS - 1)
        heat.cells[min(int(y) // ROW_PX, MAX_ROWS - 1) * GRID_COLUMNS + column] += 1
    label = click_label(element if isinstance(element, dict) else None)
    if not label:
        return
    counts = heat.elements.setdefault(label, [0, 0, 0])
    text = click_text(element if isinstance(element, dict) else None)
    if text and text != label:
        text_merge(heat.texts, label, text)
    rage, dead = bool(layout.get("rage")), bool(layout.get("dead"))
    counts[0] += 1
    counts[1] += rage
    counts[2] += dead
    if rage or dead:
        at = driver_ms(event["ts"])
        sample = [at, str(event["event_id"]), str(event["session_id"]), event["user_key"]]
        heat.samples.setdefault(label, []).append([*sample, rage, dead])
    ex, ey = layout.get("ex"), layout.get("ey")
    if ex is not None and ey is not None:
        spot = min(int(ey * SPOT), SPOT - 1) * SPOT + min(int(ex * SPOT), SPOT - 1)
        heat.spots.setdefault(label, Counter())[spot] += 1


def text_merge(texts: dict[str, str], label: str, text: str) -> None:
    """Keep `text` as what the element `label` said, or "" when it said something else
    before (the order of merging does not matter: "" stays "")."""
    held = texts.get(label)
    texts[label] = text if held is None or held == text else ""


def latest(samples: list[list[Any]]) -> list[list[Any]]:
    """The SAMPLES latest, newest first (time, then event id: a total order)."""
    return sorted(samples, key=lambda s: (s[0], s[1]), reverse=True)[:SAMPLES]


def heat_json(heat: Heat) -> dict[str, Any]:
    return {
        "clicks": heat.clicks,
        "cells": list(heat.cells.items()),
        "elements": heat.elements,
        "spots": {label: list(c.items()) for label, c in heat.spots.items()},
        "scroll": list(heat.scroll.items()),
        "folds": list(heat.folds.items()),
        "dropped": heat.dropped,
        "texts": heat.texts,
        "samples": {label: latest(found) for label, found in heat.samples.items()},
    }


def heat_of(body: dict[str, Any]) -> Heat:
    return Heat(
        clicks=body["clicks"],
        cells=Counter(dict(body["cells"])),
        elements={k: list(v) for k, v in body["elements"].items()},
        spots={k: Counter(dict(v)) for k, v in body["spots"].items()},
        scroll=Counter(dict(body["scroll"])),
        folds=Counter(dict(body["folds"])),
        dropped=body["dropped"],
        texts=dict(body.get("texts", {})),  # rows sealed before texts were kept: none
        samples={k: list(v) for k, v in body.get("samples", {}).items()},
    )


def heat_encode(counted: HeatTally) -> dict[str, Any]:
    """A tally as JSON: each page's counts under "page<TAB>layout", an element's clicks as
    one number unless it has rage or dead ones, empty counts left out (a seal folds tens
    of thousands of these: few objects each); tally.tally_encode embeds it."""
    pages = {}
    for (page, vp), heat in counted.pages.items():
        body: dict[str, Any] = {
            "c": heat.clicks,
            "e": {k: c if c[1] or c[2] else c[0] for k, c in heat.elements.items()},
        }
        for name, value in heat_json(heat).items():
            if value and name not in ("clicks", "elements"):
                body[name] = value
        pages[f"{page}\t{vp}"] = body
    return {"pages": pages, "readings": counted.readings}


def heat_fold(bodies: Iterable[dict[str, Any] | None]) -> HeatTally:
    """Add up encoded tallies of disjoint sets of events; readings keep their maximum."""
    total = HeatTally()
    by_text: dict[str, Heat] = {}  # "page\tlayout" as stored: split once, at the end
    for body in bodies:
        if not body:
            continue
        pages = body.get("pages", {})
        if isinstance(pages, list):  # [[page, layout, heat_json], ...]: the first tallies
            _add(total.pages, {(page, vp): heat_of(h) for page, vp, h in pages})
        else:
            for key, heat in pages.items():
                into = by_text.get(key)
                if into is None:
                    by_text[key] = into = Heat()
                _encoded_add(into, heat)
        for view, reading in body.get("readings", {}).items():  # left out when none
            held = total.readings.get(view)
            if held is None or reading[2] > held[2]:
                total.readings[view] = reading
    for key, heat in by_text.items():
        page, _, vp = key.rpartition("\t")  # a layout class has no tab
        if (page, vp) in total.pages:  # also in a first-format tally
            _add(total.pages, {(page, vp): heat})
        else:
            total.pages[page, vp] = heat
    for heat in total.pages.values():
        heat.samples = {label: latest(found) for label, found in heat.samples.items()}
    return total


def _encoded_add(into: Heat, body: dict[str, Any]) -> None:
    """Add one page's counts as heat_encode wrote them to a Heat (samples: not yet cut)."""
    into.clicks += body["c"]
    elements = into.elements
    for label, counts in body["e"].items():
        held = elements.get(label)
        if counts.__class__ is int:  # clicks only, the common case
            if held is None:
                elements[label] = [counts, 0, 0]
            else:
                held[0] += counts
        elif held is None:
            elements[label] = list(counts)
        else:
            held[0] += counts[0]
            held[1] += counts[1]
            held[2] += counts[2]
    if len(body) > 2:  # more than clicks and elements ("c", "e"): positions, scrolls
        _positions_add(into, body)


def _positions_add(into: Heat, body: dict[str, Any]) -> None:
    """The rest of an encoded page's counts: cells, scroll, folds, spots, texts, samples."""
    into.dropped += body.get("dropped", 0)
    for label, text in body.get("texts", {}).items():
        text_merge(into.texts, label, text)
    for total, name in ((into.cells, "cells"), (into.scroll, "scroll"), (into.folds, "folds")):
        for key, n in body.get(name, ()):
            total[key] += n
    for label, pairs in body.get("spots", {}).items():
        spots = into.spots.get(label)
        if spots is None:
            into.spots[label] = spots = Counter()
        for key, n in pairs:
            spots[key] += n
    for label, found in body.get("samples", {}).items():
        into.samples.setdefault(label, []).extend(found)


def _add(total: dict[Key, Heat], part: dict[Key, Heat]) -> None:
    for key, heat in part.items():
        into = total.get(key)
        if into is None:
            total[key] = into = Heat()
        into.clicks += heat.clicks
        into.cells.update(heat.cells)
        for label, counts in heat.elements.items():
            held = into.elements.setdefault(label, [0, 0, 0])
            for i, n in enumerate(counts):
                held[i] += n
        for label, cells in heat.spots.items():
            into.spots.setdefault(label, Counter()).update(cells)
        into.scroll.update(heat.scroll)
        into.folds.update(heat.folds)
        into.dropped += heat.dropped
        for label, text in heat.texts.items():
            text_merge(into.texts, label, text)
        for label, found in heat.samples.items():
            into.samples[label] = latest(into.samples.get(label, []) + found)


def stored_of(counted: HeatTally) -> dict[Key, Heat]:
    """A bucket's rows: the clicks, and each page view's deepest reading counted."""
    rows: dict[Key, Heat] = {}
    _add(rows, counted.pages)
    for page, vp, deepest, fold in counted.readings.values():
        heat = rows.setdefault((page, vp), Heat())
        heat.scroll[deepest] += 1
        heat.folds[fold // FOLD_PX * FOLD_PX] += 1
    return capped(rows)


def capped(rows: dict[Key, Heat]) -> dict[Key, Heat]:
    """At most TOP_PAGES rows, TOP_ELEMENTS elements a row (the rest's clicks dropped)."""
    kept = sorted(rows.items(), key=lambda kv: (-kv[1].clicks - kv[1].scroll.total(), kv[0]))
    for _, heat in kept:
        trimmed(heat)
    return dict(kept[:TOP_PAGES])


def trimmed(heat: Heat) -> Heat:
    """The heat with its TOP_ELEMENTS most clicked elements (the rest's clicks dropped)."""
    if len(heat.elements) > TOP_ELEMENTS:
        ranked = sorted(heat.elements.items(), key=lambda kv: (-kv[1][0], kv[0]))
        heat.dropped += sum(c[0] for _, c in ranked[TOP_ELEMENTS:])
        heat.elements = dict(ranked[:TOP_ELEMENTS])
        heat.spots = {k: v for k, v in heat.spots.items() if k in heat.elements}
        heat.texts = {k: v for k, v in heat.texts.items() if k in heat.elements}
        heat.samples = {k: v for k, v in heat.samples.items() if k in heat.elements}
    return heat


def heat_merge(parts: list[dict[Key, Heat]]) -> dict[Key, Heat]:
    total: dict[Key, Heat] = {}
    for part in parts:
        _add(total, part)
    return capped(total)
