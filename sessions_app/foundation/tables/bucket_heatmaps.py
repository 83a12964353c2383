"""bucket_heatmaps: each sealed bucket's clicks and scroll depth per page and layout.

One partition per (site, resolution, bucket); a row per (page path, viewport class):
the document grid's click counts, each element's clicks, rage and dead clicks and its
own box's grid, the page views by deepest scroll percent and by fold height
(domain/aggregates/heatmaps.py), and each element's latest rage or dead clicks. So a page's
heatmap in one layout over a range reads one row of each bucket (aggregates/
heatmap_rows.py: which columns each read takes). Counts add up: a day merges its hours
and a month its days. Overwritten whole by every seal.

The latest rage or dead clicks name their event, session and user: `samples` is written
apart, with a TTL that ends it no later than the raw rows of its oldest click
(ledger/policies.derived_ttl_seconds), so an erasure after those expired, which no
longer finds the user's hours, has nothing left to find here.

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
INSERT INTO {ks}.bucket_heatmaps (site_id, granularity, bucket, page, vp, counts, cells,
                                  detail, clicks)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ? AND TTL ?
"""

# The same row's latest flagged clicks, with their own (shorter) TTL.
UPSERT_SAMPLES = """
INSERT INTO {ks}.bucket_heatmaps (site_id, granularity, bucket, page, vp, samples)
VALUES (?, ?, ?, ?, ?, ?) USING TIMESTAMP ? AND TTL ?
"""

# A reseal clears what the bucket held before (a page it no longer has goes too).
DELETE_BUCKET = """
DELETE FROM {ks}.bucket_heatmaps USING TIMESTAMP ?
WHERE site_id = ? AND granularity = ? AND bucket = ?
"""

SELECT_BUCKET = """
SELECT page, vp, counts, cells, detail, samples FROM {ks}.bucket_heatmaps
WHERE site_id = ? AND granularity = ? AND bucket = ?
"""

# The layout switch: each layout's clicks, nothing else.
SELECT_PAGE_CLICKS = """
SELECT vp, clicks FROM {ks}.bucket_heatmaps
WHERE site_id = ? AND granularity = ? AND bucket = ? AND page = ?
"""

# The overlay: one layout, without the box grids and samples.
SELECT_LAYOUT = """
SELECT counts, cells FROM {ks}.bucket_heatmaps
WHERE site_id = ? AND granularity = ? AND bucket = ? AND page = ? AND vp = ?
"""

# The analyst's page: one layout with the latest flagged clicks.
SELECT_LAYOUT_SAMPLES = """
SELECT counts, cells, samples FROM {ks}.bucket_heatmaps
WHERE site_id = ? AND granularity = ? AND bucket = ? AND page = ? AND vp = ?
"""

POLICIES = _AGGREGATES


class BucketHeatmap(Model):
    """One page's clicks and scroll depth in one layout in one sealed bucket of a site."""

    __table_name__ = "bucket_heatmaps"
    __options__ = table_options(policies=POLICIES)

    site_id = columns.UUID(partition_key=True)
    granularity = columns.Text(partition_key=True)
    bucket = columns.DateTime(partition_key=True)
    page = columns.Text(primary_key=True)  # a page path
    vp = columns.Text(primary_key=True)  # a viewport class (ingest/enrich.VIEWPORTS)
    counts = columns.Text()  # JSON: clicks, elements, scroll, folds, dropped
    cells = columns.Blob()  # uint32 pairs (cell, clicks), domain/aggregates/heatmap_rows.py
    detail = columns.Text()  # JSON: the elements' box grids
    samples = columns.Text()  # JSON: the elements' latest flagged clicks (shorter TTL)
    clicks = columns.Integer()


SPEC = TableSpec(
    policies=POLICIES,
    model=BucketHeatmap,
    purge=None,
    erasure=RESEAL,
    sizing=None,
)
