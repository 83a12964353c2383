"""The rows of a plan's sessions, each with its partition key: the user_sessions summary and
its latest_sessions entry, the site_sessions row the explorer filters, identity links and
the user properties identify events set. Each table names its parameters (tables/*)."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable

from sessions_app.domain.ingest.plan import Plan, version_of
from sessions_app.domain.ingest.rows import Keyed
from sessions_app.domain.ingest.state import SessionState
from sessions_app.domain.ledger import policies
from sessions_app.foundation.core import eventnames, pagepaths, stamps, timebuckets
from sessions_app.foundation.core.cql import prepare
from sessions_app.foundation.core.ids import time_uuid, uuid_time
from sessions_app.foundation.core.jsonfmt import dumps
from sessions_app.foundation.dimensions import SUMMARY, by_derivation
from sessions_app.foundation.tables import (
    anonymous_links,
    identity_links,
    latest_sessions,
    retention_specs,
    site_sessions,
    user_directory,
    user_properties,
    user_sessions,
)

IDENTIFY = eventnames.IDENTIFY
ANONYMOUS = user_directory.ANONYMOUS_ID


def property_rows(plan: Plan) -> Iterable[Keyed]:
    """The user_properties cells of the traits the plan's identify events set.

    Write timestamps carry the event's time (its TimeUUID's microsecond): the value
    and last_set_at with it, first_set_at with it negated, so the latest and the
    earliest event win in any order of arrival or redo (foundation/tables/user_properties.py).
    An event dated ahead of its receipt counts as set at the latest stamp its request
    may bind (foundation/core/stamps.py), so an erasure's delete shadows it.
    """
    identifies = [e for e in plan.events if e.name == IDENTIFY and e.props]
    if not identifies:
        return
    set_value = prepare(user_properties.SET_VALUE, idempotent=True, write=True)
    set_first = prepare(user_properties.SET_FIRST, idempotent=True, write=True)
    ttl = policies.ttl_seconds(retention_specs.SESSIONS)
    # From the receipt, not plan.version: a version may lead its receipt
    # (domain/ingest/versions.py).
    ceiling = stamps.ceiling_us(version_of(plan.received_at))
    for e in identifies:
        micros = timebuckets.epoch_us(uuid_time(e.event_id))
        ts = timebuckets.as_utc(e.ts)
        key = ("up", e.site_id, e.user_key)
        for name, value in (e.props or {}).items():
            latest = user_properties.SetValue(
                timestamp=min(micros, ceiling),
                ttl=ttl,
                value=dumps(value).decode(),
                last_set_at=ts,
                site_id=e.site_id,
                user_key=e.user_key,
                name=name,
            )
            yield key, (set_value, latest)
            earliest = user_properties.SetFirst(
                timestamp=-micros,
                ttl=ttl,
                first_set_at=ts,
                site_id=e.site_id,
                user_key=e.user_key,
                name=name,
            )
            yield key, (set_first, earliest)


def _kept(seen: list[str], before: int, limit: int) -> list[str]:
    """The first of a batch's values a bounded set still takes, `before` being already in."""
    return seen[: max(0, limit - before)]


def explorer_rows(plan: Plan) -> Iterable[Keyed]:
    """The site_sessions row of each of the plan's sessions: its summary, filter columns
    and the pages and custom events of this batch added to its sets.

    A session's sets take the paths of its first MAX_PAGES page views and the names of
    custom events among its first MAX_EVENTS events (ordinals from the summary's counts,
    which already include this batch), so a row stays bounded whatever the visit.
    """
    if not plan.sessions:
        return
    upsert = prepare(
        site_sessions.with_dimensions(site_sessions.UPSERT), idempotent=True, write=True
    )
    ttl = policies.ttl_seconds(retention_specs.SESSIONS)
    pages: dict[uuid.UUID, list[str]] = defaultdict(list)
    names: dict[uuid.UUID, list[str]] = defaultdict(list)
    for e in plan.events:
        if e.type == "pageview":
            path = pagepaths.page_path(e.url)
            if path:
                pages[e.session_id].append(path)
        names[e.session_id].append(e.name if e.type == "custom" and e.name else "")
    for summary in plan.sessions:
        s = summary.state
        seen, done = pages.get(s.session_id, []), names.get(s.session_id, [])
        started, last = timebuckets.as_utc(s.started_at), timebuckets.as_utc(s.last_seen_at)
        site_id, day, shard, session_id = site_sessions.row_key(summary.site_id, s.session_id)
        dimensions = {**s.dimensions, **_paths(s)}
        row = site_sessions.upsert_params(
            timestamp=plan.version,
            ttl=ttl,
            user_key=summary.user_key,
            identified=s.user_id is not None,
            started_at=started,
            last_seen_at=last,
            duration_s=int((last - started).total_seconds()),
            event_count=s.event_count,
            pageview_count=s.pageview_count,
            converted=s.converted,
            is_bot=s.is_bot,
            dimensions=dimensions,
            # page views and events before this batch are the summary's less the batch's
            pages=set(_kept(seen, s.pageview_count - len(seen), site_sessions.MAX_PAGES)),
            events={
                n for n in _kept(done, s.event_count - len(done), site_sessions.MAX_EVENTS) if n
            },
            terms=site_sessions.terms_of(site_id, day, shard, dimensions),
            site_id=site_id,
            day=day,
            shard=shard,
            session_id=session_id,
        )
        yield ("ss", site_id, day, shard), (upsert, row)


def _paths(state: SessionState) -> dict[str, str | None]:
    """The dimensions of a session's summary URLs, as paths (entry and exit pages)."""
    return {
        d.name: pagepaths.page_path(getattr(state, d.derived[1])) for d in by_derivation(SUMMARY)
    }


def link_rows(plan: Plan) -> Iterable[Keyed]:
    """The identity_links and anonymous_links rows of the plan's (user id, anonymous id) pairs."""
    if not plan.links:
        return
    link = prepare(identity_links.INSERT, idempotent=True, write=True)
    reverse = prepare(anonymous_links.INSERT, idempotent=True, write=True)
    ttl = policies.longest_ttl_seconds(retention_specs.LINKS)
    site_id, linked_at = plan.site_id, plan.received_at
    for user, anon in plan.links:
        forward = identity_links.Row(
            site_id, user_id=user, anonymous_id=anon, linked_at=linked_at, ttl=ttl
        )
        yield ("l", site_id, user), (link, forward)
        back = anonymous_links.Row(
            site_id, anonymous_id=anon, user_id=user, linked_at=linked_at, ttl=ttl
        )
        yield ("al", site_id, anon), (reverse, back)


def directory_rows(plan: Plan) -> Iterable[Keyed]:
    """The user_directory rows a plan adds (foundation/tables/user_directory.py): a session that
    starts in it (all of its events are in this batch) or identifies in it names its user
    key and, once identified, its anonymous id; an identify's email trait its email.
    Nothing for a batch that only continues a session: the hot path stays as it was."""
    here: dict[uuid.UUID, int] = defaultdict(int)
    emails: list[tuple[str, str]] = []
    identified: set[uuid.UUID] = set()
    for e in plan.events:
        here[e.session_id] += 1
        if e.name == IDENTIFY:
            identified.add(e.session_id)
            email = (e.props or {}).get("email")
            if isinstance(email, str):
                emails.append((email, e.user_key))
    named: list[tuple[str, str, str]] = []  # (text, user key, kind)
    for summary in plan.sessions:
        s, key = summary.state, summary.user_key
        if s.event_count == here.get(s.session_id) or s.session_id in identified:
            named.append((key, key, user_directory.USER_ID if s.user_id else ANONYMOUS))
            if s.user_id and s.anonymous_id and s.anonymous_id != key:
                named.append((s.anonymous_id, key, ANONYMOUS))
    named += [(email, key, user_directory.EMAIL) for email, key in emails]
    if not named:
        return
    insert = prepare(user_directory.INSERT, idempotent=True, write=True)
    ttl = policies.ttl_seconds(retention_specs.SESSIONS)
    for text, key, kind in dict.fromkeys(named):
        for row in user_directory.rows_for(
            plan.site_id, text=text, user_key=key, kind=kind, ttl=ttl
        ):
            yield ("ud", row.site_id, row.prefix), (insert, row)


def summary_rows(plan: Plan) -> Iterable[Keyed]:
    """The user_sessions summary and the latest_sessions entry of each of the plan's sessions."""
    if not plan.sessions:
        return
    upsert = prepare(
        user_sessions.with_dimensions(user_sessions.UPSERT), idempotent=True, write=True
    )
    feed = prepare(latest_sessions.INSERT, idempotent=True, write=True)
    ttl = policies.ttl_seconds(retention_specs.SESSIONS)
    for summary in plan.sessions:
        site_id, user_key, s = summary.site_id, summary.user_key, summary.state
        started, last = timebuckets.as_utc(s.started_at), timebuckets.as_utc(s.last_seen_at)
        row = user_sessions.upsert_params(
            site_id=site_id,
            user_key=user_key,
            session_id=s.session_id,
            started_at=started,
            last_seen_at=last,
            anonymous_id=s.anonymous_id,
            user_id=s.user_id,
            event_count=s.event_count,
            pageview_count=s.pageview_count,
            click_count=s.click_count,
            entry_url=s.entry_url,
            exit_url=s.exit_url,
            converted=s.converted,
            is_bot=s.is_bot,
            ip_prefix=s.ip_prefix,
            dimensions=s.dimensions,
            timestamp=plan.version,
            ttl=ttl,
        )
        yield ("us", site_id, user_key), (upsert, row)
        sentinel = latest_sessions.feed_sentinel(user_key)
        entry = latest_sessions.Row(
            site_id=site_id,
            sentinel=sentinel,
            seen_id=time_uuid(s.last_seen_at, str(s.session_id)),
            session_id=s.session_id,
            user_key=user_key,
            started_at=s.started_at,
            last_seen_at=s.last_seen_at,
            event_count=s.event_count,
            entry_url=s.entry_url,
            exit_url=s.exit_url,
            is_bot=s.is_bot,
        )
        yield ("f", site_id, sentinel), (feed, entry)


def session_rows(plan: Plan) -> Iterable[Keyed]:
    """The summary and feed rows of a plan's sessions, its identity links and the user
    properties its identify events set, each with its partition key."""
    yield from property_rows(plan)
    yield from explorer_rows(plan)
    yield from link_rows(plan)
    yield from directory_rows(plan)
    yield from summary_rows(plan)
