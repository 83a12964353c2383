"""What a funnel's API and pages show, from their URL parameters: its numbers over a
range (features/funnels/results.py) and one page of the units behind a step."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from sessions_app.features.funnels import defs, results
from sessions_app.features.funnels.table import split_names
from sessions_app.features.web.params import iso, whole_param
from sessions_app.features.web.periods import Period, capped, period_param, site_zone
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.models import Funnel, Site
from sessions_app.foundation.tables import replay_chunks

MAX_DAYS = 92  # a funnel's days scanned at once (funnel_days rows)


def funnel_range(site: Site, params: Mapping[str, str]) -> tuple[Period, datetime, datetime, str]:
    """The period every page reads (periods.py, in the site's zone; the old start/end
    still work) and the [start, end) read: its last 92 days at most, with a note when cut."""
    period = period_param(params, zone=site_zone(site.time_zone), now=datetime.now(UTC))
    start, end, note = capped(period, MAX_DAYS, "Funnels cover")
    return period, start, end, note


def funnel_result(site: Site, funnel: Funnel, params: Mapping[str, str]) -> dict[str, Any]:
    """The funnel's numbers over the range in `params` (breakdown= one dimension)."""
    period, start, end, note = funnel_range(site, params)
    breakdown = params.get("breakdown") or None
    if breakdown and breakdown not in split_names():
        raise RangeError("breakdown", f"one of {', '.join(split_names())}")
    assert funnel.current is not None
    result = results.funnel_units(site=site, version=funnel.current, start=start, end=end)
    return {
        "funnel": defs.funnel_json(funnel),
        "start": iso(start.replace(microsecond=0)),
        "end": iso(end),
        "period": period.params(),
        "time_zone": str(period.zone),
        "note": note,
        **results.funnel_summary(funnel.current.definition, result, breakdown=breakdown),
    }


def funnel_unit_page(
    site: Site, funnel: Funnel, params: Mapping[str, str], *, limit: int
) -> dict[str, Any]:
    """One page of the units that reached a step (or dropped off after it); `replay` on
    each says whether its session has a recording (the page's ▶ opens the player at the
    unit's last step)."""
    _, start, end, _ = funnel_range(site, params)
    assert funnel.current is not None
    steps = len(funnel.current.definition["steps"])
    step, offset = whole_param(params, "step", 1), whole_param(params, "cursor", 0)
    if not 1 <= step <= steps:
        raise RangeError("step", f"between 1 and {steps}")
    if not 0 <= offset <= 1_000_000:
        raise RangeError("cursor", "not a cursor this API returned")
    outcome = params.get("outcome") or "reached"
    result = results.funnel_units(site=site, version=funnel.current, start=start, end=end)
    rows, following = results.units_page(
        result, step=step, outcome=outcome, offset=offset, limit=limit
    )
    _replays_mark(site, rows)
    return {
        "step": step,
        "outcome": outcome,
        "units": rows,
        "next_cursor": str(following) if following is not None else None,
        "pending_days": [d.date().isoformat() for d in result.days_pending],
    }


def _replays_mark(site: Site, units: list[dict[str, Any]]) -> None:
    """`replay` on each unit: whether its session has a recording (one read a page)."""
    found = replay_chunks.replays_found(
        site_id=site.id, session_ids=(u["session_id"] for u in units)
    )
    for unit in units:
        unit["replay"] = str(unit["session_id"]) in found
