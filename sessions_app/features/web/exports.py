"""CSV and JSON exports: capped, streamed, cells safe from spreadsheet formulas."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase

from sessions_app.features.web.params import BadRequest

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


def export_response(
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
