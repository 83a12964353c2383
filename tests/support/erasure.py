"""The erasure tests' cast (alice, anonymous then identified, and bob), the traffic they
made, and one batch recorded through the pipeline."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sessions_app.domain.ingest.pipeline import Source, events_record

ALICE = "alice@example.com"
ALICE_ANON = "alice-anon"
BOB = "bob-anon"


@dataclass
class Traffic:
    hours: list[datetime]
    now: datetime
    batches: list[list[dict[str, Any]]] = field(default_factory=list)
    sessions: dict[str, list[Any]] = field(default_factory=dict)


def record_batch(site, received_at: datetime, events: list[dict[str, Any]]):
    return events_record(source=Source(site=site, received_at=received_at), raw_events=events)
