"""replay_assets: the stylesheets of a site's replays, stored once per site by content hash.

The recorder (rrweb) inlines every stylesheet the page can read into each page load's
snapshot; the collector (features/replays/assets.py) stores each one of at least
`replays.assets.MIN_BYTES` here once and leaves a reference in the chunk, which the
player's read resolves. The table's schema (cqlengine, applied by sync_cassandra),
every statement on it, and its spec in the table registry (foundation/tables/registry.py).
"""

from __future__ import annotations

import uuid
from typing import NamedTuple

from cassandra.cqlengine import columns
from cassandra.cqlengine.models import Model

from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.tables import replay_chunks
from sessions_app.foundation.tables.retention_specs import table_options
from sessions_app.foundation.tables.spec import TableSpec

# A stylesheet is rewritten at most once a day per site (features/replays/assets.py: a Redis
# marker), with the site's replay retention plus this day: it outlives every chunk
# written meanwhile that names it.
REWRITE_DAYS = 1
MAX_READ = 100  # hashes one read resolves (an IN list, bounded)

INSERT = """
INSERT INTO {ks}.replay_assets (site_id, hash, kind, size, data) VALUES (?, ?, ?, ?, ?)
USING TTL ?
"""

SELECT_MANY = "SELECT hash, data FROM {ks}.replay_assets WHERE site_id = ? AND hash IN ?"

# Erasure (domain/erasure/scan.py): a stylesheet that shows an erased user, or cannot be read.
DELETE = "DELETE FROM {ks}.replay_assets WHERE site_id = ? AND hash = ?"


class Row(NamedTuple):
    """The parameters of INSERT, in its order."""

    site_id: uuid.UUID
    hash: str
    kind: str
    size: int
    data: bytes
    ttl: int


class ReplayAsset(Model):
    """One stylesheet of a site's recordings: gzip of its text, keyed by its SHA-256.

    Mostly site content (the page's own CSS, the same for every visitor), but a page can
    put a visitor's data in a stylesheet (`content: "ann@example.com"`): an erasure reads
    every stylesheet the site's recordings name and deletes those that show the user.
    """

    __table_name__ = "replay_assets"
    # Every write carries the site's replay retention plus REWRITE_DAYS; size-tiered
    # compaction: a hot stylesheet is rewritten daily into the same partition.
    __options__ = table_options(ttl_days=replay_chunks.MAX_RETENTION_DAYS + REWRITE_DAYS)

    site_id = columns.UUID(partition_key=True)
    hash = columns.Text(partition_key=True)  # SHA-256 of the text, hex
    kind = columns.Text(required=True)  # "css"
    size = columns.Integer(required=True)  # bytes of the text, uncompressed
    data = columns.Blob(required=True)


SPEC = TableSpec(
    policies=(),
    model=ReplayAsset,
    purge=None,  # by TTL: the site's replay retention (+1 day) on every write
    erasure="_delete_replays",  # those that show the user (domain/erasure/scan.py)
    # A partition is one stylesheet (one row, at most the inflated chunk cap): nothing
    # for the partition report to size.
    sizing=None,
)


def asset_insert(row: Row) -> None:
    """Write one stylesheet (a rewrite of the same hash refreshes its TTL)."""
    cassandra_session().execute(prepare(INSERT, idempotent=True, write=True), row)


def assets_read(*, site_id: uuid.UUID, hashes: list[str]) -> dict[str, bytes]:
    """The stored stylesheets (gzip) of these hashes, the first MAX_READ of them."""
    wanted = sorted(set(hashes))[:MAX_READ]
    if not wanted:
        return {}
    rows = cassandra_session().execute(prepare(SELECT_MANY), (site_id, wanted))
    return {row["hash"]: row["data"] for row in rows}


def marker_key(site_id: uuid.UUID, retention_days: int, digest: str) -> str:
    """The Redis key that says a stylesheet was written for the site (and retention) in
    the last REWRITE_DAYS (features/replays/assets.py), so it is not written again meanwhile."""
    return f"cs:replay:asset:{site_id}:{retention_days}:{digest}"
