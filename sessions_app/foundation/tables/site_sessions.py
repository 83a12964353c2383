"""site_sessions: a site's sessions by the day they started, made for filtering.

The session explorer (features/analysis/explorer.py) and the breakdowns a seal counts
(features/analysis/breakdowns.py) read it. One row per session, written with the session's
summary by every batch that touches it; partitions are (site, day, shard) and every
filter has a Storage-Attached Index, so a filtered read touches one partition and the
index segments of its SSTables, never a scan (`INDEXES`, created after the schema sync;
a query on a column without its index fails).

The dimensions a session keeps from its start (`termed`: source, country, device…) are
looked up through partition-local terms, not an index on their columns: a SAI lookup
costs what the whole table holds under its term (16 reads of an empty partition: 3 ms
for a country no row has, 120 ms for device=mobile among 400,000 sessions), so each
term is prefixed with its partition's digest ("1a2b3c4d country=DE", `terms_of`) and a
lookup costs what its partition holds: 3 to 4 times faster for two filters (docs/analysis.md).
The columns still decide: a reader keeps a row only if its column holds the value
(`still_matching`), since a session's landing can move to an earlier event.

The table's schema (cqlengine, applied by sync_cassandra), every statement on it, and
its spec in the table registry (foundation/tables/registry.py).
"""

from __future__ import annotations

import uuid
import zlib
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from cassandra.cqlengine import columns
from cassandra.cqlengine.models import Model
from django.conf import settings

from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.ids import uuid_time
from sessions_app.foundation.core.timebuckets import Width
from sessions_app.foundation.dimensions import (
    SUMMARY,
    Dimension,
    explored,
    funnel_splits,
    statement,
)
from sessions_app.foundation.dimensions import filters as filtering
from sessions_app.foundation.tables import retention_specs
from sessions_app.foundation.tables.retention_specs import table_options
from sessions_app.foundation.tables.spec import TableSpec

# A session's sets hold the paths of its first MAX_PAGES page views and the custom
# events among its first MAX_EVENTS events (a visit of 5,000 product pages keeps its
# first 100): the row stays bounded.
MAX_PAGES = 100
MAX_EVENTS = 500

UPSERT = """
UPDATE {ks}.site_sessions USING TIMESTAMP ? AND TTL ?
SET user_key = ?, identified = ?, started_at = ?, last_seen_at = ?, duration_s = ?,
    event_count = ?, pageview_count = ?, converted = ?, is_bot = ?, <dimensions> = ?,
    pages = pages + ?, events = events + ?, terms = terms + ?
WHERE site_id = ? AND day = ? AND shard = ? AND session_id = ?
"""


def upsert_params(
    *,
    timestamp: int,
    ttl: int,
    user_key: str,
    identified: bool,
    started_at: datetime,
    last_seen_at: datetime,
    duration_s: int,
    event_count: int,
    pageview_count: int,
    converted: bool,
    is_bot: bool,
    dimensions: Mapping[str, str | None],
    pages: set[str],
    events: set[str],
    terms: set[str],
    site_id: uuid.UUID,
    day: datetime,
    shard: int,
    session_id: uuid.UUID,
) -> tuple[Any, ...]:
    """Return UPSERT's parameters in its order (`dimensions` by name, in the order of the
    columns `with_dimensions` lists; one the mapping lacks is null; pages, events: what
    the batch adds; terms: `terms_of` the row's key and dimensions)."""
    return (
        timestamp,
        ttl,
        user_key,
        identified,
        started_at,
        last_seen_at,
        duration_s,
        event_count,
        pageview_count,
        converted,
        is_bot,
        *(dimensions.get(d.name) for d in explored()),
        pages,
        events,
        terms,
        site_id,
        day,
        shard,
        session_id,
    )


def termed() -> tuple[Dimension, ...]:
    """The filtering dimensions looked up through the row's terms: those a session takes
    from its visitor, agent or landing (its entry and exit pages change as it goes on)."""
    return tuple(d for d in filtering() if d.derived[0] != SUMMARY)


def partition_digest(site_id: uuid.UUID, day: datetime, shard: int) -> str:
    """The prefix of a partition's terms: 8 hex digits of a CRC-32 of its key (two
    partitions sharing one only share their postings; the key still selects the rows)."""
    key = f"{site_id}|{timebuckets.epoch_us(day)}|{shard}".encode()
    return f"{zlib.crc32(key):08x}"


def term(digest: str, name: str, value: str) -> str:
    return f"{digest} {name}={value}"


def terms_of(
    site_id: uuid.UUID, day: datetime, shard: int, dimensions: Mapping[str, str | None]
) -> set[str]:
    """A row's terms: one per termed dimension it has a value for."""
    digest = partition_digest(site_id, day, shard)
    return {term(digest, d.name, v) for d in termed() if (v := dimensions.get(d.name))}


# The goals a session reached, marked when the hour of the conversion seals (the goals
# product: aggregates/goals.sessions_mark), as the goal's definition digest: a changed
# definition's old marks match no goal any more. The cell expires with the row (TTL).
MARK_GOALS = """
UPDATE {ks}.site_sessions USING TTL ? SET goals = goals + ?
WHERE site_id = ? AND day = ? AND shard = ? AND session_id = ?
"""

# A session with a replay recording, marked when its first chunk is stored
# (features/replays/marks.py: the explorer's `replay` filter). The cell expires with the recording
# or with the row, whichever is first (the TTL the caller binds).
MARK_REPLAY = """
UPDATE {ks}.site_sessions USING TTL ? SET replay = true
WHERE site_id = ? AND day = ? AND shard = ? AND session_id = ?
"""

DELETE_ROW = """
DELETE FROM {ks}.site_sessions WHERE site_id = ? AND day = ? AND shard = ? AND session_id = ?
"""

_COLUMNS = """
SELECT session_id, user_key, identified, started_at, last_seen_at, duration_s, event_count,
       pageview_count, converted, is_bot, <dimensions>
FROM {ks}.site_sessions
WHERE site_id = ? AND day = ? AND shard = ? AND session_id >= ? AND session_id < ?
"""

# What a period's KPIs and chart count (analysis/filtered.kpis_count): all a dashboard's
# comparison period reads (it has no breakdowns), a fifth less for the node to send.
_KPI_COLUMNS = """
SELECT session_id, user_key, started_at, duration_s, pageview_count, converted, is_bot<checked>
FROM {ks}.site_sessions
WHERE site_id = ? AND day = ? AND shard = ? AND session_id >= ? AND session_id < ?
"""

# A session's dimensions (those that split funnels: `funnel_statement`), for a funnel's
# breakdown (features/funnels/scan.py).
SELECT_DIMENSIONS = """
SELECT <dimensions> FROM {ks}.site_sessions
WHERE site_id = ? AND day = ? AND shard = ? AND session_id = ?
"""

# Every session that started on a day (one shard), with its dimensions.
SELECT_DAY_DIMENSIONS = """
SELECT session_id, <dimensions> FROM {ks}.site_sessions
WHERE site_id = ? AND day = ? AND shard = ?
"""

# A partition's rows with what their terms come from and how long each row still lives,
# and the terms added (domain/jobs/terms.py: rows written before the terms).
SELECT_TERMED = """
SELECT session_id, TTL(user_key) AS ttl, <dimensions> FROM {ks}.site_sessions
WHERE site_id = ? AND day = ? AND shard = ?
"""

ADD_TERMS = """
UPDATE {ks}.site_sessions USING TTL ? SET terms = terms + ?
WHERE site_id = ? AND day = ? AND shard = ? AND session_id = ?
"""

SELECT_SOURCE = """
SELECT source FROM {ks}.site_sessions WHERE site_id = ? AND day = ? AND shard = ? AND session_id = ?
"""

COUNT = """
SELECT session_id FROM {ks}.site_sessions WHERE site_id = ? AND day = ? AND shard = ? LIMIT ?
"""

# Every session that started on a day (one shard): the erasure's scan of the recordings.
SELECT_IDS = """
SELECT session_id FROM {ks}.site_sessions WHERE site_id = ? AND day = ? AND shard = ?
"""

SAMPLE = """
SELECT session_id, user_key, identified, started_at, last_seen_at, duration_s, event_count,
       pageview_count, converted, is_bot, <dimensions>, pages, events, terms
FROM {ks}.site_sessions WHERE site_id = ? AND day = ? AND shard = ? LIMIT ?
"""

# The sessions of a partition that started in [from, to): what a seal's breakdowns read.
SELECT_SLICE = _COLUMNS

# Filter clauses, each on an indexed column; a query ANDs those it uses (explorer).
# Those of the dimensions that filter come first (`filters`).
OTHER_FILTERS: dict[str, str] = {
    "page": "pages CONTAINS ?",
    "event": "events CONTAINS ?",
    "converted": "converted = ?",
    "goal": "goals CONTAINS ?",  # bound to the goal's digest (analysis/explorer.filter_values)
    "replay": "replay = ?",  # only true: a session without a recording has no value (MARK_REPLAY)
    "bot": "is_bot = ?",
    "identified": "identified = ?",
    "duration_min": "duration_s >= ?",
    "duration_max": "duration_s <= ?",
    "events_min": "event_count >= ?",
    "events_max": "event_count <= ?",
}


def with_dimensions(template: str) -> str:
    """The statement with the columns of the dimensions this table stores where the
    template says MARK (foundation/dimensions.py)."""
    return statement(template, explored())


def funnel_statement(template: str) -> str:
    """The statement with the columns of the dimensions that split funnels."""
    return statement(template, funnel_splits())


def filters() -> dict[str, str]:
    """Every filter's clause, by its name (a URL parameter); a termed dimension's binds
    its partition's term (`filtered_params`)."""
    looked_up = {d.name for d in termed()}
    found = {
        d.name: "terms CONTAINS ?" if d.name in looked_up else f"{d.column} = ?"
        for d in filtering()
    }
    return {**found, **OTHER_FILTERS}


def indexed() -> tuple[str, ...]:
    """The column each filter clause names, once (each has its index)."""
    return tuple(dict.fromkeys(clause.split(" ")[0] for clause in filters().values()))


INDEXES = (
    *(
        f"CREATE INDEX IF NOT EXISTS site_sessions_{column} ON {{ks}}.site_sessions ({column})"
        " USING 'sai'"
        for column in indexed()
    ),
    # The termed dimensions' column indexes of installations before the terms: unused.
    *(f"DROP INDEX IF EXISTS {{ks}}.site_sessions_{d.column}" for d in termed()),
)


def select_filtered(names: tuple[str, ...], *, kpis_only: bool = False) -> str:
    """Return the statement that reads one partition's sessions matching these filters
    (with `kpis_only`, only the columns KPIs count).

    Only the fixed clauses of `filters()` are joined (every value is a bind marker), in
    a canonical order, so each combination is one prepared statement.
    """
    clauses = filters()
    chosen = [clauses[name] for name in sorted(set(names))]
    if kpis_only:  # and the termed columns filtered on, which `still_matching` checks
        checked = "".join(f", {d.column}" for d in termed() if d.name in names)
        columns = _KPI_COLUMNS.replace("<checked>", checked)
    else:
        columns = with_dimensions(_COLUMNS)
    return " AND ".join([columns.strip(), *chosen]) + " LIMIT ?"


def filtered_params(
    key: tuple[uuid.UUID, datetime, int],
    low: uuid.UUID,
    high: uuid.UUID,
    names: tuple[str, ...],
    values: tuple[Any, ...],
    limit: int,
) -> tuple[Any, ...]:
    """What `select_filtered(names)` binds to read partition `key` (site, day, shard)
    between two session ids: a termed dimension's value as the partition's term."""
    looked_up = {d.name for d in termed()}
    digest = partition_digest(*key)
    binds = (
        term(digest, name, value) if name in looked_up else value
        for name, value in zip(sorted(set(names)), values, strict=True)
    )
    return (*key, low, high, *binds, limit)


def still_matching(
    rows: list[dict[str, Any]], names: tuple[str, ...], values: tuple[Any, ...]
) -> list[dict[str, Any]]:
    """The rows whose termed columns still hold the values filtered on (a term stays when
    an earlier landing event changes a session's source)."""
    by_name = dict(zip(sorted(set(names)), values, strict=True))
    wanted = {d.column: by_name[d.name] for d in termed() if d.name in by_name}
    if not wanted:
        return rows
    return [r for r in rows if all(r[c] == v for c, v in wanted.items())]


def session_shard(session_id: uuid.UUID) -> int:
    """Return the partition shard of a session (a hash of its id: the same on every write)."""
    return zlib.crc32(session_id.bytes) % max(1, settings.SESSION_SHARDS)


def row_key(site_id: uuid.UUID, session_id: uuid.UUID) -> tuple[Any, ...]:
    """Return a session's primary key: (site, the UTC day it started, shard, id)."""
    day = timebuckets.floor(uuid_time(session_id), Width.DAY)
    return (site_id, day, session_shard(session_id), session_id)


POLICIES = (retention_specs.SESSIONS,)


class SiteSession(Model):
    """One row per session, in the partition of the (site, UTC day, shard) it started in."""

    __table_name__ = "site_sessions"
    __options__ = table_options(policies=POLICIES, window=Width.DAY)

    site_id = columns.UUID(partition_key=True)
    day = columns.DateTime(partition_key=True)
    shard = columns.SmallInt(partition_key=True)
    session_id = columns.TimeUUID(primary_key=True, clustering_order="DESC")
    user_key = columns.Text()
    identified = columns.Boolean()  # a user id is known (else anonymous)
    started_at = columns.DateTime()
    last_seen_at = columns.DateTime()
    duration_s = columns.Integer()
    event_count = columns.Integer()
    pageview_count = columns.Integer()
    converted = columns.Boolean()
    is_bot = columns.Boolean()
    # One text column per dimension that breaks down, filters or splits funnels
    # (foundation/dimensions.py). In a class body locals() is the namespace itself (PEP 667
    # makes it the language's rule), which cqlengine's metaclass reads the columns from.
    locals().update({d.column: columns.Text() for d in explored()})
    pages = columns.Set(columns.Text)  # paths viewed (the first MAX_PAGES distinct)
    terms = columns.Set(columns.Text)  # "<partition digest> <dimension>=<value>" (`terms_of`)
    events = columns.Set(columns.Text)  # custom event names done (among the first MAX_EVENTS)
    goals = columns.Set(columns.Text)  # the digests of the goals reached (MARK_GOALS)
    replay = columns.Boolean()  # true once a replay chunk of the session is stored (MARK_REPLAY)


SPEC = TableSpec(
    policies=POLICIES,
    model=SiteSession,
    purge=None,
    erasure="_delete_sessions",
    sizing="probe_site_sessions",
    indexes=INDEXES,
)
