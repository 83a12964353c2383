"""The breakdowns' brute force: each dimension's sessions, users and conversions counted
from the sessions themselves, and a stored breakdown as the same plain tuples."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sessions_app.domain.aggregates import breakdowns


def brute(sessions: list[dict[str, Any]]) -> dict[str, dict[str, tuple[int, int, int]]]:
    """dimension -> value -> (sessions, users, conversions) of the human sessions given."""
    counted: dict[str, dict[str, list[Any]]] = {
        name: defaultdict(lambda: [0, set(), 0]) for name in breakdowns.names()
    }
    for s in sessions:
        if s["is_bot"]:
            continue
        for name, column in breakdowns.names().items():
            entry = counted[name][s[column] or breakdowns.NONE]
            entry[0] += 1
            entry[1].add(s["user_key"])
            entry[2] += bool(s["converted"])
    return {
        name: {v: (n, len(users), c) for v, (n, users, c) in values.items()}
        for name, values in counted.items()
    }


def stored(found: breakdowns.Breakdown) -> dict[str, dict[str, tuple[int, int, int]]]:
    return {
        name: {v: (e.sessions, e.users, e.conversions) for v, e in values.items()}
        for name, values in found.items()
    }
