"""Tables: cqlengine models for Cassandra (synced by sync_cassandra), Django models for SQL."""

from .events import (
    FailedEvent,
    IdentityLink,
    IngestStats,
    LatestSession,
    PipelineHeartbeat,
    SessionEvent,
    SiteEventByBucket,
    TransactionLog,
    UserEventByBucket,
    UserSession,
)
from .sites import ReplayWatermark, Site

CASSANDRA_MODELS = (
    FailedEvent,
    IdentityLink,
    IngestStats,
    LatestSession,
    PipelineHeartbeat,
    SessionEvent,
    SiteEventByBucket,
    TransactionLog,
    UserEventByBucket,
    UserSession,
)

__all__ = [
    "CASSANDRA_MODELS",
    "FailedEvent",
    "IdentityLink",
    "IngestStats",
    "LatestSession",
    "PipelineHeartbeat",
    "ReplayWatermark",
    "SessionEvent",
    "Site",
    "SiteEventByBucket",
    "TransactionLog",
    "UserEventByBucket",
    "UserSession",
]
