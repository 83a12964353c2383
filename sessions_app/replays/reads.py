"""A session's recording for the player: its chunks in order, inflated, a page at a time."""

from __future__ import annotations

import gzip
import json
import uuid
from datetime import UTC, datetime
from typing import Any

from sessions_app.core.bounds import RangeError
from sessions_app.replays import assets
from sessions_app.tables import replay_chunks

FIRST_PAGE = 4  # chunks in the first answer: the first frame shows before the rest arrives
PAGE = 40  # chunks an answer after that
MAX_SEQ = 100_000


def cursor_parse(value: str | None) -> tuple[datetime, int] | None:
    """The `after` cursor: "<page start ms>:<seq>" of the last chunk already read."""
    if not value:
        return None
    page, _, seq = value.partition(":")
    if not (page.isdigit() and seq.isdigit() and int(seq) <= MAX_SEQ and len(page) <= 15):
        raise RangeError("after", "expected <page start ms>:<seq> from the previous answer's next")
    return datetime.fromtimestamp(int(page) / 1000, UTC), int(seq)


def _ms(value: datetime) -> int:
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return round(value.timestamp() * 1000)


def replay_page(
    *, site_id: uuid.UUID, session_id: uuid.UUID, after: tuple[datetime, int] | None
) -> dict[str, Any]:
    """The recorder events of the session's next chunks, and the cursor of the rest."""
    limit = PAGE if after else FIRST_PAGE
    rows = replay_chunks.chunks_read(
        site_id=site_id, session_id=session_id, after=after, limit=limit
    )
    events: list[Any] = []
    chunks = []
    bodies = [json.loads(gzip.decompress(row["data"])) for row in rows]
    missing = assets.assets_restore(site_id, bodies)
    for row, body in zip(rows, bodies, strict=True):
        # The events carry the visitor's clock; the stored times are moved by its skew
        # (as the tracker's events are), so the replay and the click path line up.
        skew = _ms(row["start_at"]) - int(body.get("start") or _ms(row["start_at"]))
        for event in body.get("events") or []:
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
    last = chunks[-1] if len(rows) == limit else None
    return {
        "chunks": chunks,
        "events": events,
        "next": f"{last['page']}:{last['seq']}" if last else None,
        # stylesheets no longer stored (the replay shows the page without them)
        "missing_assets": missing,
    }
