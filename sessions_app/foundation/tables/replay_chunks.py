"""replay_chunks: a session's replay recording (rrweb events), one gzip chunk a row.

The table's schema (cqlengine, applied by sync_cassandra), every statement on it, and
its spec in the table registry (foundation/tables/registry.py). docs/replay.md describes the chunks.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Any, NamedTuple

from cassandra.cqlengine import columns
from cassandra.cqlengine.models import Model

from sessions_app.foundation.core.bounds import bounded_limit
from sessions_app.foundation.core.cql import cassandra_session, prepare, read_windowed
from sessions_app.foundation.tables.retention_specs import table_options
from sessions_app.foundation.tables.spec import TableSpec

# The deepest nesting of a chunk's JSON (arrays and objects): the collector refuses a
# deeper chunk, its readers (the player, the erasure's scan) take one as unreadable. An
# rrweb snapshot nests two levels a DOM level, so this is a DOM about 250 elements deep;
# every JSON parser here reads it (orjson: 1,024 levels, the standard library's: about
# 1,000 minus its caller's stack).
MAX_JSON_DEPTH = 512

# The longest replay retention a site may choose (Site.replay_retention_days): the
# table's backstop TTL. Every write carries its site's own TTL.
MAX_RETENTION_DAYS = 365

INSERT = """
INSERT INTO {ks}.replay_chunks
  (site_id, session_id, page_start, seq, chunk_id, user_key, last_event_id, start_at, end_at,
   events, size, data)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
USING TTL ?
"""


class Row(NamedTuple):
    """The parameters of INSERT, in its order."""

    site_id: uuid.UUID
    session_id: uuid.UUID
    page_start: datetime
    seq: int
    chunk_id: uuid.UUID
    user_key: str
    last_event_id: uuid.UUID | None
    start_at: datetime
    end_at: datetime
    events: int
    size: int
    data: bytes
    ttl: int


# The player's read, in recording order: the first chunks first, then the next page.
SELECT_FIRST = """
SELECT page_start, seq, start_at, end_at, last_event_id, data FROM {ks}.replay_chunks
WHERE site_id = ? AND session_id = ? LIMIT ?
"""

SELECT_AFTER = """
SELECT page_start, seq, start_at, end_at, last_event_id, data FROM {ks}.replay_chunks
WHERE site_id = ? AND session_id = ? AND (page_start, seq) > (?, ?) LIMIT ?
"""

# Whether a session has a recording (the timeline page, "has replay").
PROBE = "SELECT seq FROM {ks}.replay_chunks WHERE site_id = ? AND session_id = ? LIMIT 1"

# The partition report (domain/partitions/probes.py): a session's chunks, and a sample of them.
COUNT = "SELECT seq FROM {ks}.replay_chunks WHERE site_id = ? AND session_id = ? LIMIT ?"

SAMPLE = """
SELECT page_start, seq, chunk_id, user_key, last_event_id, start_at, end_at, events, size, data
FROM {ks}.replay_chunks WHERE site_id = ? AND session_id = ? LIMIT ?
"""

# Sessions one replays_found call probes: a page of funnel units, 20 x 10 heatmap samples.
MAX_PROBED = 200

DELETE_PARTITION = "DELETE FROM {ks}.replay_chunks WHERE site_id = ? AND session_id = ?"

# The erasure's scan inside the chunks (domain/erasure/scan.py): a session's chunks, one by one.
SELECT_DATA = """
SELECT page_start, seq, data FROM {ks}.replay_chunks WHERE site_id = ? AND session_id = ?
"""

DELETE_ROW = """
DELETE FROM {ks}.replay_chunks WHERE site_id = ? AND session_id = ? AND page_start = ? AND seq = ?
"""


class ReplayChunk(Model):
    """One chunk of a session's recording: gzip of the recorder's JSON (its rrweb events).

    A partition is one session (bounded by the per-session replay caps); rows sort by
    the page load's recording start, then the chunk's sequence within it. A retried
    chunk has the same key and rewrites its row (idempotent by chunk id).
    """

    __table_name__ = "replay_chunks"
    # The site's TTL is on every write (Site.replay_retention_days); TWCS by day, so a
    # day's recordings share SSTables that expire and are dropped whole.
    __options__ = table_options(ttl_days=MAX_RETENTION_DAYS, window="day")

    site_id = columns.UUID(partition_key=True)
    session_id = columns.TimeUUID(partition_key=True)
    page_start = columns.DateTime(primary_key=True, clustering_order="ASC")
    seq = columns.Integer(primary_key=True, clustering_order="ASC")
    chunk_id = columns.UUID(required=True)
    user_key = columns.Text(required=True)
    last_event_id = columns.UUID()
    start_at = columns.DateTime(required=True)
    end_at = columns.DateTime(required=True)
    events = columns.Integer(required=True)
    size = columns.Integer(required=True)
    data = columns.Blob(required=True)


SPEC = TableSpec(
    policies=(),
    model=ReplayChunk,
    purge=None,  # by TTL; a site's rows go with its erasures and TTL
    erasure="_delete_replays",
    sizing="probe_replay_chunks",
)


def chunk_insert(row: Row) -> None:
    """Write one chunk (a retry of the same chunk rewrites the same row)."""
    cassandra_session().execute(prepare(INSERT, idempotent=True, write=True), row)


def chunks_read(
    *,
    site_id: uuid.UUID,
    session_id: uuid.UUID,
    after: tuple[datetime, int] | None,
    limit: int,
) -> list[dict[str, Any]]:
    """Return a session's chunks in recording order, after a (page_start, seq) cursor."""
    limit = bounded_limit(limit)
    if after is None:
        params: tuple[Any, ...] = (site_id, session_id, limit)
        return list(cassandra_session().execute(prepare(SELECT_FIRST), params))
    params = (site_id, session_id, *after, limit)
    return list(cassandra_session().execute(prepare(SELECT_AFTER), params))


def replay_exists(*, site_id: uuid.UUID, session_id: uuid.UUID) -> bool:
    """True if the session has at least one stored chunk."""
    rows = cassandra_session().execute(prepare(PROBE), (site_id, session_id))
    return rows.one() is not None


def replays_found(*, site_id: uuid.UUID, session_ids: Iterable[uuid.UUID | str | None]) -> set[str]:
    """The sessions among these (a page of a list: UUIDs or their text, None skipped; the
    first MAX_PROBED distinct ones) that have a recording, as text: `str(id) in found`."""
    distinct = dict.fromkeys(uuid.UUID(str(s)) for s in session_ids if s)
    ids = [s for s in list(distinct)[:MAX_PROBED] if s.version == 1]
    found = read_windowed(prepare(PROBE), [(site_id, s) for s in ids])
    return {str(s) for s, rows in zip(ids, found, strict=True) if rows}
