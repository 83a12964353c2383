"""SQL models by domain, and the cqlengine models of the Cassandra tables
(sessions_app/foundation/tables)."""

from sessions_app.foundation.tables.anonymous_links import AnonymousLink
from sessions_app.foundation.tables.bucket_aggregates import BucketAggregate
from sessions_app.foundation.tables.bucket_breakdowns import BucketBreakdown
from sessions_app.foundation.tables.bucket_goals import BucketGoal
from sessions_app.foundation.tables.bucket_heatmaps import BucketHeatmap
from sessions_app.foundation.tables.bucket_partials import BucketPartial
from sessions_app.foundation.tables.bucket_paths import BucketPath
from sessions_app.foundation.tables.bucket_products import BucketProduct
from sessions_app.foundation.tables.bucket_users import BucketUsers
from sessions_app.foundation.tables.bucket_vitals import BucketVitals
from sessions_app.foundation.tables.failed_events import FailedEvent
from sessions_app.foundation.tables.funnel_days import FunnelDay
from sessions_app.foundation.tables.identity_links import IdentityLink
from sessions_app.foundation.tables.ingest_stats import IngestStats
from sessions_app.foundation.tables.latest_sessions import LatestSession
from sessions_app.foundation.tables.pipeline_heartbeats import PipelineHeartbeat
from sessions_app.foundation.tables.registry import models as _cassandra_models
from sessions_app.foundation.tables.replay_assets import ReplayAsset
from sessions_app.foundation.tables.replay_chunks import ReplayChunk
from sessions_app.foundation.tables.rolling_counts import RollingCount
from sessions_app.foundation.tables.series_points import SeriesPoint
from sessions_app.foundation.tables.session_events import SessionEvent
from sessions_app.foundation.tables.site_events_by_bucket import SiteEventByBucket
from sessions_app.foundation.tables.site_sessions import SiteSession
from sessions_app.foundation.tables.transaction_log import TransactionLog
from sessions_app.foundation.tables.user_directory import UserDirectory
from sessions_app.foundation.tables.user_events_by_bucket import UserEventByBucket
from sessions_app.foundation.tables.user_number_keys import UserNumberKeys
from sessions_app.foundation.tables.user_numbers import UserNumbers
from sessions_app.foundation.tables.user_properties import UserProperty
from sessions_app.foundation.tables.user_sessions import UserSession
from sessions_app.foundation.tables.user_sets import UserSets

from .accounts import ApiToken
from .annotations import Annotation
from .erasure import ErasureRequest, Suppression
from .funnels import Funnel, FunnelVersion
from .goals import Goal
from .retention import AdminAction, PurgeRun, PurgeWatermark, RetentionPolicy
from .segments import Segment
from .sharing import ShareLink
from .sites import (
    BucketState,
    RedoWatermark,
    Site,
    SiteMembership,
    UnappliedLogEntry,
    UserBucketWidth,
)

# The cqlengine models are defined with their tables (sessions_app/foundation/tables/) and named
# here, where django-cassandra-engine looks for them.
CASSANDRA_MODELS = _cassandra_models()

__all__ = [
    "CASSANDRA_MODELS",
    "AdminAction",
    "Annotation",
    "AnonymousLink",
    "ApiToken",
    "BucketAggregate",
    "BucketBreakdown",
    "BucketGoal",
    "BucketHeatmap",
    "BucketPartial",
    "BucketPath",
    "BucketProduct",
    "BucketState",
    "BucketUsers",
    "BucketVitals",
    "ErasureRequest",
    "FailedEvent",
    "Funnel",
    "FunnelDay",
    "FunnelVersion",
    "Goal",
    "IdentityLink",
    "IngestStats",
    "LatestSession",
    "PipelineHeartbeat",
    "PurgeRun",
    "PurgeWatermark",
    "RedoWatermark",
    "ReplayAsset",
    "ReplayChunk",
    "RetentionPolicy",
    "RollingCount",
    "Segment",
    "SeriesPoint",
    "SessionEvent",
    "ShareLink",
    "Site",
    "SiteEventByBucket",
    "SiteMembership",
    "SiteSession",
    "Suppression",
    "TransactionLog",
    "UnappliedLogEntry",
    "UserBucketWidth",
    "UserDirectory",
    "UserEventByBucket",
    "UserNumberKeys",
    "UserNumbers",
    "UserProperty",
    "UserSession",
    "UserSets",
]
