"""Tracker events for /collect: one event's body, a beacon posted by the test client."""

from __future__ import annotations

import itertools
import json
from datetime import datetime, timedelta
from typing import Any

from sessions_app.foundation.models import Site

ORIGIN = "https://shop.example"
_ids = itertools.count()


def event(ts: datetime, *, kind: str = "pageview", anon: str = "anon-1", **extra: Any) -> dict:
    """Return a valid /collect event at ts."""
    body = {
        "id": extra.pop("id", f"ev-{next(_ids)}"),
        "type": kind,
        "ts": ts.isoformat(),
        "anonymous_id": anon,
        "url": extra.pop("url", "https://shop.example/"),
    }
    if kind == "custom":
        body["name"] = extra.pop("name", "signup")
    body.update(extra)
    return body


def post(
    client,
    site: Site,
    events: list[dict],
    *,
    origin: str | None = ORIGIN,
    sent_at: datetime | None = None,
    **headers: Any,
):
    body: dict[str, Any] = {"site": site.key, "events": events}
    if sent_at is not None:
        body["sent_at"] = sent_at.isoformat()
    if origin:
        headers["HTTP_ORIGIN"] = origin
    return client.post("/collect", json.dumps(body), content_type="text/plain", **headers)


def minutes(n: float) -> timedelta:
    return timedelta(minutes=n)
