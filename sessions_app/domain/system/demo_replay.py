"""Demo replays: the recorder's chunks of one generated visit (docs/replay.md, Wire format).

A recording is what static/sessions_app/replay.js sends for a visit to the demo shop: a
page load (a Meta event and a full snapshot of the shop, `demo_snapshot.json.gz`, taken
by the recorder in Chromium), then for each of the visit's page views the shop's own
navigation (the view's section shown, the last one hidden: an attribute mutation), the
mouse moving to each element the visit clicks, scrolling it into view, the click, and the
scroll to the view's deepest point. Each page view is one chunk (at most
REPLAY_MAX_CHUNK_SECONDS). The collector stores them through its own path
(features/system/demo_replays.py calls `chunks.chunk_accept`).
"""

from __future__ import annotations

import functools
import gzip
import json
import random
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from sessions_app.domain.system.demo_visitors import Device

SNAPSHOT = Path(__file__).with_name("demo_snapshot.json.gz")
# rrweb's event types and incremental sources (rrweb/packages/types).
META, FULL_SNAPSHOT, INCREMENTAL = 4, 2, 3
MUTATION, MOUSE_MOVE, MOUSE_INTERACTION, SCROLL = 0, 1, 2, 3
MOUSE_DOWN, MOUSE_UP, CLICK = 1, 0, 2
DOCUMENT = 1  # the snapshot's document node: a scroll of the window names it
LONGEST_CHUNK_MS = 600_000  # settings.REPLAY_MAX_CHUNK_SECONDS


@functools.cache
def _snapshot_text() -> str:
    return gzip.decompress(SNAPSHOT.read_bytes()).decode()


def _snapshot(origin: str) -> dict[str, Any]:
    """The shop's snapshot with its links on the site's origin (a fresh copy to change)."""
    return dict(json.loads(_snapshot_text().replace("{origin}", origin)))


def _nodes(snapshot: dict[str, Any]) -> tuple[dict[str, int], dict[str, int]]:
    """The snapshot's sections by their data-view, and its elements by their id."""
    views: dict[str, int] = {}
    ids: dict[str, int] = {}
    stack = [snapshot["node"]]
    while stack:
        node = stack.pop()
        attributes = node.get("attributes") or {}
        if "data-view" in attributes:
            views[attributes["data-view"]] = node["id"]
        if "id" in attributes:
            ids[attributes["id"]] = node["id"]
        stack.extend(node.get("childNodes") or ())
    return views, ids


def _ms(value: str) -> int:
    return round(datetime.fromisoformat(value).timestamp() * 1000)


def _path(url: str) -> str:
    return urlsplit(url).path


def _target(ids: dict[str, int], element: dict[str, Any], section: int) -> int:
    """The clicked element's node: by its id, else the nearest id in its selector."""
    if element.get("id") in ids:
        return ids[element["id"]]
    for part in reversed(element["selector"].split(" > ")):
        if "#" in part:
            found = ids.get(part.split("#", 1)[1].split(".", 1)[0])
            if found is not None:
                return found
    return section


def recording(
    *,
    events: list[dict[str, Any]],
    device: Device,
    origin: str,
    heights: dict[str, int],
    seed: str,
) -> list[dict[str, Any]]:
    """The chunks the recorder sends for a visit's tracker events (without site and ids);
    `heights` is each page's height in the device's layout."""
    rng = random.Random(seed)  # noqa: S311 - demo data
    snapshot = _snapshot(origin)
    views, ids = _nodes(snapshot)
    width, height = device.viewport, device.fold
    first = events[0]
    page_ms = _ms(first["ts"])
    shown = views[_path(first["url"])]
    for section in _sections(snapshot, views):  # the landing view shown, the others hidden
        section.pop("hidden", None)
        if section["data-view"] != _path(first["url"]):
            section["hidden"] = ""
    chunks: list[list[dict[str, Any]]] = [
        [
            {"type": META, "data": {"href": first["url"], "width": width, "height": height}},
            {"type": FULL_SNAPSHOT, "data": {**snapshot, "initialOffset": {"left": 0, "top": 0}}},
        ]
    ]
    for event in chunks[0]:
        event["timestamp"] = page_ms
    scroll, mouse = 0, (width // 2, height // 3)

    def add(data: dict[str, Any], at: int) -> None:
        chunks[-1].append({"type": INCREMENTAL, "data": data, "timestamp": at})

    for event in events:
        at, path = _ms(event["ts"]), _path(event["url"])
        if event["type"] == "pageview" and event is not first:
            chunks.append([])
            if views.get(path, shown) != shown:
                toggled = [
                    {"id": shown, "attributes": {"hidden": ""}},
                    {"id": views[path], "attributes": {"hidden": None}},
                ]
                change = {"texts": [], "attributes": toggled, "removes": [], "adds": []}
                add({"source": MUTATION, **change}, at)
                shown = views[path]
            if scroll:
                scroll = 0
                add({"source": SCROLL, "id": DOCUMENT, "x": 0, "y": 0}, at + 5)
        elif event["type"] == "click":
            x, y = round(event["pos"]["x"] * width), event["pos"]["y"]
            if not scroll <= y < scroll + height - 40:  # scrolled into view first
                scroll = max(0, min(y - height // 2, heights[path] - height))
                add({"source": SCROLL, "id": DOCUMENT, "x": 0, "y": scroll}, at - 900)
            steps = rng.randint(3, 6)
            positions = [
                {
                    "x": round(mouse[0] + (x - mouse[0]) * (n + 1) / steps),
                    "y": round(mouse[1] + (y - scroll - mouse[1]) * (n + 1) / steps),
                    "id": DOCUMENT,
                    "timeOffset": -60 * (steps - n),
                }
                for n in range(steps)
            ]
            add({"source": MOUSE_MOVE, "positions": positions}, at - 20)
            node = _target(ids, event["element"], shown)
            for kind, delay in ((MOUSE_DOWN, -15), (MOUSE_UP, -5), (CLICK, 0)):
                data = {"source": MOUSE_INTERACTION, "type": kind, "id": node}
                add({**data, "x": x, "y": y - scroll, "pointerType": 0}, at + delay)
            mouse = (x, y - scroll)
        elif event.get("name") == "$pageleave":
            deepest = round(event["props"]["scroll"] * heights[path] / 100) - height
            if deepest > scroll:
                scroll = deepest
                add({"source": SCROLL, "id": DOCUMENT, "x": 0, "y": scroll}, at - 1500)
    return [body for part in chunks for body in _bodies(part, page_ms)]


def _sections(snapshot: dict[str, Any], views: dict[str, int]) -> list[dict[str, Any]]:
    """The attributes of the snapshot's view sections (to change in place)."""
    wanted, found, stack = set(views.values()), [], [snapshot["node"]]
    while stack:
        node = stack.pop()
        if node["id"] in wanted:
            found.append(node["attributes"])
        stack.extend(node.get("childNodes") or ())
    return found


def _bodies(events: list[dict[str, Any]], page_ms: int) -> list[dict[str, Any]]:
    """One page view's events as chunks of at most LONGEST_CHUNK_MS (none if empty)."""
    events = sorted(events, key=lambda e: e["timestamp"])
    bodies: list[dict[str, Any]] = []
    for event in events:
        if not bodies or event["timestamp"] - bodies[-1]["start"] > LONGEST_CHUNK_MS:
            bodies.append({"page": page_ms, "start": event["timestamp"], "events": []})
        bodies[-1]["events"].append(event)
        bodies[-1]["end"] = event["timestamp"]
    return bodies


def chunk_bodies(
    chunks: list[dict[str, Any]],
    *,
    site_key: str,
    anonymous_id: str,
    user_id: str | None,
    seed: str,
) -> list[dict[str, Any]]:
    """The chunks as the recorder sends them: numbered, with their ids and the visitor."""
    rng = random.Random(seed)  # noqa: S311 - demo data
    bodies = []
    for seq, chunk in enumerate(chunks):
        chunk_id = uuid.UUID(int=rng.getrandbits(128), version=4)
        body = {"site": site_key, "chunk": str(chunk_id), "seq": seq, **chunk}
        body["sent_at"] = chunk["end"] + 1000
        body["anonymous_id"] = anonymous_id
        if user_id:
            body["user_id"] = user_id
        bodies.append(body)
    return bodies
