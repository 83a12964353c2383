"""The player of the session timeline page: its data island, its frame's URL and policy.

The player runs in a frame of its own (GET .../sessions/<session>/player, site-scoped as
the timeline): the recorded page's CSS needs inline styles, which only that document's
policy allows; the timeline page keeps the analyst pages' policy (style-src 'self')."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.urls import reverse

from sessions_app.foundation.core import eventnames, timebuckets
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.models import Site
from sessions_app.foundation.tables import replay_chunks

MAX_MS = 10**14  # a `t` past this is no moment of a session (year 5138)
# The click path's events as marks on the player's progress bar, by kind.
TAGS = {"pageview": "#2e7d32", "click": "#1565c0", "custom": "#7b1fa2", "rage": "#c62828"}
DRAWN = {"custom": 0, "pageview": 1, "click": 2, "rage": 3}  # at one moment, lowest drawn first


def seek_param(value: str | None) -> int | None:
    """`?t=`: the moment (epoch ms) a link opens the player at (a rage click, a funnel's
    last step); None without one; RangeError naming `t` if it is no such moment."""
    if not value:
        return None
    if not (value.isascii() and value.isdigit() and 0 < int(value) < MAX_MS):
        raise RangeError("t", "the moment to play from, in milliseconds since 1970")
    return int(value)


def player_data(
    site: Site, session_id: uuid.UUID, events: list[dict[str, Any]], *, seek: int | None = None
) -> dict[str, Any] | None:
    """The player's data island when the session has a recording (None: no player);
    `seek`, the moment it opens at (replay_player.js starts it SEEK_LEAD before).

    Each event gets `ms` (its epoch milliseconds: the row's seek button)."""
    if not replay_chunks.replay_exists(site_id=site.id, session_id=session_id):
        return None
    return player_island(site, session_id, events, seek=seek)


def player_island(
    site: Site, session_id: uuid.UUID, events: list[dict[str, Any]], *, seek: int | None = None
) -> dict[str, Any]:
    """The data island: the replay API, the events as marks, the moment to open at and
    the player frame's URL (the timeline page frames it)."""
    marks = []
    for event in events:
        event["ms"] = timebuckets.epoch_ms(event["ts"])
        if eventnames.internal(event["type"], event.get("name")):
            continue  # the product's own (vitals, a page's leave, identify): no mark
        rage = (event.get("layout") or {}).get("rage")
        tag = "rage" if rage else event["type"]
        marks.append({"t": event["ms"], "tag": tag, "id": str(event["event_id"])})
    # The player draws the marks in this order, a later one over an earlier one of the
    # same moment: clicks and rage clicks last, so a custom event never hides them.
    marks.sort(key=lambda m: (m["t"], DRAWN.get(m["tag"], 0)))
    ids = {"site_id": site.id, "session_id": session_id}
    api = reverse("api-session-replay", kwargs=ids)
    frame = reverse("sessions_app:session-player", kwargs=ids) + (f"?t={seek}" if seek else "")
    return {"api": api, "marks": marks, "tags": TAGS, "seek": seek, "frame": frame}


def replays_mark(site: Site, sessions: list[dict[str, Any]]) -> None:
    """Set `has_replay` on each session (a page of a list): the lists link its replay."""
    found = replay_chunks.replays_found(
        site_id=site.id, session_ids=(s["session_id"] for s in sessions)
    )
    for session in sessions:
        session["has_replay"] = str(session["session_id"]) in found


def player_policy(site: Site) -> str:
    """The player frame's Content-Security-Policy (the document at `frame`, not the
    timeline page): scripts stay 'self'; styles need 'unsafe-inline' (the replayed page's
    CSS goes into rrweb's sandboxed frame inside it as <style> elements, the player sets
    style attributes), and images, fonts and media of the recorded page load from the
    site's own origins; only a page of this origin may frame it."""
    origins = " ".join(site.allowed_origins)
    policy = settings.CONTENT_SECURITY_POLICY
    policy = policy.replace("style-src 'self'", f"style-src 'self' 'unsafe-inline' {origins}")
    policy = policy.replace("img-src 'self' data:", f"img-src 'self' data: blob: {origins}")
    policy = policy.replace("frame-ancestors 'none'", "frame-ancestors 'self'")
    return f"{policy}; font-src 'self' data: {origins}; media-src 'self' {origins}".replace(
        "  ", " "
    )
