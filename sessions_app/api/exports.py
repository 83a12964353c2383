"""API exports: a session's events, a user's activity and a user's properties, as CSV or JSON."""

from __future__ import annotations

import csv
import io
import json
import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.views import APIView

from sessions_app.api.views import (
    END,
    START,
    USER_KEY,
    BadRequest,
    _session_events,
    _site,
    _time,
)
from sessions_app.sessions import activity, lists

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


def _export(
    rows: Iterator[dict[str, Any]], fmt: str, name: str, fields: list[str] = EXPORT_FIELDS
) -> HttpResponseBase:
    response: HttpResponseBase
    if fmt == "json":
        body = json.dumps(list(rows), cls=DjangoJSONEncoder, indent=1)
        response = HttpResponse(body, content_type="application/json")
    elif fmt == "csv":

        def lines() -> Iterator[str]:
            buffer = io.StringIO()
            writer = csv.writer(buffer)
            writer.writerow(fields)
            for row in rows:
                writer.writerow(
                    [
                        json.dumps(row.get(f))
                        if f in _JSON_FIELDS and row.get(f) is not None
                        else ("" if row.get(f) is None else row.get(f))
                        for f in fields
                    ]
                )
                yield buffer.getvalue()
                buffer.seek(0)
                buffer.truncate()
            yield buffer.getvalue()

        response = StreamingHttpResponse(lines(), content_type="text/csv")
    else:
        raise BadRequest("format", "csv or json")
    # User keys come from browsers: only a safe ASCII slug goes into the header
    # (control characters there broke the response; found by Schemathesis).
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_")[:100] or "export"
    response["Content-Disposition"] = f'attachment; filename="{safe}.{fmt}"'
    return response


class SessionExport(APIView):
    """A session's events as CSV or JSON."""

    @extend_schema(
        parameters=[OpenApiParameter("format", str, enum=["csv", "json"])],
        responses={
            (200, "text/csv"): OpenApiTypes.STR,
            (200, "application/json"): OpenApiTypes.OBJECT,
        },
    )
    def get(self, request: Request, site_id: uuid.UUID, session_id: uuid.UUID) -> HttpResponseBase:
        events = _session_events(_site(site_id), session_id)
        return _export(
            iter(events), request.query_params.get("format", "csv"), f"session-{session_id}"
        )


class ActivityExport(APIView):
    """A user's activity over a range as CSV or JSON (at most 100,000 events)."""

    @extend_schema(
        parameters=[USER_KEY, START, END, OpenApiParameter("format", str, enum=["csv", "json"])],
        responses={
            (200, "text/csv"): OpenApiTypes.STR,
            (200, "application/json"): OpenApiTypes.OBJECT,
        },
    )
    def get(self, request: Request, site_id: uuid.UUID, user_key: str) -> HttpResponseBase:
        site = _site(site_id)
        end = _time(request, "end", datetime.now(UTC))
        start = _time(request, "start", end - timedelta(days=7))
        activity.user_activity(
            site_id=site.id, user_key=user_key, start=start, end=end, limit=1
        )  # validates the range before streaming starts

        def rows() -> Iterator[dict[str, Any]]:
            cursor, sent = None, 0
            while sent < EXPORT_MAX_EVENTS:
                page = activity.user_activity(
                    site_id=site.id,
                    user_key=user_key,
                    start=start,
                    end=end,
                    limit=1000,
                    cursor=cursor,
                )
                yield from page.events
                sent += len(page.events)
                if page.next_cursor is None:
                    return
                cursor = page.next_cursor

        return _export(rows(), request.query_params.get("format", "csv"), f"activity-{user_key}")


class PropertiesExport(APIView):
    """A user's properties as CSV (value as JSON) or JSON."""

    @extend_schema(
        parameters=[USER_KEY, OpenApiParameter("format", str, enum=["csv", "json"])],
        responses={
            (200, "text/csv"): OpenApiTypes.STR,
            (200, "application/json"): OpenApiTypes.OBJECT,
        },
    )
    def get(self, request: Request, site_id: uuid.UUID, user_key: str) -> HttpResponseBase:
        site = _site(site_id)
        found = lists.user_properties(site_id=site.id, user_key=user_key)
        return _export(
            iter(found),
            request.query_params.get("format", "csv"),
            f"properties-{user_key}",
            PROPERTY_FIELDS,
        )
