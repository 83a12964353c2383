"""The collector's write path: validate → dedupe → sessionize → log → apply.

`events_record` is the one entry point for every source (the tracker's /collect,
the Segment-compatible /v1 endpoints, generate_clicks). The accepted batch is in
the transaction log before it returns; a failure after that point is repaired by
`txlog_replay`, which re-applies unapplied log entries.
"""

from __future__ import annotations

import json
import logging
import uuid
import zlib
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from redis.exceptions import RedisError

from sessions_app import buckets, selectors
from sessions_app.collector.identity import (
    Sessionizer,
    SessionState,
    Visit,
    state_key,
)
from sessions_app.collector.validation import EventError, ValidEvent, validate_event
from sessions_app.collector.visitor import anonymize_ip, is_bot_agent
from sessions_app.collector.writer import (
    EventRow,
    Failure,
    Plan,
    SessionSummary,
    Stats,
    log_write,
    plan_apply,
    plan_decode,
    version_of,
)
from sessions_app.ids import event_uuid, time_uuid
from sessions_app.models import ReplayWatermark, Site
from sessions_app.redis_client import redis_client

log = logging.getLogger(__name__)

DEDUP_PREFIX = "cs:ev"
LOCK_PREFIX = "cs:lock"


class StorageUnavailable(Exception):
    """The batch could not be made durable; nothing was accepted, the client should retry."""


@dataclass(frozen=True)
class Source:
    """Where a batch came from and when it arrived."""

    site: Site
    received_at: datetime
    sent_at: datetime | None = None
    user_agent: str | None = None
    ip: str | None = None
    name: str = "collect"


@dataclass
class Outcome:
    """What happened to each event of a request."""

    accepted: int = 0
    duplicates: int = 0
    late: int = 0
    clamped: int = 0
    rejected: list[dict[str, Any]] = field(default_factory=list)
    batch_id: uuid.UUID | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "accepted": self.accepted,
            "duplicates": self.duplicates,
            "rejected": self.rejected,
            "late": self.late,
            "clamped": self.clamped,
        }


@dataclass
class _Candidate:
    index: int
    event: ValidEvent
    ts: datetime
    event_id: uuid.UUID
    late: bool
    clamped: bool

    @property
    def user_key(self) -> str:
        return self.event.user_id or self.event.anonymous_id


def events_record(*, source: Source, raw_events: Sequence[Any]) -> Outcome:
    """Validate, dedupe, sessionize and durably record one request's events."""
    site, received_at = source.site, buckets.as_utc(source.received_at)
    batch_id = time_uuid(received_at, uuid.uuid4().hex)
    outcome = Outcome(batch_id=batch_id)
    failures: list[Failure] = []
    reasons: Counter[str] = Counter()
    candidates = _validate(source, raw_events, outcome, failures, reasons)

    fresh, dedup_keys = _dedupe(site.id, candidates)
    outcome.duplicates = len(candidates) - len(fresh)
    visit = Visit(
        user_agent=(source.user_agent or "")[:512] or None,
        ip_prefix=anonymize_ip(source.ip),
        is_bot=is_bot_agent(source.user_agent),
    )
    locks = _lock_users(site.id, {c.user_key for c in fresh})
    try:
        plan, states = _plan(site, batch_id, received_at, fresh, visit) if fresh else (None, {})
        stats = Stats(
            received=len(raw_events),
            accepted=len(fresh),
            duplicates=outcome.duplicates,
            late=sum(c.late for c in fresh),
            clamped=sum(c.clamped for c in fresh),
            rejected=dict(reasons),
        )
        try:
            log_write(
                plan,
                site_id=site.id,
                batch_id=batch_id,
                received_at=received_at,
                failures=failures,
                stats=stats,
            )
        except Exception as exc:
            _forget(dedup_keys)
            raise StorageUnavailable(f"Cassandra: {type(exc).__name__}: {exc}") from exc
        _remember_states(site.id, states)
    finally:
        _unlock(locks)

    outcome.accepted = len(fresh)
    outcome.late, outcome.clamped = stats.late, stats.clamped
    if plan is not None:
        try:
            plan_apply(plan)
        except Exception:  # the plan is in the log: the replay task finishes it
            log.exception("apply of batch %s failed; left for txlog_replay", batch_id)
    return outcome


def _validate(
    source: Source,
    raw_events: Sequence[Any],
    outcome: Outcome,
    failures: list[Failure],
    reasons: Counter[str],
) -> list[_Candidate]:
    received_at = buckets.as_utc(source.received_at)
    skew = timedelta(0)
    if source.sent_at is not None:
        difference = received_at - source.sent_at
        if abs(difference) > settings.CLOCK_SKEW_TOLERANCE:
            skew = difference
    candidates = []
    for index, raw in enumerate(raw_events):
        try:
            event = validate_event(raw)
            ts, clamped = event.ts + skew, False
            if ts > received_at + timedelta(hours=24):
                ts, clamped = received_at, True
            if ts < received_at - settings.MAX_EVENT_AGE:
                days = settings.MAX_EVENT_AGE.days
                raise EventError("ts", f"older than {days} days; not accepted")
        except EventError as exc:
            reason = f"events[{index}].{exc}"
            outcome.rejected.append({"index": index, "reason": reason})
            reasons[exc.field] += 1
            failures.append(
                Failure(reason=reason, field=exc.field, payload=_raw_text(raw), source=source.name)
            )
            continue
        late = buckets.next_start(ts, buckets.Width.HOUR) + settings.ALLOWED_LATENESS < received_at
        candidates.append(
            _Candidate(
                index=index,
                event=event,
                ts=ts,
                late=late,
                clamped=clamped,
                event_id=event_uuid(site_id=source.site.id, client_event_id=event.client_id, ts=ts),
            )
        )
    return candidates


def _raw_text(raw: Any) -> str:
    try:
        return json.dumps(raw, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        return repr(raw)


def _dedupe(site_id: uuid.UUID, candidates: list[_Candidate]) -> tuple[list[_Candidate], list[str]]:
    """Keep the first sighting of each client event id (Redis SET NX, DEDUP_TTL)."""
    seen: set[str] = set()
    unique = []
    for c in candidates:
        if c.event.client_id not in seen:
            seen.add(c.event.client_id)
            unique.append(c)
    if not unique:
        return [], []
    keys = [f"{DEDUP_PREFIX}:{site_id}:{c.event.client_id}" for c in unique]
    ttl = int(settings.DEDUP_TTL.total_seconds())
    pipe = redis_client().pipeline(transaction=False)
    for key in keys:
        pipe.set(key, 1, nx=True, ex=ttl)
    try:
        firsts = pipe.execute()
    except RedisError:
        # Without Redis, rows stay idempotent (deterministic ids); only the
        # duplicate count is lost.
        log.warning("dedup skipped: Redis unavailable")
        return unique, []
    fresh = [c for c, first in zip(unique, firsts, strict=True) if first]
    return fresh, [k for k, first in zip(keys, firsts, strict=True) if first]


def _forget(keys: list[str]) -> None:
    if keys:
        try:
            redis_client().delete(*keys)
        except RedisError:
            log.warning("could not release %d dedup keys", len(keys))


def _lock_users(site_id: uuid.UUID, user_keys: set[str]) -> list[Any]:
    """Take each user's sessionization lock (sorted, so two batches never deadlock)."""
    locks = []
    for user_key in sorted(user_keys):
        lock = redis_client().lock(
            f"{LOCK_PREFIX}:{site_id}:{user_key}", timeout=10, blocking_timeout=5
        )
        try:
            if lock.acquire():
                locks.append(lock)
        except RedisError:
            log.warning("sessionization lock unavailable for %s", user_key)
    return locks


def _unlock(locks: list[Any]) -> None:
    for lock in locks:
        try:
            lock.release()
        except Exception:  # noqa: BLE001 - an expired lock needs no release
            log.debug("lock %s already released", lock.name)


def _load_states(site_id: uuid.UUID, user_keys: list[str]) -> dict[str, SessionState | None]:
    """Return each user's current session from Redis, else from Cassandra (the truth)."""
    try:
        cached = redis_client().mget([state_key(site_id, k) for k in user_keys])
    except RedisError:
        cached = [None] * len(user_keys)
    states: dict[str, SessionState | None] = {}
    for user_key, text in zip(user_keys, cached, strict=True):
        if text:
            states[user_key] = SessionState.from_json(text)
            continue
        latest = selectors.session_list(site_id=site_id, user_key=user_key, limit=1)
        states[user_key] = SessionState.from_row(latest[0]) if latest else None
    return states


def _remember_states(site_id: uuid.UUID, states: dict[str, SessionState]) -> None:
    if not states:
        return
    ttl = int((settings.SESSION_INACTIVITY + timedelta(minutes=5)).total_seconds())
    pipe = redis_client().pipeline(transaction=False)
    for user_key, state in states.items():
        pipe.set(state_key(site_id, user_key), state.to_json(), ex=ttl)
    try:
        pipe.execute()
    except RedisError:
        log.warning("session cache not updated: Redis unavailable")


def _plan(
    site: Site, batch_id: uuid.UUID, received_at: datetime, fresh: list[_Candidate], visit: Visit
) -> tuple[Plan, dict[str, SessionState]]:
    by_user: dict[str, list[_Candidate]] = defaultdict(list)
    for c in fresh:
        by_user[c.user_key].append(c)
    current = _load_states(site.id, list(by_user))
    plan = Plan(
        site_id=site.id, batch_id=batch_id, received_at=received_at, version=version_of(received_at)
    )
    states: dict[str, SessionState] = {}
    links: set[tuple[str, str]] = set()
    shards = max(1, site.event_shards)
    for user_key, items in by_user.items():
        items.sort(key=lambda c: (c.ts, c.index))
        sessionizer = Sessionizer(
            site_id=site.id,
            current=current[user_key],
            history=lambda key=user_key: [  # type: ignore[misc]
                SessionState.from_row(r)
                for r in selectors.session_list(site_id=site.id, user_key=key, limit=50)
            ],
            gap=settings.SESSION_INACTIVITY,
            longest=settings.SESSION_MAX_DURATION,
            conversion_event=settings.CONVERSION_EVENT,
        )
        for c in items:
            e = c.event
            state = sessionizer.assign(
                client_id=e.client_id,
                ts=c.ts,
                kind=e.type,
                name=e.name,
                url=e.url,
                anonymous_id=e.anonymous_id,
                user_id=e.user_id,
                visit=visit,
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
                    late=c.late,
                    clamped=c.clamped,
                    is_bot=visit.is_bot,
                    shard=zlib.crc32(c.event_id.bytes) % shards,
                )
            )
        for state in sessionizer.snapshot():
            plan.sessions.append(
                SessionSummary(
                    site_id=site.id,
                    user_key=user_key,
                    session_id=state.session_id,
                    started_at=state.started_at,
                    last_seen_at=state.last_seen_at,
                    anonymous_id=state.anonymous_id,
                    user_id=state.user_id,
                    event_count=state.event_count,
                    pageview_count=state.pageview_count,
                    click_count=state.click_count,
                    entry_url=state.entry_url,
                    exit_url=state.exit_url,
                    converted=state.converted,
                    is_bot=state.is_bot,
                    user_agent=state.user_agent,
                    ip_prefix=state.ip_prefix,
                )
            )
        if sessionizer.current is not None:
            states[user_key] = sessionizer.current
    plan.links = sorted(links)
    return plan, states


def txlog_replay(*, now: datetime, max_buckets: int = 24) -> int:
    """Apply transaction-log entries that were never marked applied; return how many.

    Each site's log is scanned from its watermark up to now minus the replay
    grace (entries younger than that may still be applying), at most
    `max_buckets` log buckets per site per run; the watermark then advances.
    """
    now = buckets.as_utc(now)
    horizon = buckets.floor(now - settings.TXLOG_REPLAY_GRACE, buckets.Width.TEN_MINUTES)
    replayed = 0
    for site in Site.objects.all():
        mark = ReplayWatermark.objects.filter(site=site).first()
        start = mark.replayed_through if mark else horizon - settings.TXLOG_REPLAY_WINDOW
        scanned = buckets.buckets_between(start, now, buckets.Width.TEN_MINUTES)[:max_buckets]
        for bucket in scanned:
            for entry in selectors.txlog_unapplied(
                site_id=site.id,
                minute=bucket,
                shards=settings.TXLOG_SHARDS,
                received_before=now - settings.TXLOG_REPLAY_GRACE,
            ):
                plan_apply(plan_decode(entry))
                replayed += 1
        # Only buckets fully behind the horizon are done; the newest stays open.
        done = [b for b in scanned if buckets.next_start(b, buckets.Width.TEN_MINUTES) <= horizon]
        if done:
            through = buckets.next_start(done[-1], buckets.Width.TEN_MINUTES)
            ReplayWatermark.objects.update_or_create(
                site=site, defaults={"replayed_through": through}
            )
    return replayed
