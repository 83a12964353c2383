"""The Cohorts page (retention triangle, lifecycle, stickiness, with their charts) and a
cohort cell's users (features/cohorts/reads.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from sessions_app.domain.aggregates.usersets import MAX_KEYS_READ
from sessions_app.domain.permissions import site_page
from sessions_app.features.cohorts import reads
from sessions_app.features.cohorts.reader import shared_reads
from sessions_app.features.web import periods
from sessions_app.features.web.params import query_params
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.models import Site

SHADES = 10  # the triangle's cells are shaded in this many steps of their percentage


def _shaded(answer: dict[str, Any]) -> None:
    for row in answer["cohorts"]:
        row["cells"] = [
            {
                "offset": k,
                "count": n,
                "percent": p,
                "shade": 0 if p is None else min(SHADES, round(p / 100 * SHADES)),
            }
            for k, (n, p) in enumerate(zip(row["counts"], row["percents"], strict=True))
        ]


def _charts(answer: dict[str, Any], life: dict[str, Any], sticky: dict[str, Any] | None) -> Any:
    """The data islands static/sessions_app/cohorts.js draws."""
    return {
        "unit": answer["unit"],
        "curves": [{"label": r["start"][:10], "values": r["percents"]} for r in answer["cohorts"]],
        "average": answer["average"],
        "lifecycle": life["periods"],
        "stickiness": sticky["total"] if sticky else [],
    }


@site_page()
def site_cohorts(request: HttpRequest, site: Site) -> HttpResponse:
    """Retention cohorts, lifecycle and stickiness over the period; 400 naming a bad field."""
    params = query_params(request)
    error, query, answer, life, sticky = "", None, None, None, None
    now = datetime.now(UTC)
    try:
        query = reads.query_parse(
            params, now=now, zone=periods.site_zone(site.time_zone), site_id=site.id
        )
        with shared_reads():  # the three reports read each stored set once between them
            answer = reads.cohorts(site.id, query, now=now)
            life = reads.lifecycle(site.id, query, now=now)
            sticky = reads.stickiness(site.id, query, now=now) if query.unit != "day" else None
        _shaded(answer)
    except RangeError as exc:
        error = str(exc)
    own = {
        "unit": query.unit if query else params.get("unit") or "week",
        "first_event": params.get("first_event", ""),
        "return_event": params.get("return_event", ""),
    }
    asked = urlencode({**(query.period.params() if query else {}), **own})
    context = {
        "site": site,
        "error": error,
        "answer": answer,
        "lifecycle": life,
        "stickiness": sticky,
        "values": own,
        "units": reads.UNITS,
        "asked": asked,
        "charts": _charts(answer, life, sticky) if answer and life else None,
        "period": query.period if query else None,
        "range_note": query.note if query else "",
    }
    return render(request, "sessions_app/cohorts.html", context, status=400 if error else 200)


@site_page()
def cohort_users(request: HttpRequest, site: Site) -> HttpResponse:
    """One cell's users (`cohort`, `offset`: its row and column), the first MAX_KEYS_READ
    by user number, each opening the user's profile."""
    params = query_params(request)
    error, total, query = "", 0, None
    keys: list[str] = []
    now = datetime.now(UTC)
    try:
        query = reads.query_parse(
            params, now=now, zone=periods.site_zone(site.time_zone), site_id=site.id
        )
        cohort, offset = _index(params, "cohort"), _index(params, "offset")
        keys, total = reads.cell_users(site.id, query, cohort=cohort, offset=offset, now=now)
    except RangeError as exc:
        error = str(exc)
    context = {
        "site": site,
        "error": error,
        "keys": keys,
        "total": total,
        "cap": MAX_KEYS_READ,
        "query": query,
        "period": query.period if query else None,
        "cohort_start": query.starts[_index(params, "cohort")] if keys and query else None,
        "back": urlencode({k: v for k, v in params.items() if k not in ("cohort", "offset")}),
    }
    return render(request, "sessions_app/cohort_users.html", context, status=400 if error else 200)


def _index(params: dict[str, str], name: str) -> int:
    try:
        return int(params.get(name, ""))
    except ValueError:
        raise RangeError(name, "a whole number") from None
