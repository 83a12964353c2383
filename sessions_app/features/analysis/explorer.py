"""The session explorer: a site's sessions in a time range, newest first, filtered.

Reads site_sessions one (site, day, shard) partition at a time with the filter's
clauses on indexed columns (Storage-Attached Indexes), so a selective filter costs
index lookups inside the partitions of the range, never a scan of their rows in
Python. Days are read newest first in waves (1, 2, 4, ... days, all shards of a
wave at once) until the page is full; a request reads at most MAX_PARTITIONS
partitions and otherwise answers a partial page with a cursor to go on from.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings

from sessions_app.features.web.params import iso, path_param
from sessions_app.features.web.periods import Period, capped, period_param
from sessions_app.foundation import dimensions, sources
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.core.ids import cassandra_order, time_uuid_bound, uuid_time
from sessions_app.foundation.models import Goal
from sessions_app.foundation.tables import site_sessions
from sessions_app.foundation.tables.site_sessions import filtered_params, still_matching
from sessions_app.foundation.tables.user_sessions import session_row

MAX_DAYS = 92  # a query's days (MAX_PARTITIONS covers them at two shards)
DEFAULT_LIMIT = 50
MAX_LIMIT = 200
MAX_PARTITIONS = 256  # partitions one request may read (92 days x 2 shards fit)
MAX_TEXT = 512

# Besides the dimensions that filter (foundation/dimensions.py; the URL parameter is the
# name, a path dimension's value a path such as "/pricing": a full URL is reduced to it):
TEXT_FILTERS = (("page", True), ("event", False))  # (name, whether a path)
BOOL_FILTERS = ("converted", "bot", "identified")
RANGE_FILTERS = ("duration_min", "duration_max", "events_min", "events_max")
# A goal of the site by id: the sessions that reached it (marked when the hour of the
# conversion sealed, or by the goal's backfill: docs/goals.md).
GOAL_FILTER = "goal"
# Sessions with a replay recording (marked when its first chunk is stored:
# features/replays/marks.py). Only true: a session without one carries no mark to match.
REPLAY_FILTER = "replay"
_TRUE, _FALSE = ("true", "1", "yes"), ("false", "0", "no")


def text_filters() -> list[tuple[str, bool]]:
    """(name, whether its value is a path) of each filter matched exactly."""
    return [*((d.name, d.is_path) for d in dimensions.filters()), *TEXT_FILTERS]


def filter_names() -> tuple[str, ...]:
    """Every filter's URL parameter, in the order a query's parameters list them."""
    return (
        *(name for name, _ in text_filters()),
        *BOOL_FILTERS,
        GOAL_FILTER,
        REPLAY_FILTER,
        *RANGE_FILTERS,
    )


@dataclass(frozen=True)
class ExplorerQuery:
    """A time range (read from `period`, its last MAX_DAYS days at most; `note` says
    when it was cut) and the filters that must all hold (name -> typed value)."""

    start: datetime
    end: datetime
    filters: dict[str, Any] = field(default_factory=dict)
    period: Period | None = None
    note: str = ""

    def params(self) -> dict[str, str]:
        """Return the query as URL parameters (what makes a filter shareable)."""
        values = (
            self.period.params()
            if self.period
            else {"start": iso(self.start), "end": iso(self.end)}
        )
        for name in filter_names():
            if name in self.filters:
                value = self.filters[name]
                values[name] = (
                    ("true" if value else "false") if isinstance(value, bool) else str(value)
                )
        return values


def explorer_query_parse(
    params: Mapping[str, str], *, now: datetime, zone: ZoneInfo | None = None
) -> ExplorerQuery:
    """Return the query the URL parameters ask for; RangeError naming the first bad one.

    The period as every page reads it (periods.py: period/from/to/compare in the site's
    `zone`, or the old start/end); a longer one is cut to its last 92 days (old start/end
    links past 92 days are refused, as they always were). Text filters match exactly;
    booleans are true/false (replay: true only); ranges are whole seconds or events.
    """
    period = period_param(params, zone=zone or ZoneInfo("UTC"), now=now)
    start, end, note = capped(period, MAX_DAYS, "Sessions cover")
    filters: dict[str, Any] = {}
    for name, is_path in text_filters():
        value = (params.get(name) or "").strip()
        if not value:
            continue
        if len(value) > MAX_TEXT:
            raise RangeError(name, f"at most {MAX_TEXT} characters")
        if name == "source":  # as ingest spells it: "google" finds Google's sessions
            value = sources.source_name(value) or value
        filters[name] = path_param(value) if is_path else value
    for name in BOOL_FILTERS:
        value = (params.get(name) or "").strip().lower()
        if not value or value == "any":
            continue
        if value not in (*_TRUE, *_FALSE):
            raise RangeError(name, "true, false or any")
        filters[name] = value in _TRUE
    goal = (params.get(GOAL_FILTER) or "").strip()
    if goal:
        if not goal.isdigit() or not 0 < int(goal) < 2**63:
            raise RangeError(GOAL_FILTER, "a goal's id (a whole number)")
        filters[GOAL_FILTER] = int(goal)
    replay = (params.get(REPLAY_FILTER) or "").strip().lower()
    if replay and replay != "any":
        if replay not in _TRUE:
            raise RangeError(REPLAY_FILTER, "true (sessions with a replay) or any")
        filters[REPLAY_FILTER] = True
    for name in RANGE_FILTERS:
        value = (params.get(name) or "").strip()
        if not value:
            continue
        try:
            number = int(value)
        except ValueError:
            raise RangeError(name, "not a whole number") from None
        if not 0 <= number <= 10**9:
            raise RangeError(name, "between 0 and 1000000000")
        filters[name] = number
    for low, high in (("duration_min", "duration_max"), ("events_min", "events_max")):
        if low in filters and high in filters and filters[low] > filters[high]:
            raise RangeError(high, f"must not be below {low}")
    return ExplorerQuery(start=start, end=end, filters=filters, period=period, note=note)


def filter_values(
    site_id: uuid.UUID, filters: Mapping[str, Any], names: tuple[str, ...]
) -> tuple[Any, ...]:
    """The filters' values as select_filtered(names) binds them: a goal's id as the digest
    its sessions are marked with; RangeError if it is no goal of the site."""
    values = []
    for name in names:
        value = filters[name]
        if name == GOAL_FILTER:
            digest = (
                Goal.objects.filter(site_id=site_id, pk=value)
                .values_list("digest", flat=True)
                .first()
            )
            if digest is None:
                raise RangeError(GOAL_FILTER, "no such goal on this site")
            value = digest
        values.append(value)
    return tuple(values)


def cursor_encode(value: uuid.UUID | datetime) -> str:
    text = f"s{value}" if isinstance(value, uuid.UUID) else f"d{iso(value)}"
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def cursor_decode(cursor: str) -> uuid.UUID | datetime:
    """Return what a cursor continues from: the last session shown, or a day not read yet."""
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        if text.startswith("s"):
            value = uuid.UUID(text[1:])
            if value.version == 1:
                return value
        elif text.startswith("d"):
            return datetime.fromisoformat(text[1:].replace("Z", "+00:00")).astimezone(UTC)
    except (ValueError, UnicodeDecodeError):
        pass
    raise RangeError("cursor", "not a cursor this API returned")


@dataclass
class ExplorerPage:
    sessions: list[dict[str, Any]]
    next_cursor: str | None
    partitions_read: int


def sessions_explore(
    *,
    site_id: uuid.UUID,
    query: ExplorerQuery,
    cursor: str | None = None,
    limit: int = DEFAULT_LIMIT,
) -> ExplorerPage:
    """Return one page of the sessions that started in the query's range and match it."""
    if not 1 <= limit <= MAX_LIMIT:
        raise RangeError("limit", f"between 1 and {MAX_LIMIT}")
    after: uuid.UUID | None = None
    upper = query.end
    if cursor:
        position = cursor_decode(cursor)
        if isinstance(position, uuid.UUID):
            after, upper = position, min(query.end, uuid_time(position))
        else:
            upper = min(query.end, position)
    if upper <= query.start and after is None:
        return ExplorerPage([], None, 0)
    names = tuple(sorted(query.filters))
    statement = prepare(site_sessions.select_filtered(names))
    values = filter_values(site_id, query.filters, names)
    shards = max(1, settings.SESSION_SHARDS)
    day = timebuckets.Width.DAY
    # The cursor's own day still has sessions older than it; an end bound is exclusive.
    newest = timebuckets.floor(upper if after else upper - _TICK, day)
    pending = timebuckets.buckets_between(
        timebuckets.floor(query.start, day), timebuckets.next_start(newest, day), day
    )[::-1]
    found: list[dict[str, Any]] = []
    read, wave, full = 0, 1, False
    while pending and len(found) < limit:
        take = min(wave, len(pending), (MAX_PARTITIONS - read) // shards)
        if take <= 0:  # this request's budget is spent: the next goes on from this day
            return _page(found, limit, read, resume=timebuckets.next_start(pending[0], day))
        days, pending = pending[:take], pending[take:]
        futures: list[Any] = []
        for d in days:
            low = time_uuid_bound(max(query.start, d))
            high = time_uuid_bound(min(upper, timebuckets.next_start(d, day)))
            if after is not None and read == 0 and d == days[0]:
                high = after
            futures.extend(
                cassandra_session().execute_async(
                    statement, filtered_params((site_id, d, shard), low, high, names, values, limit)
                )
                for shard in range(shards)
            )
        read += len(futures)
        for future in futures:
            rows = list(future.result())
            full = full or len(rows) >= limit
            found.extend(session_row(r) for r in still_matching(rows, names, values))
        wave *= 2
    return _page(found, limit, read, more=full or bool(pending))


_TICK = timedelta(microseconds=1)


def _page(
    found: list[dict[str, Any]],
    limit: int,
    read: int,
    *,
    more: bool = False,
    resume: datetime | None = None,
) -> ExplorerPage:
    """The newest `limit` sessions found, and where the next page starts: after the last
    of them when more may follow, else at `resume` (a day not read yet), else nowhere."""
    found.sort(key=lambda r: cassandra_order(r["session_id"]), reverse=True)
    page = found[:limit]
    cursor = None
    if page and (more or len(found) > limit):
        cursor = cursor_encode(page[-1]["session_id"])
    elif resume is not None:
        cursor = cursor_encode(resume)
    return ExplorerPage(page, cursor, read)
