"""Cassandra tables for sessions and events (cqlengine; schema only, see cassandra.py).

Partition keys follow the queries (seed 002): a user's sessions newest first, a
session's events in order, and a user's events per time bucket so a range read
touches a known, bounded set of partitions.
"""

from __future__ import annotations

from cassandra.cqlengine import columns
from cassandra.cqlengine.models import Model
from django.conf import settings

from sessions_app.retention import specs
from sessions_app.retention.specs import table_options

# Mixed resolutions with TTLs of a year to ten years, rewritten by reseals: TWCS would
# keep SSTables alive for their longest-lived row, so these keep size-tiered compaction.
_AGGREGATES = (specs.AGGREGATES_HOUR, specs.AGGREGATES_DAY, specs.AGGREGATES_MONTH)


class UserSession(Model):
    """One row per session in the partition of (site, user key), newest first."""

    __table_name__ = "user_sessions"
    __options__ = table_options(policies=(specs.SESSIONS,))

    site_id = columns.UUID(partition_key=True)
    user_key = columns.Text(partition_key=True)
    session_id = columns.TimeUUID(primary_key=True, clustering_order="DESC")
    started_at = columns.DateTime(required=True)
    last_seen_at = columns.DateTime(required=True)
    anonymous_id = columns.Text()
    user_id = columns.Text()
    event_count = columns.Integer(default=0)
    pageview_count = columns.Integer(default=0)
    click_count = columns.Integer(default=0)
    entry_url = columns.Text()
    exit_url = columns.Text()
    converted = columns.Boolean(default=False)
    is_bot = columns.Boolean(default=False)
    user_agent = columns.Text()
    ip_prefix = columns.Text()


class SessionEvent(Model):
    """Every event of one session, in time order (event TimeUUIDs sort by time)."""

    __table_name__ = "session_events"
    __options__ = table_options(policies=(specs.RAW_EVENTS,), window="day")  # ≤ 24 h sessions

    session_id = columns.TimeUUID(partition_key=True)
    event_id = columns.TimeUUID(primary_key=True, clustering_order="ASC")
    site_id = columns.UUID(required=True)
    user_key = columns.Text(required=True)
    ts = columns.DateTime(required=True)
    # The event's API JSON (selectors.EVENT_FIELDS), rendered when it is written: the
    # timeline reads this one cell a row.
    doc = columns.Blob()
    # Static (one per partition). Every event insert sets `touched`, so its write time
    # is the time of the partition's last write; `timeline` is the session's API
    # payload materialized once the session closed, valid while its write time is
    # later than touched's. An insert of an event older than TIMELINE_PREFIX_LAG / 2
    # also sets `backfilled`; `prefix` holds the JSON of the session's events up to
    # `prefix_upto` (all older than its write time minus the lag), valid while its
    # write time is later than backfilled's (sessions_app/sessions/timeline.py).
    touched = columns.Boolean(static=True)
    timeline = columns.Blob(static=True)
    timeline_site = columns.UUID(static=True)
    backfilled = columns.Boolean(static=True)
    prefix = columns.Blob(static=True)
    prefix_upto = columns.TimeUUID(static=True)
    prefix_count = columns.Integer(static=True)
    prefix_user = columns.Text(static=True)


class UserEventByBucket(Model):
    """A user's events per time bucket: (site, user key, bucket start) partitions."""

    __table_name__ = "user_events_by_bucket"
    __options__ = table_options(policies=(specs.RAW_EVENTS,), window=settings.USER_EVENTS_BUCKET)

    site_id = columns.UUID(partition_key=True)
    user_key = columns.Text(partition_key=True)
    bucket = columns.DateTime(partition_key=True)
    event_id = columns.TimeUUID(primary_key=True, clustering_order="ASC")
    session_id = columns.TimeUUID(required=True)
    type = columns.Text(required=True)
    name = columns.Text()
    ts = columns.DateTime(required=True)
    url = columns.Text()
    element = columns.Text()
    props = columns.Text()


class PipelineHeartbeat(Model):
    """Last beat → broker → worker → Cassandra round trip, one row per worker host."""

    __table_name__ = "pipeline_heartbeats"
    __options__ = table_options(ttl_days=1)

    worker = columns.Text(partition_key=True)
    beat_at = columns.DateTime(required=True)
    written_at = columns.DateTime(required=True)


class SiteEventByBucket(Model):
    """Every event of a site per hour bucket and shard: the aggregation source (seeds 000, 003).

    The shard suffix (seed 000's sequence number) splits a busy site's hour into
    partitions that stay inside the partition budget.
    """

    __table_name__ = "site_events_by_bucket"
    __options__ = table_options(policies=(specs.RAW_EVENTS,), window="hour")

    site_id = columns.UUID(partition_key=True)
    bucket = columns.DateTime(partition_key=True)
    shard = columns.SmallInt(partition_key=True)
    event_id = columns.TimeUUID(primary_key=True, clustering_order="ASC")
    session_id = columns.TimeUUID(required=True)
    user_key = columns.Text(required=True)
    type = columns.Text(required=True)
    name = columns.Text()
    ts = columns.DateTime(required=True)
    url = columns.Text()
    element = columns.Text()
    is_bot = columns.Boolean(default=False)
    late = columns.Boolean(default=False)


class BucketPartial(Model):
    """One batch's tally of its events in one site hour and shard (aggregation.Tally).

    Written by the applier beside the batch's raw rows, in the same partitions'
    shape: (site, hour, shard), one row per batch (shard = the batch id's hash
    modulo the site's shards when the batch was planned). A seal merges these
    instead of scanning the raw rows (BucketState.partials says whether it may).
    About a tenth of the raw rows' bytes: a 30-event beacon is one ~1 KB row.
    """

    __table_name__ = "bucket_partials"
    __options__ = table_options(policies=(specs.RAW_EVENTS,), window="hour")

    site_id = columns.UUID(partition_key=True)
    bucket = columns.DateTime(partition_key=True)
    shard = columns.SmallInt(partition_key=True)
    batch_id = columns.TimeUUID(primary_key=True, clustering_order="ASC")
    events = columns.Integer(required=True)
    tally = columns.Blob(required=True)


class LatestSession(Model):
    """The live feed of sessions of a site, keyed by a non-time sentinel (seed 000).

    Partitioning by time bucket alone would put every write of the moment on one
    hot partition; the sentinel is a hash of the user key into FEED_SHARDS.
    """

    __table_name__ = "latest_sessions"
    __options__ = table_options(ttl_days=1, window="hour")  # the feed's TTL, no policy

    site_id = columns.UUID(partition_key=True)
    sentinel = columns.SmallInt(partition_key=True)
    seen_id = columns.TimeUUID(primary_key=True, clustering_order="DESC")
    session_id = columns.TimeUUID(primary_key=True)
    user_key = columns.Text(required=True)
    started_at = columns.DateTime(required=True)
    last_seen_at = columns.DateTime(required=True)
    event_count = columns.Integer()
    entry_url = columns.Text()
    exit_url = columns.Text()
    is_bot = columns.Boolean(default=False)


class TransactionLog(Model):
    """Accepted batches, durable before the collector answers (seed 002 "eventually atomic").

    The apply step writes the batch into every table and then sets `applied`; a
    beat task replays entries still unapplied after a grace period.
    """

    __table_name__ = "transaction_log"
    __options__ = table_options(policies=(specs.TRANSACTION_LOG,), window="10m")

    site_id = columns.UUID(partition_key=True)
    minute = columns.DateTime(partition_key=True)
    shard = columns.SmallInt(partition_key=True)
    batch_id = columns.TimeUUID(primary_key=True, clustering_order="ASC")
    received_at = columns.DateTime(required=True)
    event_count = columns.Integer(required=True)
    payload = columns.Blob(required=True)
    applied = columns.Boolean(default=False)


class FailedEvent(Model):
    """A rejected event or request with its reason and raw payload (≤ 8 KB), kept with a TTL."""

    __table_name__ = "failed_events"
    __options__ = table_options(policies=(specs.FAILED_EVENTS,), window="day")

    site_id = columns.UUID(partition_key=True)
    day = columns.DateTime(partition_key=True)
    failed_id = columns.TimeUUID(primary_key=True, clustering_order="DESC")
    received_at = columns.DateTime(required=True)
    reason = columns.Text(required=True)
    field = columns.Text()
    source = columns.Text()
    payload = columns.Text()


class IngestStats(Model):
    """Data-quality counts of one request, per site and hour bucket.

    One row per request (keyed by its batch id) rather than counters, so a retried
    write never counts twice; per-bucket totals are the sum of the partition.
    """

    __table_name__ = "ingest_stats"
    __options__ = table_options(ttl_days=90, window="hour")  # fixed 90 days, no policy

    site_id = columns.UUID(partition_key=True)
    bucket = columns.DateTime(partition_key=True)
    batch_id = columns.TimeUUID(primary_key=True, clustering_order="ASC")
    received = columns.Integer(required=True)
    accepted = columns.Integer(required=True)
    duplicates = columns.Integer(required=True)
    late = columns.Integer(required=True)
    clamped = columns.Integer(required=True)
    rejected = columns.Map(columns.Text, columns.Integer)


class IdentityLink(Model):
    """Anonymous ids that identify() linked to a user id, for the user's profile."""

    __table_name__ = "identity_links"
    __options__ = table_options(policies=(specs.SESSIONS,))

    site_id = columns.UUID(partition_key=True)
    user_id = columns.Text(partition_key=True)
    anonymous_id = columns.Text(primary_key=True)
    linked_at = columns.DateTime(required=True)


class BucketAggregate(Model):
    """Aggregates of one sealed bucket of a site, overwritten whole by each seal."""

    __table_name__ = "bucket_aggregates"
    __options__ = table_options(policies=_AGGREGATES)

    site_id = columns.UUID(partition_key=True)
    granularity = columns.Text(partition_key=True)
    bucket = columns.DateTime(primary_key=True, clustering_order="ASC")
    events = columns.Integer()
    by_type = columns.Map(columns.Text, columns.Integer)
    by_name = columns.Map(columns.Text, columns.Integer)
    sessions_started = columns.Integer()
    users = columns.Integer()
    bounces = columns.Integer()
    conversions = columns.Integer()
    durations = columns.Map(columns.Text, columns.Integer)  # histogram bin -> sessions
    top_pages = columns.Text()  # JSON [[path, count], ...]
    top_clicks = columns.Text()  # JSON [[element, count], ...]
    rows_read = columns.Integer()
    sealed_at = columns.DateTime()
    # HyperLogLog registers of the bucket's user keys (aggregation.UserSketch):
    # unique users of a day or month are the merged sketches of its children.
    users_sketch = columns.Blob()


class BucketUsers(Model):
    """Each user's events by event key in one sealed bucket of a site: the rollup source.

    Site-partitioned so a day's rollup reads its 24 hour partitions (and a month
    its days) without knowing the users beforehand. One row per user of the
    bucket, its counts one frozen map (a single cell: a seal writes ~1/4.5 the
    rows and cells of one row per (user, key) pair, and overwrites a user's map
    whole without a tombstone). About 20 bytes plus 12 per event key.
    """

    __table_name__ = "bucket_users"
    __options__ = table_options(policies=_AGGREGATES)

    site_id = columns.UUID(partition_key=True)
    granularity = columns.Text(partition_key=True)
    bucket = columns.DateTime(partition_key=True)
    user_key = columns.Text(primary_key=True)
    counts = columns.Map(columns.Text, columns.BigInt, frozen=True)  # event key -> events


class RollingCount(Model):
    """A user's event counts per sealed bucket (seed 002 use case 3: rolling counters).

    Partition = (site, user, granularity, period): period is the month for hour
    rows, the year for day rows and 0 (epoch) for month rows, so no partition
    grows without bound; clustering (event key, bucket) makes "this key over
    these buckets" one slice. Written by the seal that owns the bucket.
    """

    __table_name__ = "rolling_counts"
    __options__ = table_options(policies=_AGGREGATES)

    site_id = columns.UUID(partition_key=True)
    user_key = columns.Text(partition_key=True)
    granularity = columns.Text(partition_key=True)
    period = columns.DateTime(partition_key=True)
    event_key = columns.Text(primary_key=True)
    bucket = columns.DateTime(primary_key=True, clustering_order="ASC")
    count = columns.BigInt(required=True)


class SeriesPoint(Model):
    """Time series in seed 004's layout: row = (series key, base), column = delta.

    The series key is the metric name followed by its tags sorted by name
    ("events,resolution=hour,site=…"); base = ts - ts mod 2^32 ms (≈ 50 days per
    partition), delta = ts - base, so ts = base + delta exactly.
    """

    __table_name__ = "series_points"
    __options__ = table_options(policies=_AGGREGATES)

    series_key = columns.Text(partition_key=True)
    base = columns.BigInt(partition_key=True)
    delta = columns.BigInt(primary_key=True, clustering_order="ASC")
    value = columns.Double(required=True)
