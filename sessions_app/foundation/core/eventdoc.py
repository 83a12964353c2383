"""An event as the API serves it: its JSON document, rendered once when written."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import orjson

from sessions_app.foundation.core import timebuckets

# An event as the API serves it: these keys, in this order (ingest.rows.event_doc
# renders them into session_events.doc at write time).
EVENT_FIELDS = (
    "event_id",
    "site_id",
    "user_key",
    "type",
    "name",
    "ts",
    "url",
    "referrer",
    "title",
    "element",
    "props",
    "context",
    "layout",
    "late",
    "clamped",
    "is_bot",
)


def _decode(value: str | None) -> Any:
    return None if value is None else orjson.loads(value)


def event_row(row: dict[str, Any]) -> dict[str, Any]:
    """An event of a bucket table as a dict (JSON columns decoded, UTC time)."""
    row["ts"] = timebuckets.from_driver(row["ts"])
    row["element"] = _decode(row.get("element"))
    row["props"] = _decode(row.get("props"))
    if "context" in row:
        row["context"] = _decode(row["context"])
    if "layout" in row:
        row["layout"] = _decode(row["layout"])
    return row


def event_from_doc(doc: bytes) -> dict[str, Any]:
    """Decode an event's document into the dict the columns read as (UUIDs, UTC time)."""
    return event_typed(orjson.loads(doc))


def event_typed(event: dict[str, Any]) -> dict[str, Any]:
    """Turn a decoded event document's ids and time back into UUIDs and a datetime."""
    event["event_id"] = uuid.UUID(event["event_id"])
    event["site_id"] = uuid.UUID(event["site_id"])
    event["ts"] = datetime.fromisoformat(event["ts"])
    return event


_TS_KEY = b'"ts":"'


def doc_time(doc: bytes) -> datetime:
    """The time of an event's document, read without decoding the rest of it.

    The first `"ts":"` in a document is its key: before it come only string values,
    inside which JSON escapes every quote.
    """
    start = doc.index(_TS_KEY) + len(_TS_KEY)
    return datetime.fromisoformat(doc[start : doc.index(b'"', start)].decode())
