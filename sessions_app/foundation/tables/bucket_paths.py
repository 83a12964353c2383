"""bucket_paths: each sealed bucket's page-view paths (up to 5 pages), by the page they
start from and the page they end at.

One partition per (site, resolution, bucket); a row per (side, anchor page): side
"from" holds the paths that start at the anchor (its own views are the one-page path;
the anchor "(entrance)" holds the paths from the session start), side "to" the paths
that end at it and the sources of the sessions that entered there. So a Sankey from or
to one page, or one page's transitions, reads one row of each bucket in the range.
Counts add up: a day merges its hours and a month its days. Overwritten whole by
every seal (domain/aggregates/paths.py).

The table's schema (cqlengine, applied by sync_cassandra), every statement on it, and
its spec in the table registry (foundation/tables/registry.py).
"""

from __future__ import annotations

from cassandra.cqlengine import columns
from cassandra.cqlengine.models import Model

from sessions_app.foundation.tables.retention_specs import table_options
from sessions_app.foundation.tables.spec import AGGREGATES as _AGGREGATES
from sessions_app.foundation.tables.spec import RESEAL, TableSpec

UPSERT = """
INSERT INTO {ks}.bucket_paths (site_id, granularity, bucket, side, anchor, grams, sources,
                               dropped, carried)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ? AND TTL ?
"""

# A reseal clears what the bucket held before (an anchor it no longer has goes too).
DELETE_BUCKET = """
DELETE FROM {ks}.bucket_paths USING TIMESTAMP ?
WHERE site_id = ? AND granularity = ? AND bucket = ?
"""

SELECT_BUCKET = """
SELECT side, anchor, grams, sources, dropped, carried FROM {ks}.bucket_paths
WHERE site_id = ? AND granularity = ? AND bucket = ?
"""

SELECT_ANCHOR = """
SELECT side, anchor, grams, sources, dropped, carried FROM {ks}.bucket_paths
WHERE site_id = ? AND granularity = ? AND bucket = ? AND side = ? AND anchor = ?
"""

POLICIES = _AGGREGATES


class BucketPath(Model):
    """The paths of one sealed bucket of a site that start (or end) at one page."""

    __table_name__ = "bucket_paths"
    __options__ = table_options(policies=POLICIES)

    site_id = columns.UUID(partition_key=True)
    granularity = columns.Text(partition_key=True)
    bucket = columns.DateTime(partition_key=True)
    side = columns.Text(primary_key=True)  # "from" or "to"
    anchor = columns.Text(primary_key=True)  # a page path, or "(entrance)"
    grams = columns.Text()  # JSON [[[page, ...], count], ...], the most frequent first
    sources = columns.Text()  # JSON {source: entrances} ("to" rows only)
    dropped = columns.BigInt()  # path counts folded into "(other)" by the row's cap
    # JSON [[[page, ...], hour, count], ...] ("from" rows): the paths begun before the
    # bucket, with the hour (epoch seconds) of their first page view
    carried = columns.Text()


SPEC = TableSpec(
    policies=POLICIES,
    model=BucketPath,
    purge=None,
    erasure=RESEAL,
    sizing=None,
)
