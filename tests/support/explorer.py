"""The session explorer's brute force: whether one session satisfies every filter, and
the values each filter can take over a set of sessions."""

from __future__ import annotations

from typing import Any

TEXT = {
    "country": "country",
    "device": "device",
    "browser": "browser",
    "os": "os",
    "source": "source",
    "medium": "medium",
    "campaign": "campaign",
    "entry": "entry_path",
    "exit": "exit_path",
}


def matches(session: dict[str, Any], filters: dict[str, Any]) -> bool:
    """The brute force: does one session satisfy every filter?"""
    for name, value in filters.items():
        if name in TEXT and session[TEXT[name]] != value:
            return False
        if name == "page" and value not in session["pages"]:
            return False
        if name == "event" and value not in session["events"]:
            return False
        if name == "converted" and session["converted"] != value:
            return False
        if name == "bot" and session["is_bot"] != value:
            return False
        if name == "identified" and session["identified"] != value:
            return False
        if name == "duration_min" and session["duration_s"] < value:
            return False
        if name == "duration_max" and session["duration_s"] > value:
            return False
        if name == "events_min" and session["event_count"] < value:
            return False
        if name == "events_max" and session["event_count"] > value:
            return False
    return True


def candidates(truth) -> dict[str, list[Any]]:
    """Values each filter can take: those of the sessions, plus one nobody has."""
    values: dict[str, list[Any]] = {}
    for name, column in TEXT.items():
        values[name] = [*sorted({s[column] for s in truth if s[column]}), "nowhere"]
    values["page"] = sorted({p for s in truth for p in s["pages"]})
    values["event"] = sorted({e for s in truth for e in s["events"]})
    for name in ("converted", "bot", "identified"):
        values[name] = [True, False]
    durations = sorted({s["duration_s"] for s in truth})
    counts = sorted({s["event_count"] for s in truth})
    values["duration_min"] = values["duration_max"] = durations
    values["events_min"] = values["events_max"] = counts
    return values
