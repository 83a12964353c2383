"""series_points: aggregate time series, base + delta keys (a row per series and base).

The table's schema (cqlengine, applied by sync_cassandra), every statement on it, and
its spec in the table registry (foundation/tables/registry.py).
"""

from __future__ import annotations

from cassandra.cqlengine import columns
from cassandra.cqlengine.models import Model

from sessions_app.foundation.tables.retention_specs import table_options
from sessions_app.foundation.tables.spec import AGGREGATES as _AGGREGATES
from sessions_app.foundation.tables.spec import TableSpec

INSERT = """
INSERT INTO {ks}.series_points (series_key, base, delta, value) VALUES (?, ?, ?, ?) USING TTL ?
"""

SELECT_RANGE = """
SELECT delta, value FROM {ks}.series_points
WHERE series_key = ? AND base = ? AND delta >= ? AND delta < ?
"""

POLICIES = _AGGREGATES


class SeriesPoint(Model):
    """Time series in the base + delta layout: row = (series key, base), column = delta.

    The series key is the metric name followed by its tags sorted by name
    ("events,resolution=hour,site=…"); base = ts - ts mod 2^32 ms (≈ 50 days per
    partition), delta = ts - base, so ts = base + delta exactly.
    """

    __table_name__ = "series_points"
    __options__ = table_options(policies=POLICIES)

    series_key = columns.Text(partition_key=True)
    base = columns.BigInt(partition_key=True)
    delta = columns.BigInt(primary_key=True, clustering_order="ASC")
    value = columns.Double(required=True)


SPEC = TableSpec(
    policies=POLICIES,
    model=SeriesPoint,
    purge=None,
    erasure=None,
    sizing=None,
)
