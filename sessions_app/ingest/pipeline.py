"""The collector's write path: validate → dedupe → sessionize → log → apply.

`events_record` is the one entry point for every source (the tracker's /collect, the
Segment-compatible /v1 endpoints, generate_clicks). The accepted batch is in the
transaction log before it returns; then it is handed to the applier queue (ingest/
applier.py, when an applier runs) or written to the tables before returning. A failure
after the log write is repaired by `txlog_replay`, which re-applies unapplied entries.
"""

from __future__ import annotations

import logging
import time
import uuid
import zlib
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings

from sessions_app.aggregates.states import bucket_states_touch
from sessions_app.core import stamps, timebuckets
from sessions_app.core.ids import event_uuid, time_uuid
from sessions_app.ingest import apply, coordination, realtime
from sessions_app.ingest.apply import plan_apply
from sessions_app.ingest.order import Candidate, in_request_order, unique
from sessions_app.ingest.plan import (
    EventRow,
    Failure,
    Plan,
    Stats,
    hours_after,
    plan_without,
)
from sessions_app.ingest.redact import redactor
from sessions_app.ingest.rows import partial_shard
from sessions_app.ingest.sessionizer import Sessionizer, SessionState, Visit
from sessions_app.ingest.txlog import log_write
from sessions_app.ingest.validation import EventError, validate_event
from sessions_app.ingest.versions import plan_stamp, write_deadline_seconds
from sessions_app.ingest.visit import event_visit, visit_of
from sessions_app.ledger import suppression, widths
from sessions_app.ledger.quality import failed_payload
from sessions_app.models import Site
from sessions_app.tables import user_sessions

log = logging.getLogger(__name__)


class StorageUnavailable(Exception):
    """The batch could not be made durable; nothing was accepted, the client should retry."""


class Suppressed(EventError):
    """The event's user key was erased on request: rejected, and its payload never stored."""

    def __init__(self, field: str) -> None:
        super().__init__(field, "erased on request; not accepted")


def _check_suppressed(raw: Any, suppressed: frozenset[str]) -> None:
    """Reject an event of an erased key before validation, so even an invalid one is
    stored without its payload (validation keeps ids as sent, so this is exact)."""
    if not isinstance(raw, dict):
        return
    for name in ("anonymous_id", "user_id"):
        value = raw.get(name)
        if isinstance(value, str) and value in suppressed:
            raise Suppressed(name)


@dataclass(frozen=True)
class Source:
    """Where a batch came from and when it arrived."""

    site: Site
    received_at: datetime
    sent_at: datetime | None = None
    user_agent: str | None = None
    ip: str | None = None
    name: str = "collect"
    accept_language: str | None = None
    logged_at: datetime | None = None  # a backfill: written now, received_at in the past


@dataclass
class Outcome:
    """What happened to each event of a request."""

    accepted: int = 0
    duplicates: int = 0
    late: int = 0
    clamped: int = 0
    rejected: list[dict[str, Any]] = field(default_factory=list)
    batch_id: uuid.UUID | None = None
    queued: bool = False  # handed to the applier (else written before returning)

    def as_dict(self) -> dict[str, Any]:
        return {
            "accepted": self.accepted,
            "duplicates": self.duplicates,
            "rejected": self.rejected,
            "late": self.late,
            "clamped": self.clamped,
        }


def events_record(*, source: Source, raw_events: Sequence[Any]) -> Outcome:
    """Validate, dedupe, sessionize and durably record one request's events."""
    started = time.monotonic()
    site, received_at = source.site, timebuckets.as_utc(source.received_at)
    batch_id = time_uuid(received_at, uuid.uuid4().hex)
    outcome = Outcome(batch_id=batch_id)
    failures: list[Failure] = []
    reasons: Counter[str] = Counter()
    candidates = in_request_order(
        site.id, unique(_validate(source, raw_events, outcome, failures, reasons))
    )
    users = sorted({c.user_key for c in candidates})
    claim = coordination.begin(
        site_id=site.id,
        client_ids=[c.event.client_id for c in candidates],
        user_keys=users,
        dedup_ttl=int(settings.DEDUP_TTL.total_seconds()),
    )
    fresh = [c for c, new in zip(candidates, claim.fresh, strict=True) if new]
    visit = visit_of(
        user_agent=source.user_agent,
        ip=source.ip,
        accept_language=source.accept_language,
    )
    try:
        current = _load_states(site.id, sorted({c.user_key for c in fresh}), claim.states)
        if fresh:
            stored = _already_stored(site.id, fresh, current)
            fresh = [c for c in fresh if c.event_id not in stored]
        outcome.duplicates = len(raw_events) - len(outcome.rejected) - len(fresh)
        plan, states = _plan(source, batch_id, fresh, visit, current) if fresh else (None, {})
        stats = Stats(
            received=len(raw_events),
            accepted=len(fresh),
            duplicates=outcome.duplicates,
            late=sum(c.late for c in fresh),
            clamped=sum(c.clamped for c in fresh),
            rejected=dict(reasons),
        )
        _within_deadline(started)
        if plan is not None:
            plan = _without_erased(plan)
        payload = log_write(
            plan,
            site_id=site.id,
            batch_id=batch_id,
            received_at=received_at,
            failures=failures,
            stats=stats,
        )
    except Exception as exc:
        coordination.abandon(claim)
        if isinstance(exc, StorageUnavailable):
            raise
        raise StorageUnavailable(f"Cassandra: {type(exc).__name__}: {exc}") from exc
    outcome.queued = coordination.finish(
        claim,
        states={k: v.to_json() for k, v in states.items()},
        ttl=int((settings.SESSION_INACTIVITY + timedelta(minutes=5)).total_seconds()),
        enqueue=payload if settings.APPLY_QUEUE else None,
        now=None if visit.is_bot else realtime.of_candidates(fresh, now=received_at),
        minute=received_at,
    )
    outcome.accepted = len(fresh)
    outcome.late, outcome.clamped = stats.late, stats.clamped
    if plan is not None:
        _touch_buckets(site, plan)
        if not outcome.queued:  # no applier running (or the queue is full): write it now
            try:
                _within_deadline(started)
                plan_apply(_without_erased(plan), wait_for_mark=False)
            except Exception:  # the plan is in the log: the replay task finishes it
                log.exception("apply of batch %s failed; left for txlog_replay", batch_id)
    return outcome


def _within_deadline(started: float) -> None:
    """Refuse to write for a request that has run longer than an erasure waits.

    An erasure deletes ERASURE_SETTLE_SECONDS after it suppresses a key; a request that
    passed the suppression check before that must have written by then. Past this
    deadline nothing more is written: before the log write the request fails (503, and
    the client's retry meets the suppression); after it, the plan is left to the replay,
    which strips erased keys.
    """
    deadline = write_deadline_seconds()
    if deadline > 0 and time.monotonic() - started > deadline:
        raise StorageUnavailable("the request took too long to be written safely")


def _without_erased(plan: Plan) -> Plan:
    """The plan without the keys suppressed since its events were validated."""
    suppressed = suppression.suppressed_keys(site_id=plan.site_id)
    return plan_without(plan, suppressed) if suppressed else plan


def _touch_buckets(site: Site, plan: Plan) -> None:
    """Open the hour buckets this batch wrote to (and the shards it used); late events
    reopen sealed ones, and so does an event before later ones of its session (paths)."""
    hours: dict[datetime, tuple[int, int]] = {}
    # The batch's tallies (bucket_partials) go to one shard of each of its hours.
    tallies = partial_shard(plan.batch_id, plan.shards) + 1
    for event in plan.events:
        hour = timebuckets.floor(event.ts, timebuckets.Width.HOUR)
        late, shards = hours.get(hour, (0, tallies))
        hours[hour] = (late + int(event.late), max(shards, event.shard + 1))
    try:
        bucket_states_touch(site=site, hours=hours, reopen=hours_after(plan))
    except Exception:  # bookkeeping: the next batch for this hour records it again
        log.exception("bucket states not updated for batch %s", plan.batch_id)


def _validate(
    source: Source,
    raw_events: Sequence[Any],
    outcome: Outcome,
    failures: list[Failure],
    reasons: Counter[str],
) -> list[Candidate]:
    received_at = timebuckets.as_utc(source.received_at)
    skew = timedelta(0)
    if source.sent_at is not None:
        difference = received_at - source.sent_at
        if abs(difference) > settings.CLOCK_SKEW_TOLERANCE:
            # Whole milliseconds: a corrected time keeps its place within its millisecond.
            skew = timedelta(milliseconds=round(difference / timedelta(milliseconds=1)))
    candidates = []
    suppressed = suppression.suppressed_keys(site_id=source.site.id)
    redact = redactor(tuple(source.site.redact_params))
    for index, raw in enumerate(raw_events):
        try:
            if suppressed:
                _check_suppressed(raw, suppressed)
            event = redact.valid(validate_event(raw))  # no secret URL parameter is kept
            try:
                ts, clamped = event.ts + skew, False
            except OverflowError:  # ts and sent_at at opposite ends of the range
                raise EventError("ts", "out of range once corrected by sent_at") from None
            if ts > received_at + stamps.MAX_AHEAD:
                ts, clamped = timebuckets.floor_ms(received_at), True
            if ts < received_at - settings.MAX_EVENT_AGE:
                days = settings.MAX_EVENT_AGE.days
                raise EventError("ts", f"older than {days} days; not accepted")
        except EventError as exc:
            reason = f"events[{index}].{exc}"
            outcome.rejected.append({"index": index, "reason": reason})
            reasons[exc.field] += 1
            # An erased user's payload is exactly what must not be kept: reason only.
            payload = "" if isinstance(exc, Suppressed) else failed_payload(redact.payload(raw))
            failures.append(
                Failure(reason=reason, field=exc.field, payload=payload, source=source.name)
            )
            continue
        late = (
            timebuckets.next_start(ts, timebuckets.Width.HOUR) + settings.ALLOWED_LATENESS
            < received_at
        )
        order_ts = ts + timedelta(microseconds=event.sub_ms)
        candidates.append(
            Candidate(
                index=index,
                event=event,
                ts=ts,
                order_ts=order_ts,
                late=late,
                clamped=clamped,
                event_id=event_uuid(
                    site_id=source.site.id, client_event_id=event.client_id, ts=order_ts
                ),
            )
        )
    return candidates


def _load_states(
    site_id: uuid.UUID, user_keys: list[str], cached: dict[str, str | None]
) -> dict[str, SessionState | None]:
    """Return each user's current session from the Redis cache, else from Cassandra."""
    states: dict[str, SessionState | None] = {}
    if not user_keys:
        return states
    missing = []
    for user_key in user_keys:
        text = cached.get(user_key)
        if text:
            states[user_key] = SessionState.from_json(text)
        else:
            missing.append(user_key)
    latest = user_sessions.sessions_latest(site_id=site_id, user_keys=missing)
    for user_key in missing:
        row = latest.get(user_key)
        states[user_key] = SessionState.from_row(row) if row else None
    return states


def _already_stored(
    site_id: uuid.UUID, fresh: list[Candidate], current: dict[str, SessionState | None]
) -> set[uuid.UUID]:
    """Return the ids of events Redis called new that are already in Cassandra.

    Redis keeps no copy of its dedup marks: after a restart or a flush, or while it
    is down, a resent beacon looks new, and counting it again would inflate its
    session. Only an event no later than the end of its visitor's latest known
    session can have been stored before, so the others (a tracker's usual beacon)
    cost nothing; these are looked up in their user_events_by_bucket partitions.
    """
    maybe: dict[tuple[str, datetime], list[uuid.UUID]] = defaultdict(list)
    histories: dict[str, list[tuple[datetime, timebuckets.Width]]] | None = None
    for c in fresh:
        state = current.get(c.user_key)
        if state is None or c.ts > state.last_seen_at:
            continue
        if histories is None:
            histories = widths.user_widths(site_id)
        bucket = timebuckets.bucket_of(
            c.ts, settings.USER_EVENTS_BUCKET, histories.get(c.user_key, [])
        )
        maybe[c.user_key, bucket].append(c.event_id)
    return apply.user_events_present(site_id=site_id, partitions=maybe) if maybe else set()


def _plan(
    source: Source,
    batch_id: uuid.UUID,
    fresh: list[Candidate],
    visit: Visit,
    current: dict[str, SessionState | None],
) -> tuple[Plan, dict[str, SessionState]]:
    site, received_at = source.site, timebuckets.as_utc(source.received_at)
    by_user: dict[str, list[Candidate]] = defaultdict(list)
    for c in fresh:
        by_user[c.user_key].append(c)
    shards = max(1, site.event_shards)
    plan = Plan(
        site_id=site.id,
        batch_id=batch_id,
        received_at=received_at,
        version=0,  # versions.plan_stamp
        shards=shards,
        logged_at=source.logged_at and timebuckets.as_utc(source.logged_at),
    )
    states: dict[str, SessionState] = {}
    sessionizers: dict[str, Sessionizer] = {}
    links: set[tuple[str, str]] = set()
    for user_key, items in by_user.items():
        items.sort(key=lambda c: (c.order_ts, c.index))
        sessionizer = Sessionizer(
            site_id=site.id,
            current=current[user_key],
            history=lambda key=user_key: [  # type: ignore[misc]
                SessionState.from_row(r)
                for r in user_sessions.session_list(site_id=site.id, user_key=key, limit=50)
            ],
            gap=settings.SESSION_INACTIVITY,
            longest=settings.SESSION_MAX_DURATION,
            conversion_event=settings.CONVERSION_EVENT,
            acquire=settings.INGEST_ENRICHMENT,
        )
        for c in items:
            e = c.event
            seen = event_visit(visit, e.context) if e.context else visit
            state = sessionizer.assign(
                client_id=e.client_id,
                ts=c.ts,
                kind=e.type,
                name=e.name,
                url=e.url,
                anonymous_id=e.anonymous_id,
                user_id=e.user_id,
                visit=seen,
                referrer=e.referrer,
                context=e.context,
                viewport=e.viewport,
            )
            if e.user_id and e.anonymous_id != e.user_id:
                links.add((e.user_id, e.anonymous_id))
            plan.events.append(
                EventRow(
                    site_id=site.id,
                    user_key=user_key,
                    session_id=state.session_id,
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
                    layout=e.layout,
                    late=c.late,
                    clamped=c.clamped,
                    is_bot=seen.is_bot,
                    shard=zlib.crc32(c.event_id.bytes) % shards,
                )
            )
        sessionizers[user_key] = sessionizer
        if sessionizer.current is not None:
            states[user_key] = sessionizer.current
    plan.links = sorted(links)
    plan_stamp(plan, sessionizers)  # its version, above the summaries it rebuilt
    return plan, states
