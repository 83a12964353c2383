"""Tables: cqlengine models for Cassandra (synced by sync_cassandra), Django models for SQL."""

from .events import PipelineHeartbeat, SessionEvent, UserEventByBucket, UserSession
from .sites import Site

__all__ = ["PipelineHeartbeat", "SessionEvent", "Site", "UserEventByBucket", "UserSession"]
