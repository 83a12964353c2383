"""Goals of every kind for the tests, and a brute-force count of them from raw rows with
plain code of its own (no step kind, no matcher of the app)."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

import orjson

from sessions_app.domain.jobs.goal_backfill import goal_save

GOALS: dict[str, dict[str, Any]] = {
    "pricing": {"kind": "pageview", "path": "/pricing", "match": "exact"},
    "docs anywhere": {"kind": "pageview", "path": "/d*", "match": "pattern"},
    "any page": {"kind": "pageview", "path": "/", "match": "prefix"},
    "buy": {"kind": "click", "selector": "button#buy"},
    "read to 900": {
        "kind": "event",
        "name": "$pageleave",
        "properties": [{"key": "fold", "op": "eq", "value": "900"}],
    },
}
BREAKS = {
    "source": "source",
    "medium": "medium",
    "campaign": "campaign",
    "country": "country",
    "device": "device",
    "browser": "browser",
    "os": "os",
    "entry": "entry_path",
    "exit": "exit_path",
}


def goals_add(site, now: datetime, goals: dict[str, dict[str, Any]] = GOALS) -> dict[str, str]:
    """Save the goals on the site; return {name: digest} of their stored definitions."""
    return {
        name: goal_save(site=site, name=name, definition=d, now=now).digest
        for name, d in goals.items()
    }


def _path(url: str | None) -> str | None:
    return (urlsplit(url).path or "/") if url else None


def _props(raw: Any) -> dict[str, Any]:
    found = orjson.loads(raw) if isinstance(raw, str | bytes) else raw
    return found if isinstance(found, dict) else {}


def matches(goal: dict[str, Any], row: dict[str, Any]) -> bool:
    kind = goal["kind"]
    if kind == "pageview":
        path = _path(row.get("url"))
        if row["type"] != "pageview" or path is None:
            return False
        if goal["match"] == "exact":
            return path == goal["path"]
        if goal["match"] == "prefix":
            return path[: len(goal["path"])] == goal["path"]
        pattern = "".join(
            ".*" if c == "*" else "." if c == "?" else re.escape(c) for c in goal["path"]
        )
        return re.fullmatch(pattern, path, re.S) is not None
    if kind == "click":
        element = _props(row.get("element"))
        return row["type"] == "click" and (
            (not goal.get("selector") or element.get("selector") == goal["selector"])
            and (not goal.get("text") or (element.get("text") or "").strip() == goal["text"])
        )
    if row["type"] != "custom" or row.get("name") != goal["name"]:
        return False
    props = _props(row.get("props"))
    for c in goal.get("properties", []):
        value = props.get(c["key"])
        shown = str(value).lower() if isinstance(value, bool) else str(value)
        if c["op"] == "eq" and (value is None or shown != c["value"]):
            return False
    return True


def brute(
    rows: Iterable[dict[str, Any]],
    goals: dict[str, dict[str, Any]],
    digests: dict[str, str],
    dimensions_of: Callable[[Any], dict[str, str | None]],
) -> dict[tuple[str, str, str], tuple[int, int, int]]:
    """{(digest, dimension, value): (conversions, sessions, users)}, the total's dimension
    and value empty; `digests`: each goal's by name (goals_add); `dimensions_of(session
    id)` gives a session's breakdown values."""
    found: dict[tuple[str, str, str], list[Any]] = defaultdict(lambda: [0, set(), set()])
    for row in rows:
        if row.get("is_bot"):
            continue
        for name, goal in goals.items():
            if not matches(goal, row):
                continue
            digest = digests[name]
            dims = dimensions_of(row["session_id"])
            keys = [("", "")] + [(d, dims.get(d) or "(none)") for d in BREAKS]
            for dimension, value in keys:
                entry = found[digest, dimension, value]
                entry[0] += 1
                entry[1].add(row["session_id"])
                entry[2].add(row["user_key"])
    return {key: (n, len(s), len(u)) for key, (n, s, u) in found.items()}


def plain(counts: dict[Any, Any]) -> dict[tuple[str, str, str], tuple[int, int, int]]:
    """Stored or counted goal numbers as comparable data."""
    return {key: (e.conversions, e.sessions, e.users) for key, e in counts.items()}
