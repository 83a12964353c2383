"""bucket_products: the sealed buckets of every product declared on the generic store.

A product that needs no table of its own (domain/aggregates/product_rows.py) stores a
bucket's value here as parts: one partition per (site, resolution, bucket, product), a
row per part holding its JSON. A seal or rollup overwrites the partition whole; a read
takes it whole. No user key: erasure reseals the buckets. The products with tables of
their own (bucket_aggregates, bucket_vitals, ...) have them because their pages read a
slice of a bucket (one dimension, one level), which a whole-partition value cannot give.

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
INSERT INTO {ks}.bucket_products (site_id, granularity, bucket, product, part, value)
VALUES (?, ?, ?, ?, ?, ?) USING TIMESTAMP ? AND TTL ?
"""

# A reseal clears what the bucket held before (a part it no longer has goes too).
DELETE_BUCKET = """
DELETE FROM {ks}.bucket_products USING TIMESTAMP ?
WHERE site_id = ? AND granularity = ? AND bucket = ? AND product = ?
"""

SELECT_BUCKET = """
SELECT part, value FROM {ks}.bucket_products
WHERE site_id = ? AND granularity = ? AND bucket = ? AND product = ?
LIMIT ?
"""

POLICIES = _AGGREGATES


class BucketProduct(Model):
    """One part of one product's value in one sealed bucket of a site."""

    __table_name__ = "bucket_products"
    __options__ = table_options(policies=POLICIES)

    site_id = columns.UUID(partition_key=True)
    granularity = columns.Text(partition_key=True)
    bucket = columns.DateTime(partition_key=True)
    product = columns.Text(partition_key=True)
    part = columns.Text(primary_key=True)
    value = columns.Blob()  # JSON (orjson)


SPEC = TableSpec(
    policies=POLICIES,
    model=BucketProduct,
    purge=None,
    erasure=RESEAL,
    sizing=None,
)
