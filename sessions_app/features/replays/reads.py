"""A session's recording for the player: its chunks in order, inflated, a page at a time."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from sessions_app.features.replays import assets, chunks
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.tables import replay_chunks

FIRST_PAGE = 4  # chunks in the first answer: the first frame shows before the rest arrives
PAGE = 40  # chunks an answer after that


def cursor_parse(value: str | None) -> tuple[datetime, int] | None:
    """The `after` cursor: "<page start ms>:<seq>" of the last chunk already read."""
    if not value:
        return None
    page, _, seq = value.partition(":")
    if not (page.isdigit() and seq.isdigit() and int(seq) <= chunks.MAX_SEQ and len(page) <= 15):
        raise RangeError("after", "expected <page start ms>:<seq> from the previous answer's next")
    return datetime.fromtimestamp(int(page) / 1000, UTC), int(seq)


def _ms(value: datetime) -> int:
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return round(value.timestamp() * 1000)


def replay_page(
    *, site_id: uuid.UUID, session_id: uuid.UUID, after: tuple[datetime, int] | None
) -> dict[str, Any]:
    """The recorder events of the session's next chunks, and the cursor of the rest.

    A chunk that cannot be read (stored by an older version, or damaged) is left out and
    named in `unreadable`; the rest of the recording plays."""
    limit = PAGE if after else FIRST_PAGE
    rows = replay_chunks.chunks_read(
        site_id=site_id, session_id=session_id, after=after, limit=limit
    )
    readable, unreadable = [], []
    for row in rows:
        body = _body(row["data"])
        if body is None or row["start_at"] is None or row["end_at"] is None:
            unreadable.append({"page": _ms(row["page_start"]), "seq": row["seq"]})
        else:
            readable.append((row, body))
    missing = assets.assets_restore(site_id, [body for _, body in readable])
    events: list[Any] = []
    chunks = []
    for row, body in readable:
        # The events carry the visitor's clock; the stored times are moved by its skew
        # (as the tracker's events are), so the replay and the click path line up.
        start = body.get("start")
        skew = _ms(row["start_at"]) - start if type(start) is int else 0
        for event in body.get("events") or []:
            if isinstance(event, dict) and type(event.get("timestamp")) is int:
                event["timestamp"] += skew
                events.append(event)
        chunks.append(
            {
                "page": _ms(row["page_start"]),
                "seq": row["seq"],
                "start": _ms(row["start_at"]),
                "end": _ms(row["end_at"]),
                "last_event": str(row["last_event_id"]) if row["last_event_id"] else None,
            }
        )
    last = rows[-1] if len(rows) == limit else None
    return {
        "chunks": chunks,
        "events": events,
        "next": f"{_ms(last['page_start'])}:{last['seq']}" if last else None,
        # stylesheets no longer stored (the replay shows the page without them)
        "missing_assets": missing,
        # chunks that could not be read (left out: the replay skips their moments)
        "unreadable": unreadable,
    }


def _body(data: bytes | None) -> dict[str, Any] | None:
    """A stored chunk's JSON object, read as the collector checked it; None if it cannot be."""
    try:
        body = chunks.parse_json_object(chunks.stored_text(data or b""))
    except chunks.ChunkError:
        return None
    return body if isinstance(body.get("events"), list) else None
