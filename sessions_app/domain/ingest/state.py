"""A session's state: its summary as it stands after the events assigned so far.

The sessionizer updates it in place; Redis caches each visitor's current state (JSON,
`state_key`) for SESSION_INACTIVITY + 5 minutes; the plan's session summary is the
state with its site and user key (domain/ingest/plan.py); `user_sessions` is the truth it is
read back from.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.dimensions import enriched

STATE_PREFIX = "cs:sess"


@dataclass
class SessionState:
    """A session's summary as it stands after the events assigned so far."""

    session_id: uuid.UUID
    started_at: datetime
    last_seen_at: datetime
    anonymous_id: str | None = None
    user_id: str | None = None
    event_count: int = 0
    pageview_count: int = 0
    click_count: int = 0
    entry_url: str | None = None
    exit_url: str | None = None
    converted: bool = False
    is_bot: bool = False
    ip_prefix: str | None = None
    # The session's enrichment: who, on what, from where, by dimension name (each as
    # foundation/dimensions.py derives it); set when the session starts, the landing event's
    # again whenever an earlier landing event arrives.
    dimensions: dict[str, str | None] = field(default_factory=dict)
    # The write timestamp (µs) of the summary this state was read from or written as:
    # the next plan that rebuilds the session is versioned above it (domain/ingest/versions.py).
    version: int = 0

    def covers(self, ts: datetime, *, gap: timedelta, longest: timedelta) -> bool:
        """Return True if an event at ts belongs to this session's time span."""
        return (
            self.started_at - gap <= ts <= self.last_seen_at + gap
            and max(ts, self.last_seen_at) - min(ts, self.started_at) <= longest
        )

    def flat(self) -> dict[str, Any]:
        """Return the state's fields with its dimensions among them (one level, by name)."""
        data = self.__dict__.copy()
        data.update(data.pop("dimensions"))
        return data

    @classmethod
    def of_flat(cls, data: dict[str, Any]) -> SessionState:
        """Build a state from `flat` fields. A name that is neither a field nor a dimension
        is left out: written by a release that had it (a state's user_agent, say)."""
        fields = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        dimensions = {d.name: data[d.name] for d in enriched() if d.name in data}
        return cls(**fields, dimensions=dimensions)

    def to_json(self) -> str:
        data = self.flat()
        data["session_id"] = str(self.session_id)
        data["started_at"] = self.started_at.isoformat()
        data["last_seen_at"] = self.last_seen_at.isoformat()
        return json.dumps(data, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> SessionState:
        data = json.loads(text)
        data["session_id"] = uuid.UUID(data["session_id"])
        data["started_at"] = datetime.fromisoformat(data["started_at"])
        data["last_seen_at"] = datetime.fromisoformat(data["last_seen_at"])
        return cls.of_flat(data)

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> SessionState:
        """Build the state of a user_sessions row (a `session_list` row)."""
        return cls(
            session_id=row["session_id"],
            started_at=timebuckets.from_driver(row["started_at"]),
            last_seen_at=timebuckets.from_driver(row["last_seen_at"]),
            anonymous_id=row.get("anonymous_id"),
            user_id=row.get("user_id"),
            event_count=row.get("event_count") or 0,
            pageview_count=row.get("pageview_count") or 0,
            click_count=row.get("click_count") or 0,
            entry_url=row.get("entry_url"),
            exit_url=row.get("exit_url"),
            converted=bool(row.get("converted")),
            is_bot=bool(row.get("is_bot")),
            ip_prefix=row.get("ip_prefix"),
            dimensions={d.name: row.get(d.column) for d in enriched()},
            version=row.get("version") or 0,  # the row's write time, when selected
        )


def state_key(site_id: uuid.UUID, user_key: str) -> str:
    """Return the Redis key of a visitor's cached state."""
    return f"{STATE_PREFIX}:{site_id}:{user_key}"
