"""Tables: cqlengine models for Cassandra (synced by sync_cassandra), Django models for SQL."""

from .erasure import ErasureRequest, Suppression
from .events import (
    BucketAggregate,
    BucketPartial,
    BucketUsers,
    FailedEvent,
    IdentityLink,
    IngestStats,
    LatestSession,
    PipelineHeartbeat,
    RollingCount,
    SeriesPoint,
    SessionEvent,
    SiteEventByBucket,
    TransactionLog,
    UserEventByBucket,
    UserSession,
)
from .retention import AdminAction, PurgeRun, PurgeWatermark, RetentionPolicy
from .sites import BucketState, ReplayWatermark, Site, UserBucketWidth

CASSANDRA_MODELS = (
    BucketAggregate,
    BucketPartial,
    BucketUsers,
    FailedEvent,
    IdentityLink,
    IngestStats,
    LatestSession,
    PipelineHeartbeat,
    RollingCount,
    SeriesPoint,
    SessionEvent,
    SiteEventByBucket,
    TransactionLog,
    UserEventByBucket,
    UserSession,
)

__all__ = [
    "CASSANDRA_MODELS",
    "AdminAction",
    "BucketAggregate",
    "BucketPartial",
    "BucketState",
    "BucketUsers",
    "ErasureRequest",
    "FailedEvent",
    "IdentityLink",
    "IngestStats",
    "LatestSession",
    "PipelineHeartbeat",
    "PurgeRun",
    "PurgeWatermark",
    "ReplayWatermark",
    "RetentionPolicy",
    "RollingCount",
    "SeriesPoint",
    "SessionEvent",
    "Site",
    "SiteEventByBucket",
    "Suppression",
    "TransactionLog",
    "UserBucketWidth",
    "UserEventByBucket",
    "UserSession",
]
