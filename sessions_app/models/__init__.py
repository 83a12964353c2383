"""Tables: cqlengine models for Cassandra (synced by sync_cassandra), Django models for SQL."""

from .erasure import ErasureRequest, Suppression
from .events import (
    BucketAggregate,
    BucketUserCount,
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
from .sites import BucketState, ReplayWatermark, Site

CASSANDRA_MODELS = (
    BucketAggregate,
    BucketUserCount,
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
    "BucketAggregate",
    "BucketState",
    "BucketUserCount",
    "ErasureRequest",
    "FailedEvent",
    "IdentityLink",
    "IngestStats",
    "LatestSession",
    "PipelineHeartbeat",
    "ReplayWatermark",
    "RollingCount",
    "SeriesPoint",
    "SessionEvent",
    "Site",
    "SiteEventByBucket",
    "Suppression",
    "TransactionLog",
    "UserEventByBucket",
    "UserSession",
]
