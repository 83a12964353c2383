"""What one request carries through the ingest steps (ingest/steps/, run by pipeline.py).

`Source` says where a batch came from, `Outcome` what happened to each event (the
collector's answer), and `Intake` is the work in progress every step reads and adds to.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

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


@dataclass
class Assigned:
    """A fresh event with the session the sessionizer put it in and its own visitor."""

    candidate: Candidate
    session_id: uuid.UUID
    visit: Visit


@dataclass
class Intake:
    """One request's events on their way through the steps, and what each step found."""

    source: Source
    raw_events: Sequence[Any]
    received_at: datetime
    batch_id: uuid.UUID
    started: float  # time.monotonic() at the start: the write deadline counts from it
    outcome: Outcome
    # validate: accepted events in request order; the rejected ones' rows and counts
    candidates: list[Candidate] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    reasons: Counter[str] = field(default_factory=Counter)
    # dedupe: the Redis claim (marks, locks, cached states), the events seen first here,
    # and each of their visitors' current session
    claim: Claim | None = None
    fresh: list[Candidate] = field(default_factory=list)
    current: dict[str, SessionState | None] = field(default_factory=dict)
    # enrich: the request's visitor and each fresh event's own (an SDK's context)
    visits: list[Visit] = field(default_factory=list)
    is_bot: bool = False
    # sessionize: the events in each visitor's time order with their sessions; the
    # sessions touched (summaries to write) and each visitor's latest (to cache)
    assigned: list[Assigned] = field(default_factory=list)
    touched: dict[str, list[SessionState]] = field(default_factory=dict)
    states: dict[str, SessionState] = field(default_factory=dict)
    # plan, log
    plan: Plan | None = None
    stats: Stats | None = None
    payload: bytes | None = None
