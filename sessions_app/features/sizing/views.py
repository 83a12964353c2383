"""Admin pages for partition sizing: the bucket calculator and the partition-size report."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from sessions_app.domain.ledger import sizing
from sessions_app.domain.partitions import counting, estimates
from sessions_app.domain.partitions.partition_report import partition_report as report_partitions
from sessions_app.domain.permissions import admin_required
from sessions_app.foundation.models import Site

MAX_WRITES_PER_SECOND = 1_000_000
MIN_WRITES_PER_SECOND = 0.001
MAX_ROW_BYTES = 1_000_000
# The rows of the sizing guide's decision matrix: (writes/s, bytes per row).
SEED_003_ROWS = [
    (1, 100),
    (10, 100),
    (100, 100),
    (1000, 100),
    (10000, 100),
    (1, 1000),
    (10, 1000),
    (100, 1000),
]


class CalculatorForm(forms.Form):
    writes_per_second = forms.FloatField(
        min_value=MIN_WRITES_PER_SECOND,
        max_value=MAX_WRITES_PER_SECOND,
        error_messages={
            "required": "writes per second: required",
            "invalid": "writes per second: a number such as 12.5",
            "min_value": f"writes per second: at least {MIN_WRITES_PER_SECOND}",
            "max_value": f"writes per second: at most {MAX_WRITES_PER_SECOND:,}",
        },
    )
    row_bytes = forms.IntegerField(
        min_value=1,
        max_value=MAX_ROW_BYTES,
        error_messages={
            "required": "bytes per row: required",
            "invalid": "bytes per row: a whole number such as 500",
            "min_value": "bytes per row: at least 1",
            "max_value": f"bytes per row: at most {MAX_ROW_BYTES:,}",
        },
    )


class ReportForm(forms.Form):
    site = forms.UUIDField(required=False, error_messages={"invalid": "site: not a site id"})
    hours = forms.IntegerField(
        min_value=1,
        max_value=estimates.MAX_WINDOW_HOURS,
        required=False,
        error_messages={
            "invalid": "hours: a whole number",
            "min_value": "hours: at least 1",
            "max_value": f"hours: at most {estimates.MAX_WINDOW_HOURS} (a week)",
        },
    )

    def clean_site(self) -> Site | None:
        site_id = self.cleaned_data["site"]
        if site_id is None:
            return None
        site = Site.objects.filter(id=site_id).first()
        if site is None:
            raise forms.ValidationError("site: no such site")
        return site


def _errors(form: forms.Form) -> list[str]:
    return [str(message) for messages in form.errors.values() for message in messages]


def _size_rows(writes_per_second: float, row_bytes: int) -> list[dict[str, Any]]:
    return [
        {
            "width": width,
            "label": sizing.WIDTH_LABELS[width],
            "size": size,
            "verdict": verdict,
        }
        for width, size, verdict in sizing.partition_sizes(
            writes_per_second=writes_per_second, row_bytes=row_bytes
        )
    ]


@admin_required
def calculator(request: HttpRequest) -> HttpResponse:
    """Show the partition size of every bucket width for a write rate and row size."""
    bound = any(name in request.GET for name in ("writes_per_second", "row_bytes"))
    form = CalculatorForm(
        request.GET if bound else None, initial={"writes_per_second": 10, "row_bytes": 500}
    )
    context: dict[str, Any] = {"form": form, "errors": [], "result": None}
    if bound and not form.is_valid():
        context["errors"] = _errors(form)
        status = 400
    else:
        rate, row_bytes = (
            (form.cleaned_data["writes_per_second"], form.cleaned_data["row_bytes"])
            if bound
            else (10.0, 500)
        )
        rows = _size_rows(rate, row_bytes)
        context["result"] = {
            "writes_per_second": rate,
            "row_bytes": row_bytes,
            "rows": rows,
            "recommendation": sizing.recommend_width(writes_per_second=rate, row_bytes=row_bytes),
            "chart": size_chart(
                [(r["label"], [("size", r["size"])]) for r in rows], series=["size"]
            ),
        }
        status = 200
    context["matrix"] = [
        {
            "rate": rate,
            "row": sizing.format_size(row_bytes),
            "cells": {r["width"].value: r for r in _size_rows(rate, row_bytes)},
        }
        for rate, row_bytes in SEED_003_ROWS
    ]
    context["verdicts"] = list(sizing.Verdict)
    return render(request, "sessions_app/sizing_calculator.html", context, status=status)


@admin_required
def partition_report(request: HttpRequest) -> HttpResponse:
    """Show estimated and observed partition sizes per table for one site."""
    form = ReportForm(request.GET)
    context: dict[str, Any] = {"form": form, "errors": [], "report": None, "site": None}
    context["sites"] = list(Site.objects.all())
    context.update(
        count_cap=f"{counting.COUNT_CAP:,}",
        row_budget=f"{counting.ROW_BUDGET:,}",
        sample_rows=counting.SAMPLE_ROWS,
    )
    if not form.is_valid():
        context["errors"] = _errors(form)
        return render(request, "sessions_app/partition_report.html", context, status=400)
    site = form.cleaned_data["site"] or next(iter(context["sites"]), None)
    hours = form.cleaned_data["hours"] or 24
    context.update({"chosen": site, "hours": hours})
    if site is not None:
        report = report_partitions(
            site_id=site.id, event_shards=site.event_shards, now=datetime.now(UTC), hours=hours
        )
        context["report"] = report
        context["chart"] = size_chart(
            [
                (
                    t.table,
                    [
                        ("estimate", t.estimate_bytes),
                        ("observed", t.observed_bytes),
                        ("cassandra", t.cassandra.mean_bytes if t.cassandra else None),
                    ],
                )
                for t in report.tables
            ],
            series=["estimate", "observed", "cassandra"],
        )
    return render(request, "sessions_app/partition_report.html", context)


# --- a log-scale bar chart of partition sizes (server-side SVG) ----------------------

CHART_WIDTH = 640
LABEL_WIDTH = 170
PLOT_WIDTH = CHART_WIDTH - LABEL_WIDTH - 20
BAR_HEIGHT = 9
LOW_DECADE, HIGH_DECADE = 3, 10  # 1 KB .. 10 GB


def _x(size: float) -> float:
    """Return the x offset of a size on the log axis, clamped to the plot."""
    decade = math.log10(size) if size > 0 else LOW_DECADE
    fraction = (min(max(decade, LOW_DECADE), HIGH_DECADE) - LOW_DECADE) / (HIGH_DECADE - LOW_DECADE)
    return round(LABEL_WIDTH + fraction * PLOT_WIDTH, 1)


def size_chart(
    groups: list[tuple[str, list[tuple[str, float | None]]]], *, series: list[str]
) -> dict[str, Any]:
    """Return the geometry of a log-scale bar chart: one group of bars per label.

    The 1 MB and 100 MB lines mark the sizing floor and ceiling.
    """
    top = 22
    group_height = BAR_HEIGHT * len(series) + 10
    bars, labels = [], []
    for index, (label, values) in enumerate(groups):
        y0 = top + index * group_height
        labels.append({"text": label, "y": y0 + group_height / 2})
        for row, (name, size) in enumerate(values):
            if size is None:
                continue
            bars.append(
                {
                    "series": name,
                    "x": LABEL_WIDTH,
                    "y": y0 + row * BAR_HEIGHT,
                    "w": max(1.0, round(_x(size) - LABEL_WIDTH, 1)),
                    "h": BAR_HEIGHT - 1,
                    "title": f"{label} {name}: {sizing.format_size(size)}",
                    "verdict": sizing.verdict(size),
                }
            )
    height = top + len(groups) * group_height + 4
    ticks = [
        {"x": _x(10.0**d), "label": sizing.format_size(10.0**d)}
        for d in range(LOW_DECADE, HIGH_DECADE + 1)
    ]
    limits = [
        {"x": _x(sizing.FLOOR_BYTES), "label": "1 MB floor"},
        {"x": _x(sizing.CEILING_BYTES), "label": "100 MB ceiling"},
    ]
    return {
        "width": CHART_WIDTH,
        "height": height,
        "plot_bottom": height - 4,
        "label_x": LABEL_WIDTH - 6,
        "bars": bars,
        "labels": labels,
        "ticks": ticks,
        "limits": limits,
        "series": series,
    }
