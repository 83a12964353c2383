"""The range a heatmap covers, the same for the Heatmaps page and the overlay it opens:
the period of the URL's range parameters, capped at MAX_DAYS, so the two show the same
numbers. The page hands its range to the overlay in the URL fragment it builds
(`overlay_fragment`), the overlay sends it back as /api/heatmap's parameters."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode
from zoneinfo import ZoneInfo

from sessions_app.features.heatmaps import reads
from sessions_app.features.web import periods
from sessions_app.foundation.core.bounds import RangeError

MAX_DAYS = 92  # the day buckets a page's answer and its trend read
PASSED = ("period", "from", "to", "start", "end")  # what the overlay is handed


@dataclass(frozen=True)
class Covered:
    """The period asked for and the [start, end) read for it (its last MAX_DAYS days:
    `note` says so when it had to cut)."""

    period: periods.Period
    start: datetime
    end: datetime
    note: str

    def described(self) -> dict[str, Any]:
        """The range as the overlay says it: its name, its days, the cap's note."""
        shown = replace(self.period, start=self.start, end=self.end)
        return {
            "label": self.period.label,
            "days": periods.days_shown(shown),
            "note": self.note,
            "params": {k: v for k, v in self.period.params().items() if k in PASSED},
        }


def _old_days(params: Mapping[str, str], zone: ZoneInfo, now: datetime) -> Mapping[str, str]:
    """An old link's `days` (7, 30 or 90, the choice before the range picker) as the
    period it meant; the parameters as they are otherwise."""
    days = params.get("days")
    if not days or any(params.get(name) for name in periods.PARAMS):
        return params
    if days not in {str(d) for d in reads.DAYS}:
        raise RangeError("days", f"one of {', '.join(map(str, reads.DAYS))}")
    first = now.astimezone(zone).date() - timedelta(days=int(days) - 1)
    return {**params, "period": "custom", "from": first.isoformat()}


def heatmap_range(
    params: Mapping[str, str], *, zone: ZoneInfo, now: datetime, default: str
) -> Covered:
    """The range these parameters ask for (`default`: the preset when none is given);
    RangeError naming the first bad one."""
    period = periods.period_param(_old_days(params, zone, now), zone=zone, now=now, default=default)
    start, end, note = periods.capped(period, MAX_DAYS, "Heatmaps cover")
    return Covered(period, start, end, note)


def overlay_fragment(token: str, covered: Covered) -> str:
    """The URL fragment "View on page" opens: the token, then the page's range, each
    parameter prefixed `cs-` (the tracker takes the token alone; the overlay the rest)."""
    passed = {f"cs-{k}": v for k, v in covered.described()["params"].items()}
    return f"cs-heatmap={token}&{urlencode(passed)}"
