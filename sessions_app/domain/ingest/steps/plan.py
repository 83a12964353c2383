"""Step plan: the rows the request writes (domain/ingest/plan.py), versioned
(domain/ingest/versions.py).

Each fresh event's row with its session and shard, the identity links its ids make, the
summary of every session it touched, the request's counts; then the keys erased since
validation are dropped.
"""

from __future__ import annotations

import zlib
from typing import Any

from sessions_app.domain.aggregates.vitals import NAME as VITALS
from sessions_app.domain.ingest.context import (
    Assigned,
    Deduped,
    Planned,
    Request,
    Sessions,
    Validated,
)
from sessions_app.domain.ingest.plan import EventRow, Plan, SessionSummary, Stats, plan_without
from sessions_app.domain.ingest.versions import plan_stamp
from sessions_app.domain.ledger import suppression
from sessions_app.foundation.core.timebuckets import as_utc


def plan(
    request: Request, received: int, validated: Validated, deduped: Deduped, sessions: Sessions
) -> Planned:
    """Make the request's plan (None when no event is fresh) and its counts."""
    fresh = deduped.fresh
    stats = Stats(
        received=received,
        accepted=len(fresh),
        duplicates=received - len(validated.rejected) - len(fresh),
        late=sum(c.late for c in fresh),
        clamped=sum(c.clamped for c in fresh),
        rejected=dict(validated.reasons),
    )
    if not fresh:
        return Planned(plan=None, stats=stats)
    source = request.source
    made = Plan(
        site_id=source.site.id,
        batch_id=request.batch_id,
        received_at=request.received_at,
        version=0,  # versions.plan_stamp
        shards=max(1, source.site.event_shards),
        logged_at=source.logged_at and as_utc(source.logged_at),
    )
    made.events = [_row(made, item) for item in sessions.assigned]
    made.links = sorted(
        {
            (e.user_id, e.anonymous_id)
            for e in (item.candidate.event for item in sessions.assigned)
            if e.user_id and e.anonymous_id != e.user_id
        }
    )
    plan_stamp(made, [s for states in sessions.touched.values() for s in states])
    made.sessions = [
        SessionSummary(site_id=made.site_id, user_key=user_key, state=state)
        for user_key, states in sessions.touched.items()
        for state in states
    ]
    return Planned(plan=plan_without_erased(made), stats=stats)


def _row(made: Plan, item: Assigned) -> EventRow:
    c, e = item.candidate, item.candidate.event
    return EventRow(
        site_id=made.site_id,
        user_key=c.user_key,
        session_id=item.session_id,
        event_id=c.event_id,
        type=e.type,
        ts=c.ts,
        name=e.name,
        url=e.url,
        referrer=e.referrer,
        title=e.title,
        element=e.element,
        props=e.props,
        context=e.context,
        layout=_layout(item),
        late=c.late,
        clamped=c.clamped,
        is_bot=item.visit.is_bot,
        shard=zlib.crc32(c.event_id.bytes) % made.shards,
    )


def _layout(item: Assigned) -> dict[str, Any] | None:
    """The event's layout; a `$vitals` event's also names the visitor's device, country and
    browser, which domain/aggregates/vitals.py splits by (the raw row keeps them for any reseal)."""
    e, visit = item.candidate.event, item.visit
    if e.name != VITALS or e.type != "custom":
        return e.layout
    seen = {"dev": visit.agent.device, "cc": visit.country, "br": visit.agent.browser}
    return {**(e.layout or {}), **{k: v for k, v in seen.items() if v}}


def plan_without_erased(made: Plan) -> Plan:
    """The plan without the keys suppressed since its events were validated."""
    suppressed = suppression.suppressed_keys(site_id=made.site_id)
    return plan_without(made, suppressed) if suppressed else made
