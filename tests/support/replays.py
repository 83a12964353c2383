"""Session replay requests: a recorder chunk of rrweb events and its POST to /replay."""

from __future__ import annotations

import gzip
import json
import uuid
from datetime import datetime, timedelta
from typing import Any

from tests.support.events import ORIGIN


def _ms(ts: datetime) -> int:
    return round(ts.timestamp() * 1000)


def chunk(
    site,
    start: datetime,
    *,
    seq: int = 0,
    page: datetime | None = None,
    anon: str = "anon-1",
    n: int = 3,
    **extra: Any,
) -> dict[str, Any]:
    """A recorder chunk of n rrweb events from start, one a second."""
    events = [
        {"type": 3, "timestamp": _ms(start + timedelta(seconds=i)), "data": {"source": 1, "i": i}}
        for i in range(n)
    ]
    body = {
        "site": site.key,
        "chunk": str(uuid.uuid4()),
        "seq": seq,
        "page": _ms(page or start),
        "start": events[0]["timestamp"],
        "end": events[-1]["timestamp"],
        "anonymous_id": anon,
        "events": events,
    }
    body.update(extra)
    return body


def send(
    client,
    site,
    body: Any,
    *,
    compress: bool = True,
    origin: str | None = ORIGIN,
    key: str | None = None,
):
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    data = gzip.compress(raw) if compress and not isinstance(body, bytes) else raw
    headers = {"HTTP_ORIGIN": origin} if origin else {}
    return client.post(
        f"/replay?site={key or site.key}", data, content_type="text/plain", **headers
    )
