"""API exports: a session's events, a user's activity and a user's properties, as CSV or JSON."""

from __future__ import annotations

import csv
import io
import json
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.request import Request

from sessions_app.domain.permissions import SiteView
from sessions_app.domain.sessions import activity, lists, timeline
from sessions_app.features.web.params import END, START, USER_KEY, BadRequest, api_time

EXPORT_MAX_EVENTS = 100_000
EXPORT_FIELDS = [
    "ts",
    "event_id",
    "session_id",
    "type",
    "name",
    "url",
    "referrer",
    "title",
    "element",
    "props",
    "context",
]
_JSON_FIELDS = ("element", "props", "context", "value")
PROPERTY_FIELDS = ["name", "value", "first_set_at", "last_set_at"]


# A spreadsheet runs a cell that starts with one of these as a formula (CSV injection):
# such a cell is written with a leading apostrophe, which spreadsheets show as text.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
CUT_HEADER = "X-Export-Cut"


@dataclass
class Cap:
    """Set by a rows iterator that stopped at its cap, so that the export says so: a last
    CSV line starting with "# cut:", or the X-Export-Cut header on JSON."""

    reason: str | None = None


def csv_cell(value: Any, *, as_json: bool = False) -> Any:
    """A value as a CSV cell: JSON for objects, "" for None, formulas neutralised."""
    if value is None:
        return ""
    if as_json:
        value = json.dumps(value)
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def _export(
    rows: Iterator[dict[str, Any]],
    fmt: str,
    name: str,
    fields: list[str] = EXPORT_FIELDS,
    cap: Cap | None = None,
) -> HttpResponseBase:
    response: HttpResponseBase
    cap = cap or Cap()
    if fmt == "json":
        body = json.dumps(list(rows), cls=DjangoJSONEncoder, indent=1)
        response = HttpResponse(body, content_type="application/json")
        if cap.reason:
            response[CUT_HEADER] = cap.reason
    elif fmt == "csv":

        def lines() -> Iterator[str]:
            buffer = io.StringIO()
            writer = csv.writer(buffer)
            writer.writerow(fields)
            for row in rows:
                writer.writerow([csv_cell(row.get(f), as_json=f in _JSON_FIELDS) for f in fields])
                yield buffer.getvalue()
                buffer.seek(0)
                buffer.truncate()
            if cap.reason:
                writer.writerow([f"# cut: {cap.reason}"])
            yield buffer.getvalue()

        response = StreamingHttpResponse(lines(), content_type="text/csv")
    else:
        raise BadRequest("format", "csv or json")
    # User keys come from browsers: only a safe ASCII slug goes into the header
    # (control characters there broke the response; found by Schemathesis).
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_")[:100] or "export"
    response["Content-Disposition"] = f'attachment; filename="{safe}.{fmt}"'
    return response


class SessionExport(SiteView):
    """A session's events as CSV or JSON."""

    @extend_schema(
        parameters=[OpenApiParameter("format", str, enum=["csv", "json"])],
        responses={
            (200, "text/csv"): OpenApiTypes.STR,
            (200, "application/json"): OpenApiTypes.OBJECT,
        },
    )
    def get(self, request: Request, site_id: uuid.UUID, session_id: uuid.UUID) -> HttpResponseBase:
        found = timeline.session_timeline(site_id=self.site.id, session_id=session_id)
        if found is None:
            raise NotFound("no such session")
        summary, events = found.decoded()
        cap = Cap()
        if summary and summary["event_count"] > len(events):
            cap.reason = f"the first {len(events)} of {summary['event_count']} events"
        fmt = request.query_params.get("format", "csv")
        return _export(iter(events), fmt, f"session-{session_id}", cap=cap)


class ActivityExport(SiteView):
    """A user's activity over a range as CSV or JSON (at most 100,000 events)."""

    @extend_schema(
        parameters=[USER_KEY, START, END, OpenApiParameter("format", str, enum=["csv", "json"])],
        responses={
            (200, "text/csv"): OpenApiTypes.STR,
            (200, "application/json"): OpenApiTypes.OBJECT,
        },
    )
    def get(self, request: Request, site_id: uuid.UUID, user_key: str) -> HttpResponseBase:
        site = self.site
        params, now = request.query_params, datetime.now(UTC)
        end = api_time(params, "end", now, now=now)
        start = api_time(params, "start", end - timedelta(days=7), now=now)
        activity.user_activity(
            site_id=site.id, user_key=user_key, start=start, end=end, limit=1
        )  # validates the range before streaming starts

        cap = Cap()

        def rows() -> Iterator[dict[str, Any]]:
            cursor, sent = None, 0
            while True:
                page = activity.user_activity(
                    site_id=site.id,
                    user_key=user_key,
                    start=start,
                    end=end,
                    limit=min(1000, EXPORT_MAX_EVENTS - sent),
                    cursor=cursor,
                )
                yield from page.events
                sent += len(page.events)
                if page.next_cursor is None:
                    return
                if sent >= EXPORT_MAX_EVENTS:
                    cap.reason = f"at most {EXPORT_MAX_EVENTS} events; narrow start and end"
                    return
                cursor = page.next_cursor

        fmt = request.query_params.get("format", "csv")
        return _export(rows(), fmt, f"activity-{user_key}", cap=cap)


class PropertiesExport(SiteView):
    """A user's properties as CSV (value as JSON) or JSON."""

    @extend_schema(
        parameters=[USER_KEY, OpenApiParameter("format", str, enum=["csv", "json"])],
        responses={
            (200, "text/csv"): OpenApiTypes.STR,
            (200, "application/json"): OpenApiTypes.OBJECT,
        },
    )
    def get(self, request: Request, site_id: uuid.UUID, user_key: str) -> HttpResponseBase:
        site = self.site
        found = lists.user_properties(site_id=site.id, user_key=user_key)
        return _export(
            iter(found),
            request.query_params.get("format", "csv"),
            f"properties-{user_key}",
            PROPERTY_FIELDS,
        )
