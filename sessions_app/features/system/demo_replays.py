"""The demo data's replays, stored as the collector stores a recorder's chunks: each
chunk body (domain/system/demo_replay.py) goes through `chunks.chunk_accept`, what
POST /replay runs after its origin and rate checks, received when the recorder would
have sent it."""

from __future__ import annotations

import gzip
from datetime import UTC, datetime
from typing import Any

import orjson

from sessions_app.features.replays import chunks
from sessions_app.foundation.models import Site


def chunks_send(site: Site, bodies: list[dict[str, Any]]) -> int:
    """Store a visit's chunks through the replay collector; return how many were stored."""
    stored = 0
    for body in bodies:
        received_at = datetime.fromtimestamp(body["sent_at"] / 1000, UTC)
        compressed = gzip.compress(orjson.dumps(body), compresslevel=6)
        stored += chunks.chunk_accept(site, compressed, received_at=received_at)["stored"]
    return stored
