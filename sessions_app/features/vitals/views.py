"""The Performance page (web vitals over the period, filtered by device, country and
browser), a page's detail with the elements to fix, and the pages as CSV."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from sessions_app.domain.permissions import site_page
from sessions_app.features.vitals import reads
from sessions_app.features.web import periods
from sessions_app.features.web.params import query_params
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.dimensions import DEVICES
from sessions_app.foundation.models import Site

RATING_WORDS = {"good": "Good", "ni": "Needs improvement", "poor": "Poor"}


def value_text(unit: str, value: float | None) -> str:
    """A metric's value as a person reads it: 2.41 s, 180 ms, 0.12 (CLS)."""
    if value is None:
        return "\u2013"
    if unit != "ms":  # CLS: small scores keep a third decimal (0.005, not 0.01)
        return f"{value:.3f}" if 0 < value < 0.1 else f"{value:.2f}"
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{value:.0f} ms"


def _percent(share: float | None) -> str:
    return "\u2013" if share is None else f"{share * 100:.0f}%"


def cards(metrics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The metrics with their texts: values, shares, the change (lower is better)."""
    shown = []
    for m in metrics:
        change = m["change"]
        shown.append(
            {
                **m,
                "p75_text": value_text(m["unit"], m["p75"]),
                "previous_text": value_text(m["unit"], m["previous_p75"]),
                "good_text": _percent(m["good"]),
                "ni_text": _percent(m["ni"]),
                "poor_text": _percent(m["poor"]),
                "rating_text": RATING_WORDS.get(m["rating"] or "", "No data"),
                "change_text": ""
                if change is None
                else f"{change * 100:+.1f}%".replace("-", "\u2212"),
                "better": None if not change else change < 0,
                "good_max_text": value_text(m["unit"], m["good_max"]),
                "poor_above_text": value_text(m["unit"], m["poor_above"]),
                "bar": _bar(m),
            }
        )
    return shown


def _bar(m: dict[str, Any]) -> list[dict[str, Any]]:
    """The good / needs improvement / poor split as SVG rects (x and width in %)."""
    x, parts = 0.0, []
    for key, colour in (("good", "#0a7a3f"), ("ni", "#b54708"), ("poor", "#c01048")):
        width = (m[key] or 0) * 100
        parts.append(
            {
                "x": f"{x:.2f}",
                "w": f"{width:.2f}",
                "fill": colour,
                "label": f"{RATING_WORDS[key]}: {_percent(m[key])}",
            }
        )
        x += width
    return parts


def page_rows(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """The pages table: each page's metrics with their texts."""
    return [{**row, "cells": cards(list(row["metrics"].values()))} for row in answer["pages"]]


def _asked(site: Site, params: dict[str, str]) -> tuple[periods.Period, dict[str, str]]:
    zone = periods.site_zone(site.time_zone)
    period = periods.period_param(params, zone=zone, now=datetime.now(UTC))
    return period, reads.filters_parse(params)


def _context(site: Site, params: dict[str, str]) -> dict[str, Any]:
    period = None
    try:
        period, filters = _asked(site, params)
        return {
            "site": site,
            "period": period,
            "filters": filters,
            "devices": DEVICES,
            "range": urlencode(period.params()),
            "filter_query": urlencode(filters),
        }
    except RangeError as exc:
        return {
            "site": site,
            "period": period,
            "error": str(exc),
            "filters": {},
            "devices": DEVICES,
        }


@site_page()
def site_performance(request: HttpRequest, site: Site) -> HttpResponse:
    """p75 cards with the good / poor split and the change, a trend per metric, the pages
    by worst p75; 400 naming a bad parameter."""
    context = performance_context(site, query_params(request))
    status = 400 if context.get("error") else 200
    return render(request, "sessions_app/performance.html", context, status=status)


def performance_context(site: Site, params: dict[str, str]) -> dict[str, Any]:
    """What the performance page shows for these parameters (`error` naming a bad one)."""
    context = _context(site, params)
    if "error" not in context:
        try:
            sort = reads.sort_parse(params)
            period, filters = context["period"], context["filters"]
            context["summary"] = reads.summary_answer(
                site_id=site.id, period=period, filters=filters
            )
            context["pages"] = reads.pages_answer(
                site_id=site.id, period=period, filters=filters, sort=sort
            )
            context["cards"] = cards(context["summary"]["metrics"])
            context["rows"] = page_rows(context["pages"])
            context["trend"] = {
                **context["summary"]["trend"],
                "metrics": {
                    m["name"]: {
                        "label": m["title"],
                        "unit": m["unit"],
                        "good": m["good_max"],
                        "poor": m["poor_above"],
                    }
                    for m in context["summary"]["metrics"]
                },
            }
            context["sort"] = sort
            context["compared"] = period.comparison() is not None
        except RangeError as exc:
            context["error"] = str(exc)
    context["enabled"] = site.vitals
    context["segment_filters"] = reads.FILTERS  # the saved segments this page can apply
    return context


@site_page()
def site_performance_page(request: HttpRequest, site: Site) -> HttpResponse:
    """One page's vitals and the elements that caused its LCP, INP and CLS."""
    params = query_params(request)
    context = _context(site, params)
    if "error" not in context:
        try:
            page = reads.page_parse(params)
            context["detail"] = detail = reads.page_answer(
                site_id=site.id, period=context["period"], filters=context["filters"], page=page
            )
            context["cards"] = cards(detail["metrics"])
            units = {m.name: m.unit for m in reads.METRICS}
            context["elements"] = [
                {
                    "metric": m,
                    "title": reads.vitals.BY_NAME[m].title,
                    "rows": [{**e, "mean_text": value_text(units[m], e["mean"])} for e in found],
                }
                for m, found in detail["elements"].items()
            ]
        except RangeError as exc:
            context["error"] = str(exc)
    status = 400 if context.get("error") else 200
    return render(request, "sessions_app/performance_page.html", context, status=status)


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # as web/exports.csv_cell neutralises


def csv_cell(value: Any) -> Any:
    """A value as a CSV cell: "" for None, a visitor's text never read as a formula."""
    if value is None:
        return ""
    return "'" + value if isinstance(value, str) and value.startswith(FORMULA_START) else value


CSV_FIELDS = ["page", "measured"] + [
    f"{m.name}_{part}" for m in reads.METRICS for part in ("p75", "good", "poor", "n")
]


def pages_csv(answer: dict[str, Any]) -> str:
    """The pages table as CSV: every metric's p75, good and poor shares, measurements."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(CSV_FIELDS)
    for row in answer["pages"]:
        cells: list[Any] = [csv_cell(row["page"]), row["n"]]
        for m in reads.METRICS:
            shown = row["metrics"][m.name]
            cells += [
                csv_cell(shown["p75"]),
                csv_cell(shown["good"]),
                csv_cell(shown["poor"]),
                shown["n"],
            ]
        writer.writerow(cells)
    return buffer.getvalue()


@site_page()
def site_performance_csv(request: HttpRequest, site: Site) -> HttpResponse:
    """The pages table of the period and filters as CSV; 400 naming a bad parameter."""
    params = query_params(request)
    try:
        period, filters = _asked(site, params)
        answer = reads.pages_answer(
            site_id=site.id, period=period, filters=filters, sort=reads.sort_parse(params)
        )
    except RangeError as exc:
        return HttpResponse(f"{exc}\n", status=400, content_type="text/plain; charset=utf-8")
    response = HttpResponse(pages_csv(answer), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="performance.csv"'
    return response
