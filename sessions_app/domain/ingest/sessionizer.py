"""Sessionization: which session each event belongs to.

Rules: events of one site and user key belong to one session while the gap
between them is at most SESSION_INACTIVITY and the session is at most
SESSION_MAX_DURATION long. Redis caches each visitor's current session; Cassandra
(`user_sessions`) is the truth, read when Redis has nothing (expired or flushed)
and when a late event needs an older session that covers its time.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from sessions_app.domain.ingest.enrich import Acquisition, acquisition, viewport_class
from sessions_app.domain.ingest.state import SessionState
from sessions_app.domain.ingest.visit import Visit
from sessions_app.foundation.core.ids import time_uuid
from sessions_app.foundation.dimensions import LANDING, LAYOUT, by_derivation


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
        acquire: bool = True,
    ) -> None:
        self.site_id = site_id
        self.current = current
        self._history = history
        self._older: list[SessionState] | None = None
        self.gap = gap
        self.longest = longest
        self.acquire = acquire  # derive source / medium / campaign at landing events
        self.touched: dict[uuid.UUID, SessionState] = {}

    def assign(
        self,
        *,
        client_id: str,
        ts: datetime,
        kind: str,
        url: str | None,
        anonymous_id: str,
        user_id: str | None,
        visit: Visit,
        referrer: str | None = None,
        context: dict[str, Any] | None = None,
        viewport: int | None = None,
        converts: bool = False,
    ) -> SessionState:
        """Return the session (updated in place) that the event belongs to; `converts`:
        the event reaches one of the site's goals (the session is then `converted`)."""
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
        target.converted = target.converted or converts
        target.user_id = target.user_id or user_id
        target.is_bot = target.is_bot or visit.is_bot
        if not visit.stamped(target):  # new, or begun by a server-side event
            visit.stamp(target)  # the first browser's
        if landing and self.acquire:
            _acquired(target.dimensions, acquisition(url, referrer, context), viewport)
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


def _acquired(dimensions: dict[str, str | None], came: Acquisition, viewport: int | None) -> None:
    """Set where a session came from, and its layout if known, at its landing event."""
    for d in by_derivation(LANDING):
        dimensions[d.name] = getattr(came, d.derived[1])
    layout = viewport_class(viewport)
    for d in by_derivation(LAYOUT):
        dimensions[d.name] = layout or dimensions.get(d.name)
