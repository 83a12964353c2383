"""Retention cohorts, lifecycle and stickiness under /api/ (features/cohorts/reads.py): the numbers
the pages show, as JSON or (`format=csv`) CSV."""

from __future__ import annotations

import csv
import io
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from django.http import HttpResponse
from django.http.response import HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from sessions_app.domain.permissions import SiteView
from sessions_app.features.cohorts import reads
from sessions_app.features.web.params import BadRequest
from sessions_app.features.web.periods import API_PARAMETERS, site_zone

PARAMETERS = [
    *API_PARAMETERS,
    OpenApiParameter(
        "unit",
        str,
        enum=list(reads.UNITS),
        description="default: day for a period of up to 14 days, week up to 183, month beyond",
    ),
    OpenApiParameter("first_event", str, description="cohort by the first time of this event"),
    OpenApiParameter("return_event", str, description="a return is this event (default any visit)"),
    OpenApiParameter("format", str, enum=["json", "csv"]),
]
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_response(header: list[str], rows: list[list[Any]], filename: str) -> HttpResponse:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(header)
    for row in rows:
        writer.writerow(
            ["'" + v if isinstance(v, str) and v.startswith(_FORMULA_START) else v for v in row]
        )
    response = HttpResponse(buffer.getvalue(), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="{filename}.csv"'
    return response


def cohorts_csv(answer: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    width = max((len(r["counts"]) for r in answer["cohorts"]), default=0)
    header = ["cohort", "size", *[f"{answer['unit']} {k}" for k in range(width)]]
    return header, [[r["start"], r["size"], *r["counts"]] for r in answer["cohorts"]]


def lifecycle_csv(answer: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    fields = ["new", "returning", "resurrecting", "dormant", "active"]
    return ["period", *fields], [[r["start"], *(r[f] for f in fields)] for r in answer["periods"]]


def stickiness_csv(answer: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    width = max((len(r["days"]) for r in answer["periods"]), default=0)
    header = ["period", *[f"{k + 1} days" for k in range(width)]]
    return header, [[r["start"], *r["days"]] for r in answer["periods"]]


class _Report(SiteView):
    name = ""
    units: tuple[str, ...] = reads.UNITS  # the ones it answers; the default unit is among them
    compute: Callable[..., dict[str, Any]]
    as_csv: Callable[[dict[str, Any]], tuple[list[str], list[list[Any]]]]

    def get(self, request: Request, site_id: uuid.UUID) -> HttpResponseBase:
        fmt = request.query_params.get("format") or "json"
        if fmt not in ("json", "csv"):
            raise BadRequest("format", "csv or json")
        now = datetime.now(UTC)
        zone = site_zone(self.site.time_zone)
        query = reads.query_parse(
            request.query_params, now=now, zone=zone, site_id=self.site.id, units=self.units
        )
        answer = type(self).compute(self.site.id, query, now=now)
        if fmt == "csv":
            header, rows = type(self).as_csv(answer)
            return csv_response(header, rows, self.name)
        return Response(answer)


class SiteCohorts(_Report):
    """Retention cohorts over the period (period/from/to; periods are UTC days, ISO weeks
    or months, `unit`): each cohort's size (users whose first visit, or first
    `first_event`, was in it) and how many returned (any visit, or `return_event`) 0..n
    periods later, with percentages and the average row. `incomplete` lists periods whose
    event sets were cut (more than 64 event names in a bucket)."""

    name = "cohorts"
    compute = staticmethod(reads.cohorts)
    as_csv = staticmethod(cohorts_csv)

    @extend_schema(parameters=PARAMETERS, responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, site_id: uuid.UUID) -> HttpResponseBase:
        return super().get(request, site_id)


class SiteLifecycle(_Report):
    """Each period's active users as new, returning and resurrecting, and the dormant
    (active the period before, not in this one; negative)."""

    name = "lifecycle"
    compute = staticmethod(reads.lifecycle)
    as_csv = staticmethod(lifecycle_csv)

    @extend_schema(parameters=PARAMETERS, responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, site_id: uuid.UUID) -> HttpResponseBase:
        return super().get(request, site_id)


class SiteStickiness(_Report):
    """For each week or month (`unit`), how many of its active users were active on 1, 2,
    ... of its days (`days[0]` is one day)."""

    name = "stickiness"
    units = ("week", "month")
    compute = staticmethod(reads.stickiness)
    as_csv = staticmethod(stickiness_csv)

    @extend_schema(parameters=PARAMETERS, responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, site_id: uuid.UUID) -> HttpResponseBase:
        return super().get(request, site_id)
