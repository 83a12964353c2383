"""Tables: cqlengine models for Cassandra (synced by sync_cassandra), Django models for SQL."""

from .events import (
    BucketAggregate,
    FailedEvent,
    IdentityLink,
    IngestStats,
    LatestSession,
    PipelineHeartbeat,
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
    FailedEvent,
    IdentityLink,
    IngestStats,
    LatestSession,
    PipelineHeartbeat,
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
    "FailedEvent",
    "IdentityLink",
    "IngestStats",
    "LatestSession",
    "PipelineHeartbeat",
    "ReplayWatermark",
    "SeriesPoint",
    "SessionEvent",
    "Site",
    "SiteEventByBucket",
    "TransactionLog",
    "UserEventByBucket",
    "UserSession",
]
