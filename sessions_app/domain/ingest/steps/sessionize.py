"""Step sessionize: put each fresh event in its session (domain/ingest/sessionizer.py).

A visitor's events are taken in time order from the current session (Redis's cached
state, else the newest user_sessions row); an event older than that session reads the
visitor's recent sessions from user_sessions, and only then. A session is `converted`
once one of its events reaches one of the site's goals (as ingest last read them:
domain/goals/defs.site_goals_recent).
"""

from __future__ import annotations

import uuid
from collections import defaultdict

from django.conf import settings

from sessions_app.domain.goals.defs import Goal, site_goals_recent
from sessions_app.domain.ingest.context import Assigned, Sessions
from sessions_app.domain.ingest.order import Candidate
from sessions_app.domain.ingest.sessionizer import Sessionizer
from sessions_app.domain.ingest.state import SessionState
from sessions_app.domain.ingest.validation import ValidEvent
from sessions_app.domain.ingest.visit import Visit
from sessions_app.foundation.tables import user_sessions

HISTORY = 50  # recent sessions a late event is looked for in


def sessionize(
    site_id: uuid.UUID,
    fresh: list[Candidate],
    visits: list[Visit],
    current: dict[str, SessionState | None],
) -> Sessions:
    """Assign the fresh events to sessions, visitor by visitor, in time order."""
    found = Sessions(assigned=[], touched={}, states={})
    goals = site_goals_recent(site_id)
    by_user: dict[str, list[tuple[Candidate, Visit]]] = defaultdict(list)
    for c, visit in zip(fresh, visits, strict=True):
        by_user[c.user_key].append((c, visit))
    for user_key, items in by_user.items():
        items.sort(key=lambda item: (item[0].order_ts, item[0].index))
        sessionizer = _sessionizer(site_id, user_key, current[user_key])
        for c, visit in items:
            session_id = _assign(sessionizer, c, visit, goals)
            found.assigned.append(Assigned(candidate=c, session_id=session_id, visit=visit))
        found.touched[user_key] = list(sessionizer.touched.values())
        if sessionizer.current is not None:
            found.states[user_key] = sessionizer.current
    return found


def _sessionizer(site_id: uuid.UUID, user_key: str, current: SessionState | None) -> Sessionizer:
    def history() -> list[SessionState]:
        rows = user_sessions.session_list(site_id=site_id, user_key=user_key, limit=HISTORY)
        return [SessionState.from_row(r) for r in rows]

    return Sessionizer(
        site_id=site_id,
        current=current,
        history=history,
        gap=settings.SESSION_INACTIVITY,
        longest=settings.SESSION_MAX_DURATION,
        acquire=settings.INGEST_ENRICHMENT,
    )


def _assign(sessionizer: Sessionizer, c: Candidate, visit: Visit, goals: list[Goal]) -> uuid.UUID:
    e = c.event
    state = sessionizer.assign(
        client_id=e.client_id,
        ts=c.ts,
        kind=e.type,
        url=e.url,
        anonymous_id=e.anonymous_id,
        user_id=e.user_id,
        visit=visit,
        referrer=e.referrer,
        context=e.context,
        viewport=e.viewport,
        converts=bool(goals) and _converts(e, goals),
    )
    return state.session_id


def _converts(e: ValidEvent, goals: list[Goal]) -> bool:
    """Whether the event reaches one of the goals (their matchers read the stored row's
    fields: about 1 µs an event and goal)."""
    row = {"type": e.type, "name": e.name, "url": e.url, "element": e.element, "props": e.props}
    return any(goal.matches(row) for goal in goals)
