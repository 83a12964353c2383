"""A plan's version: the write timestamp that orders the session summaries it writes.

A session's summary rows (user_sessions, site_sessions) are overwritten whole by every
plan that touches the session, `USING TIMESTAMP` the plan's version, so the highest
version stays. Requests of one visitor are sessionized one at a time (the visitor's Redis
lock), each on the state the one before left; but they may take the lock in another order
than they arrived — a beacon sent beside a smaller one on unload is parsed longer and
reaches the lock second. Versioned by receipt time alone, the summary computed last, on
every event, lost to the smaller one computed before it. So a plan's version is its
receipt time, or one microsecond above the version of every summary it rebuilt (carried
by the cached state, `SessionState.version`, or read back as the row's write time),
whichever is later: summaries are ordered as they were computed.

The bound: a state this plan read was computed by a request that had arrived before this
one took the lock, so the version exceeds this request's receipt time by at most the time
it took to reach the lock, plus a microsecond per plan computed within the same
microsecond; and never by more than `write_deadline_seconds()`, the time after which a
request writes nothing (pipeline._within_deadline). A request accepted before an
erasure's suppression thus writes below the erasure's deletes, stamped
ERASURE_SETTLE_SECONDS after it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping

from django.conf import settings

from sessions_app.ingest.plan import Plan, SessionSummary, version_of
from sessions_app.ingest.sessionizer import Sessionizer, SessionState


def write_deadline_seconds() -> int:
    """Return how long after its receipt a request may still write (0: no deadline)."""
    return max(0, settings.ERASURE_SETTLE_SECONDS - settings.SUPPRESSION_CACHE_SECONDS - 1)


def plan_version(received: int, read: Iterable[int]) -> int:
    """Return the version of a plan received at `received` (µs) that rebuilt summaries
    of these versions: above each of them, at most the write deadline past receipt."""
    above = max(read, default=0) + 1
    return max(received, min(above, received + write_deadline_seconds() * 1_000_000))


def summary_of(site_id: uuid.UUID, user_key: str, state: SessionState) -> SessionSummary:
    """Return the user_sessions row of a session state (its version is the plan's)."""
    fields = vars(state).copy()
    del fields["version"]
    fields["dimensions"] = dict(state.dimensions)  # the state goes on changing
    return SessionSummary(site_id=site_id, user_key=user_key, **fields)


def plan_stamp(plan: Plan, sessionizers: Mapping[str, Sessionizer]) -> None:
    """Version the plan above every summary it rebuilt, add those summaries, and mark
    the states (cached for the next request) with the version they are written at."""
    touched = [(key, state) for key, s in sessionizers.items() for state in s.touched.values()]
    plan.version = plan_version(version_of(plan.received_at), (s.version for _, s in touched))
    for user_key, state in touched:
        state.version = plan.version
        plan.sessions.append(summary_of(plan.site_id, user_key, state))
