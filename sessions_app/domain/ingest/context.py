"""What the ingest steps (ingest/steps/, run in order by pipeline.py) take and return.

`Source` says where a batch came from and `Request` what the pipeline stamped on it;
each step returns its own result (`Validated`, `Deduped`, `Enriched`, `Sessions`, ...)
and the next steps take the parts they need; `Outcome` is the collector's answer,
assembled by the pipeline from them.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sessions_app.domain.ingest import coordination
from sessions_app.domain.ingest.coordination import Claim
from sessions_app.domain.ingest.order import Candidate
from sessions_app.domain.ingest.plan import Failure, Plan, Stats
from sessions_app.domain.ingest.state import SessionState
from sessions_app.domain.ingest.visit import Visit
from sessions_app.foundation.models import Site


class StorageUnavailable(Exception):
    """The batch could not be made durable; nothing was accepted, the client should retry."""


@dataclass(frozen=True)
class Source:
    """Where a batch came from and when it arrived."""

    site: Site
    received_at: datetime
    sent_at: datetime | None = None
    user_agent: str | None = None
    ip: str | None = None
    name: str = "collect"
    accept_language: str | None = None
    logged_at: datetime | None = None  # a backfill: written now, received_at in the past


@dataclass
class Outcome:
    """What happened to each event of a request."""

    accepted: int = 0
    duplicates: int = 0
    late: int = 0
    clamped: int = 0
    rejected: list[dict[str, Any]] = field(default_factory=list)
    batch_id: uuid.UUID | None = None
    queued: bool = False  # handed to the applier (else written before returning)
    timings: dict[str, float] = field(default_factory=dict)  # seconds per step, by name

    def as_dict(self) -> dict[str, Any]:
        return {
            "accepted": self.accepted,
            "duplicates": self.duplicates,
            "rejected": self.rejected,
            "late": self.late,
            "clamped": self.clamped,
        }


@dataclass(frozen=True)
class Request:
    """One request as the pipeline stamped it on arrival."""

    source: Source
    received_at: datetime
    batch_id: uuid.UUID
    started: float  # time.monotonic() at the start: the write deadline counts from it

    @property
    def site(self) -> Site:
        return self.source.site


@dataclass(frozen=True)
class Validated:
    """The validate step's result: the accepted events in request order, and the rejected
    ones' reasons (the answer), failed_events rows and counts by field."""

    candidates: list[Candidate]
    rejected: list[dict[str, Any]]
    failures: list[Failure]
    reasons: Counter[str]


@dataclass(frozen=True)
class Deduped:
    """The dedupe step's result: the Redis claim (marks, locks, cached states), the events
    seen first here, and each of their visitors' current session."""

    claim: Claim
    fresh: list[Candidate]
    current: dict[str, SessionState | None]


@dataclass(frozen=True)
class Enriched:
    """The enrich step's result: each fresh event's visitor, and whether the request's
    own visitor is a bot."""

    visits: list[Visit]
    is_bot: bool


@dataclass
class Assigned:
    """A fresh event with the session the sessionizer put it in and its own visitor."""

    candidate: Candidate
    session_id: uuid.UUID
    visit: Visit


@dataclass(frozen=True)
class Sessions:
    """The sessionize step's result: the events in each visitor's time order with their
    sessions, the sessions touched (summaries to write) and each visitor's latest (to
    cache)."""

    assigned: list[Assigned]
    touched: dict[str, list[SessionState]]
    states: dict[str, SessionState]


@dataclass(frozen=True)
class Planned:
    """The plan step's result: the rows the request writes (None: no event was fresh) and
    the request's counts."""

    plan: Plan | None
    stats: Stats


@contextmanager
def released_on_failure(claim: Claim) -> Iterator[None]:
    """Until the log write the request can still fail: the claim is released and the client
    told to retry (StorageUnavailable: 503)."""
    try:
        yield
    except StorageUnavailable:
        coordination.abandon(claim)
        raise
    except Exception as exc:
        coordination.abandon(claim)
        raise StorageUnavailable(f"Cassandra: {type(exc).__name__}: {exc}") from exc
