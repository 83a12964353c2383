"""A page's heatmap over a range, and the signed token the on-page overlay reads it with.

Sealed buckets come from bucket_heatmaps (the asked layout's row of each bucket, and
every layout's click count), the unsealed hours of the range are counted live from their raw
rows (the last MAX_LIVE_HOURS of them). The token is for the overlay alone: the site id,
then a Django signature of (site, page) keyed by the site's heatmap_salt, so it reads one
page's heatmap and nothing else, expires after TOKEN_AGE, and dies when a site admin
rotates the salt; it travels in the URL fragment, which browsers never send to the
customer's server.
"""

from __future__ import annotations

import uuid
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from django.core import signing

from sessions_app.domain.aggregates import heatmaps
from sessions_app.domain.aggregates.heatmap_rows import layout_clicks, layout_elements, layout_merge
from sessions_app.domain.aggregates.products import HEATMAPS
from sessions_app.domain.aggregates.report import MAX_LIVE_HOURS, bucket_cover
from sessions_app.domain.aggregates.seal import hour_live
from sessions_app.domain.ingest.enrich import VIEWPORTS
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.tables import replay_chunks

TOKEN_AGE = timedelta(hours=1)
SALT = "clickstream.heatmap-overlay"
DAYS = (7, 30, 90)
MAX_PAGE = 2_048


def _signer(salt: str) -> signing.TimestampSigner:
    # "." between the parts: the token is [A-Za-z0-9._-], what the tracker takes from a
    # URL fragment.
    return signing.TimestampSigner(salt=f"{SALT}:{salt}", sep=".")


def token_for(*, site_id: uuid.UUID, salt: str, page: str) -> str:
    """A read-only token for the overlay on one page of a site (valid TOKEN_AGE, or until
    the site's salt is rotated)."""
    body = {"site": str(site_id), "page": page, "scope": "heatmap"}
    return f"{site_id.hex}.{_signer(salt).sign_object(body)}"


def site_of_token(token: str) -> uuid.UUID:
    """The site a token names, not yet verified (its salt verifies the rest);
    RangeError("token", ...) if it names none."""
    try:
        return uuid.UUID(hex=token.partition(".")[0])
    except ValueError:
        raise RangeError("token", "not a heatmap token of this server") from None


def token_check(token: str, *, site_id: uuid.UUID, salt: str, page: str) -> None:
    """Pass if the token was made for this page of this site with its current salt;
    RangeError("token", ...) if it is bad, expired, revoked or for another page."""
    try:
        body = _signer(salt).unsign_object(token.partition(".")[2], max_age=TOKEN_AGE)
    except signing.SignatureExpired:
        raise RangeError("token", "expired; open “View on page” again") from None
    except signing.BadSignature:
        raise RangeError(
            "token", "not valid for this site (revoked or altered); open “View on page” again"
        ) from None
    if not isinstance(body, dict) or body.get("scope") != "heatmap":
        raise RangeError("token", "not a heatmap token")
    if body.get("site") != str(site_id):
        raise RangeError("token", "made for another site")
    if body.get("page") != page:
        raise RangeError("token", f"made for another page ({str(body.get('page'))[:200]})")


def page_heat(
    *,
    site_id: uuid.UUID,
    page: str,
    vp: str,
    start: datetime,
    end: datetime,
    samples: bool = False,
) -> tuple[heatmaps.Heat, Counter[str], int]:
    """The page's counts in one layout over [start, end) (the latest flagged clicks only
    if `samples`), its clicks in every layout, and the hours counted live."""
    wanted, live, shards = bucket_cover(site_id=site_id, start=start, end=end)
    counted_live = []
    for hour in live[-MAX_LIVE_HOURS:]:
        found = hour_live(
            site_id=site_id, hour=hour, shards=shards.get(hour, 1), products=(HEATMAPS,)
        )[HEATMAPS.name]
        counted_live.append({k: h for k, h in found.items() if k[0] == page})
    clicks = layout_clicks(site_id=site_id, buckets=wanted, page=page)
    for rows in counted_live:
        for (_, layout), heat in rows.items():
            clicks[layout] += heat.clicks
    heat = layout_merge(
        site_id=site_id,
        buckets=wanted,
        page=page,
        vp=vp,
        samples=samples,
        live=[rows[page, vp] for rows in counted_live if (page, vp) in rows],
    )
    return heat, clicks, min(len(live), MAX_LIVE_HOURS)


def reach(scroll: dict[int, int]) -> list[list[float]]:
    """reach[p]: the share of page views that scrolled at least p percent (p = 0…100)."""
    views = sum(scroll.values())
    shares, deeper = [], 0
    for percent in range(100, -1, -1):
        deeper += scroll.get(percent, 0)
        shares.append([percent, round(deeper / views, 4) if views else 0.0])
    return shares[::-1]


def median_fold(folds: dict[int, int]) -> int | None:
    """The fold height half the page views had at most (lower median, in FOLD_PX steps)."""
    total, seen = sum(folds.values()), 0
    for px in sorted(folds):
        seen += folds[px]
        if 2 * seen >= total:
            return px
    return None


def range_answer(
    *,
    site_id: uuid.UUID,
    page: str,
    vp: str,
    start: datetime,
    end: datetime,
    samples: bool = False,
) -> tuple[dict[str, Any], heatmaps.Heat]:
    """A page's heatmap over [start, end) (the analyst's page: the period it asks for),
    and the layout's counts it came from (with the latest flagged clicks if `samples`)."""
    if not page.startswith("/") or len(page) > MAX_PAGE:
        raise RangeError("page", f"a path starting with / of at most {MAX_PAGE} characters")
    if vp not in (*VIEWPORTS, heatmaps.UNKNOWN):
        raise RangeError("vp", f"one of {', '.join(VIEWPORTS)}")
    heat, clicks, live = page_heat(
        site_id=site_id, page=page, vp=vp, start=start, end=end, samples=samples
    )
    answer = {
        "page": page,
        "vp": vp,
        "start": start,
        "end": end,
        "live_hours": live,
        "layouts": {v: clicks[v] for v in VIEWPORTS},
        "clicks": heat.clicks,
        "grid": {
            "columns": heatmaps.GRID_COLUMNS,
            "row_px": heatmaps.ROW_PX,
            "cells": sorted(heat.cells.items()),
        },
        "elements": [
            {
                "selector": label,
                "text": heat.texts.get(label, ""),  # "": none kept, or it varied
                "clicks": c[0],
                "rage": c[1],
                "dead": c[2],
            }
            for label, c in sorted(heat.elements.items(), key=lambda kv: (-kv[1][0], kv[0]))
        ],
        "scroll": {"views": heat.scroll.total(), "reach": reach(heat.scroll)},
        "fold": median_fold(heat.folds),
    }
    return answer, heat


def daily_flags(
    *, site_id: uuid.UUID, page: str, vp: str, start: datetime, end: datetime
) -> tuple[list[datetime], dict[str, list[int]]]:
    """Each element's rage + dead clicks per sealed day of [start, end) (a day not sealed
    yet shows 0: its hours are in the range's totals, not in the trend)."""
    days = timebuckets.buckets_between(
        timebuckets.floor(start, "day"), timebuckets.floor(end, "day"), "day", limit=93
    )
    rows = layout_elements(site_id=site_id, buckets=[("day", d) for d in days], page=page, vp=vp)
    trend: dict[str, list[int]] = {}
    for i, elements in enumerate(rows):
        for label, (_, rage, dead) in elements.items():
            trend.setdefault(label, [0] * len(days))[i] = rage + dead
    return days, trend


def recorded(*, site_id: uuid.UUID, session_ids: list[uuid.UUID]) -> set[str]:
    """The sessions among the samples' that have a recording, as text: `str(id) in found`."""
    return replay_chunks.replays_found(site_id=site_id, session_ids=session_ids)
