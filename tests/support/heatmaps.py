"""Heatmap traffic and its recount: one visitor's page views, clicks with positions
and `$pageleave` readings, and a bucket's expected rows counted from its raw rows."""

from __future__ import annotations

import json
import random
from collections import Counter, defaultdict
from datetime import datetime, timedelta
from typing import Any

from sessions_app.domain.aggregates.heatmaps import (
    GRID_COLUMNS,
    MAX_ROWS,
    ROW_PX,
    SAMPLES,
    SPOT,
    UNKNOWN,
)
from sessions_app.foundation.core import timebuckets
from tests.support.dataset import SHOP
from tests.support.events import event

PAGES = ["/", "/pricing", "/docs"]
WIDTHS = [390, 800, 1440, None]  # <640, 640-1024, >1024, not sent
SELECTORS = ["button#buy", "a.more", "p.intro", "div.card > span"]
# What the elements say: the cards' span says one of two (a selector matching several
# elements), the paragraph nothing.
TEXTS = {
    "button#buy": [" Buy   now "],  # spaces collapsed
    "a.more": ["Read more"],
    "div.card > span": ["Basic", "Pro"],
}


def visit(rng: random.Random, anon: str, start: datetime) -> list[dict[str, Any]]:
    width = rng.choice(WIDTHS)
    shown = {"viewport": width} if width else {}
    events, ts = [], start
    for _ in range(rng.randrange(1, 5)):
        url = SHOP + rng.choice(PAGES) + rng.choice(["", "?q=1", "#top"])
        view = event(ts, anon=anon, url=url, **shown)
        events.append(view)
        for _ in range(rng.randrange(0, 6)):
            ts += timedelta(seconds=rng.randrange(1, 90))
            extra: dict[str, Any] = dict(shown)
            if rng.random() < 0.85:
                extra["pos"] = {"x": round(rng.random(), 4), "y": rng.randrange(0, 30_000)}
                if rng.random() < 0.7:
                    extra["pos"] |= {"ex": round(rng.random(), 3), "ey": round(rng.random(), 3)}
            if rng.random() < 0.2:
                extra["rage"] = True
            if rng.random() < 0.2:
                extra["dead"] = True
            element = {"tag": "button", "selector": rng.choice(SELECTORS)}
            said = TEXTS.get(element["selector"])
            if said:  # not from rng: the visits drawn stay as they were
                element["text"] = said[len(events) % len(said)]
            events.append(event(ts, kind="click", anon=anon, url=url, element=element, **extra))
        for _ in range(rng.randrange(0, 3)):  # readings of this page view, deepest counts
            ts += timedelta(minutes=rng.randrange(0, 50))
            props = {
                "pageview": view["id"],
                "scroll": rng.randrange(0, 101),
                "fold": rng.choice([640, 900, 1333]),
            }
            events.append(
                event(
                    ts, kind="custom", name="$pageleave", anon=anon, url=url, props=props, **shown
                )
            )
        ts += timedelta(minutes=rng.randrange(1, 20))
    return events


def path_of(url: str) -> str:
    return url.split("://", 1)[1].split("/", 1)[1].split("?")[0].split("#")[0].join(["/", ""])


def recount(rows: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """The expected rows of one bucket, from its raw rows."""
    out: dict[tuple[str, str], dict[str, Any]] = defaultdict(
        lambda: {
            "clicks": 0,
            "cells": Counter(),
            "elements": defaultdict(lambda: [0, 0, 0]),
            "spots": defaultdict(Counter),
            "scroll": Counter(),
            "folds": Counter(),
            "samples": defaultdict(list),
            "said": defaultdict(set),
        }
    )
    deepest: dict[str, tuple[int, tuple[str, str], int]] = {}
    for row in rows:
        if row["is_bot"]:
            continue
        layout = json.loads(row["layout"]) if row["layout"] else {}
        key = (path_of(row["url"]), layout.get("vp", UNKNOWN))
        if row["type"] == "click":
            got = out[key]
            got["clicks"] += 1
            if "x" in layout:
                column = min(int(layout["x"] * GRID_COLUMNS), GRID_COLUMNS - 1)
                line = min(layout["y"] // ROW_PX, MAX_ROWS - 1)  # further down: the last row
                got["cells"][line * GRID_COLUMNS + column] += 1
            element = json.loads(row["element"])
            label = element["selector"]
            if (element.get("text") or "").split():
                got["said"][label].add(" ".join(element["text"].split()))
            rage, dead = layout.get("rage", False), layout.get("dead", False)
            got["elements"][label][0] += 1
            got["elements"][label][1] += rage
            got["elements"][label][2] += dead
            if rage or dead:
                at = timebuckets.epoch_ms(timebuckets.from_driver(row["ts"]))
                got["samples"][label].append(
                    [at, str(row["event_id"]), str(row["session_id"]), row["user_key"], rage, dead]
                )
            if "ex" in layout:
                spot = min(int(layout["ey"] * SPOT), SPOT - 1) * SPOT + min(
                    int(layout["ex"] * SPOT), SPOT - 1
                )
                got["spots"][label][spot] += 1
        elif row["name"] == "$pageleave":
            props = json.loads(row["props"])
            held = deepest.get(props["pageview"])
            if held is None or props["scroll"] > held[0]:
                deepest[props["pageview"]] = (props["scroll"], key, props["fold"])
    for scroll, key, fold in deepest.values():
        out[key]["scroll"][scroll] += 1
        out[key]["folds"][fold // 50 * 50] += 1
    for got in out.values():
        got["texts"] = {k: next(iter(v)) if len(v) == 1 else "" for k, v in got.pop("said").items()}
    return {k: plain(v) for k, v in out.items()}


def plain(heat: Any) -> dict[str, Any]:
    """A Heat (or the recount's dict) as comparable plain values."""
    get = heat.get if isinstance(heat, dict) else lambda k: getattr(heat, k)
    return {
        "clicks": get("clicks"),
        "cells": {k: v for k, v in get("cells").items() if v},
        "elements": {k: list(v) for k, v in get("elements").items()},
        "spots": {k: dict(v) for k, v in get("spots").items() if v},
        "scroll": dict(get("scroll")),
        "folds": dict(get("folds")),
        "samples": {k: newest(v) for k, v in get("samples").items() if v},
        "texts": dict(get("texts")),
    }


def newest(samples: list[list[Any]]) -> list[list[Any]]:
    """The SAMPLES latest flagged clicks, by time then event id, newest first."""
    return sorted(samples, key=lambda s: (s[0], s[1]), reverse=True)[:SAMPLES]
