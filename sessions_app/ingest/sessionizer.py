"""Sessionization: which session each event belongs to.

Rules: events of one site and user key belong to one session while the gap
between them is at most SESSION_INACTIVITY and the session is at most
SESSION_MAX_DURATION long. Redis caches each visitor's current session; Cassandra
(`user_sessions`) is the truth, read when Redis has nothing (expired or flushed)
and when a late event needs an older session that covers its time.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sessions_app.core import timebuckets
from sessions_app.core.ids import time_uuid
from sessions_app.ingest.enrich import NO_AGENT, Acquisition, Agent, acquisition, viewport_class
from sessions_app.tables.dimensions import AGENT, LANDING, LAYOUT, VISITOR, by_derivation, enriched

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
    user_agent: str | None = None  # no longer set (only what it yields is kept); old states have it
    ip_prefix: str | None = None
    # Enrichment: who, on what, from where, by dimension name (tables/dimensions.py says
    # how each is derived); set when the session starts, the landing event's again
    # whenever an earlier landing event arrives. Kept flat in the JSON, beside the fields.
    dimensions: dict[str, str | None] = field(default_factory=dict)
    # The write timestamp (µs) of the summary this state was read from or written as:
    # the next plan that rebuilds the session is versioned above it (ingest/versions.py).
    version: int = 0

    def covers(self, ts: datetime, *, gap: timedelta, longest: timedelta) -> bool:
        """Return True if an event at ts belongs to this session's time span."""
        return (
            self.started_at - gap <= ts <= self.last_seen_at + gap
            and max(ts, self.last_seen_at) - min(ts, self.started_at) <= longest
        )

    def to_json(self) -> str:
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        data.update(data.pop("dimensions"))
        data["session_id"] = str(self.session_id)
        data["started_at"] = self.started_at.isoformat()
        data["last_seen_at"] = self.last_seen_at.isoformat()
        return json.dumps(data, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> SessionState:
        data = json.loads(text)
        fields = {k: data.pop(k) for k in cls.__dataclass_fields__ if k in data}
        fields["session_id"] = uuid.UUID(fields["session_id"])
        fields["started_at"] = datetime.fromisoformat(fields["started_at"])
        fields["last_seen_at"] = datetime.fromisoformat(fields["last_seen_at"])
        return cls(**fields, dimensions=data)

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> SessionState:
        fields: dict[str, Any] = {k: row.get(k) for k in cls.__dataclass_fields__}
        fields["started_at"] = timebuckets.from_driver(row["started_at"])
        fields["last_seen_at"] = timebuckets.from_driver(row["last_seen_at"])
        for name in ("event_count", "pageview_count", "click_count"):
            fields[name] = fields[name] or 0
        fields["converted"] = bool(fields["converted"])
        fields["version"] = fields["version"] or 0  # the row's write time, when selected
        fields["is_bot"] = bool(fields["is_bot"])
        fields["dimensions"] = {d.name: row.get(d.column) for d in enriched()}
        return cls(**fields)


@dataclass(frozen=True)
class Visit:
    """What the collector knows about the visitor beyond each event."""

    ip_prefix: str | None
    is_bot: bool
    agent: Agent = NO_AGENT
    country: str | None = None
    language: str | None = None


def _visitor(target: SessionState, visit: Visit) -> None:
    """Stamp the visitor's dimensions: its agent's, and those the session lacks yet."""
    known = target.dimensions
    for d in by_derivation(AGENT):
        known[d.name] = getattr(visit.agent, d.derived[1])
    for d in by_derivation(VISITOR):
        known[d.name] = known.get(d.name) or getattr(visit, d.derived[1])


def _landing(target: SessionState, came: Acquisition, viewport: str | None) -> None:
    """Stamp the landing event's dimensions: where it came from, its layout if known."""
    known = target.dimensions
    for d in by_derivation(LANDING):
        known[d.name] = getattr(came, d.derived[1])
    for d in by_derivation(LAYOUT):
        known[d.name] = viewport or known.get(d.name)


def state_key(site_id: uuid.UUID, user_key: str) -> str:
    return f"{STATE_PREFIX}:{site_id}:{user_key}"


def session_id_for(site_id: uuid.UUID, first_client_id: str, first_ts: datetime) -> uuid.UUID:
    """Return the TimeUUID of a session from its first event (deterministic)."""
    return time_uuid(first_ts, f"session:{site_id}:{first_client_id}")


class Sessionizer:
    """Assign one user's time-ordered events to sessions, starting from a known state.

    `history` lazily returns the user's recent sessions (newest first) from
    Cassandra; it is only called for events older than the current session.
    """

    def __init__(
        self,
        *,
        site_id: uuid.UUID,
        current: SessionState | None,
        history: Callable[[], list[SessionState]],
        gap: timedelta,
        longest: timedelta,
        conversion_event: str,
        acquire: bool = True,
    ) -> None:
        self.site_id = site_id
        self.current = current
        self._history = history
        self._older: list[SessionState] | None = None
        self.gap = gap
        self.longest = longest
        self.conversion_event = conversion_event
        self.acquire = acquire  # derive source / medium / campaign at landing events
        self.touched: dict[uuid.UUID, SessionState] = {}

    def assign(
        self,
        *,
        client_id: str,
        ts: datetime,
        kind: str,
        name: str | None,
        url: str | None,
        anonymous_id: str,
        user_id: str | None,
        visit: Visit,
        referrer: str | None = None,
        context: dict[str, Any] | None = None,
        viewport: int | None = None,
    ) -> SessionState:
        """Return the session (updated in place) that the event belongs to."""
        target = self._find(ts)
        landing = url is not None and (
            target is None or ts < target.started_at or target.entry_url is None
        )
        if target is None:
            target = SessionState(
                session_id=session_id_for(self.site_id, client_id, ts),
                started_at=ts,
                last_seen_at=ts,
                anonymous_id=anonymous_id,
                user_id=user_id,
                entry_url=url,
                exit_url=url,
                is_bot=visit.is_bot,
                ip_prefix=visit.ip_prefix,
            )
            if self.current is None or ts >= self.current.started_at:
                self.current = target
        # Entry and exit pages are the first and last URL seen: an event without one
        # (a server-side identify or track) changes the times, not the pages.
        if ts < target.started_at:
            target.started_at, target.entry_url = ts, url or target.entry_url
        elif target.entry_url is None:
            target.entry_url = url
        if ts >= target.last_seen_at:
            target.last_seen_at, target.exit_url = ts, url or target.exit_url
        elif target.exit_url is None:
            target.exit_url = url
        target.event_count += 1
        target.pageview_count += kind == "pageview"
        target.click_count += kind == "click"
        target.converted = target.converted or (kind == "custom" and name == self.conversion_event)
        target.user_id = target.user_id or user_id
        target.is_bot = target.is_bot or visit.is_bot
        # New, or begun by a server-side event (no agent): the first browser's.
        if not any(target.dimensions.get(d.name) for d in by_derivation(AGENT)):
            _visitor(target, visit)
        if landing and self.acquire:
            _landing(target, acquisition(url, referrer, context), viewport_class(viewport))
        self.touched[target.session_id] = target
        return target

    def _find(self, ts: datetime) -> SessionState | None:
        current = self.current
        if current is not None and current.covers(ts, gap=self.gap, longest=self.longest):
            return current
        if current is not None and ts >= current.started_at:
            return None  # past the current session's inactivity or length limit: a new one
        for older in self._older_sessions():
            if older.covers(ts, gap=self.gap, longest=self.longest):
                return older
        return None

    def _older_sessions(self) -> list[SessionState]:
        if self._older is None:
            current_id = self.current.session_id if self.current else None
            self._older = [
                self.touched.get(s.session_id, s)
                for s in self._history()
                if s.session_id != current_id
            ]
        return self._older
