"""bucket_vitals: each sealed bucket's Core Web Vitals, at three levels.

One partition per (site, resolution, bucket); a row per (level, page path, device,
country, browser): level 0 the whole site (one row, the rest ""), level 1 each page
(device, country and browser ""), level 2 each combination the visitors had (""
where ingest did not know one). A row holds each metric's quantile sketch (6 bytes a
slot), its good / needs improvement / poor counts and its worst elements
(domain/aggregates/vitals.py). So p75 over a range reads the level-0 row of each bucket; a
filtered one the level-2 rows. Counts add up: a day merges its hours, a month its days.
Overwritten whole by every seal. No user key: erasure reseals the buckets.

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
INSERT INTO {ks}.bucket_vitals (site_id, granularity, bucket, level, page, device, country,
                                browser, sketches, ratings, elements)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ? AND TTL ?
"""

# A reseal clears what the bucket held before (a page it no longer has goes too).
DELETE_BUCKET = """
DELETE FROM {ks}.bucket_vitals USING TIMESTAMP ?
WHERE site_id = ? AND granularity = ? AND bucket = ?
"""

# A rollup: every row of a child bucket.
SELECT_BUCKET = """
SELECT level, page, device, country, browser, sketches, ratings, elements
FROM {ks}.bucket_vitals WHERE site_id = ? AND granularity = ? AND bucket = ?
"""

# The Performance page: one level of a bucket (0: the site, 1: pages, 2: combinations).
SELECT_LEVEL = """
SELECT level, page, device, country, browser, sketches, ratings, elements
FROM {ks}.bucket_vitals WHERE site_id = ? AND granularity = ? AND bucket = ? AND level = ?
"""

# A page's detail: its row of one level.
SELECT_PAGE = """
SELECT level, page, device, country, browser, sketches, ratings, elements
FROM {ks}.bucket_vitals
WHERE site_id = ? AND granularity = ? AND bucket = ? AND level = ? AND page = ?
"""

POLICIES = _AGGREGATES


class BucketVitals(Model):
    """One level's web vitals of one sealed bucket of a site."""

    __table_name__ = "bucket_vitals"
    __options__ = table_options(policies=POLICIES)

    site_id = columns.UUID(partition_key=True)
    granularity = columns.Text(partition_key=True)
    bucket = columns.DateTime(partition_key=True)
    level = columns.TinyInt(primary_key=True)  # 0 site, 1 page, 2 combination
    page = columns.Text(primary_key=True)  # a page path ("" at level 0)
    device = columns.Text(primary_key=True)  # "" at levels 0 and 1, or unknown
    country = columns.Text(primary_key=True)
    browser = columns.Text(primary_key=True)
    sketches = columns.Map(columns.Text, columns.Blob)  # metric: packed sketch
    ratings = columns.Text()  # JSON: metric: [good, needs improvement, poor]
    elements = columns.Text()  # JSON: metric: {selector: [times, poor, sum]}


SPEC = TableSpec(
    policies=POLICIES,
    model=BucketVitals,
    purge=None,
    erasure=RESEAL,
    sizing=None,
)
