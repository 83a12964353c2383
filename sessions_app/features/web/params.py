"""The request parameters every page and API view shares, read in one place: times and
ranges (`start`, `end`, `at`), page paths, whole numbers and ids, and how the API's
schema describes them. The site itself is read by `permissions.site_page` (pages) and
`permissions.SiteView` (API); the explorer's filters by `features/analysis/explorer.py`.

Three readers of a time, as the views have always answered:
- `time_param` (core/bounds; periods' old start/end read it too) / `range_param`
  (explorer, paths, funnels): no zone means UTC; RangeError naming the field (400).
- `api_time` / `api_int` / `api_uuid` (the API's report, user, session and export
  routes): a zone is required; `BadRequest` naming the field (400).
- `page_range` (the dashboard and a user's activity page): a bad time shows the default
  and says so, the page still answers.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from django.http import HttpRequest
from django.utils.http import url_has_allowed_host_and_scheme
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter
from rest_framework.exceptions import APIException

from sessions_app.foundation.core import pagepaths, timebuckets, userkeys
from sessions_app.foundation.core.bounds import RangeError, checked_range, time_param


class BadRequest(APIException):
    """A bad API parameter: 400 {"error", "field"} (api/views.api_exception_handler)."""

    status_code = 400

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


def query_params(request: HttpRequest) -> dict[str, str]:
    """A page's URL parameters as plain text (the last value of a repeated one)."""
    return {k: str(v) for k, v in request.GET.items()}


MAX_NEXT = 2000  # characters of a `next` path kept


def site_next(value: str, site_id: uuid.UUID) -> str | None:
    """A form's `next`: a path of this site's pages (its query kept), else None (another
    host, a scheme, another site, too long)."""
    safe = url_has_allowed_host_and_scheme(value, allowed_hosts=None)
    ours = value.startswith(f"/sites/{site_id}/") and len(value) <= MAX_NEXT
    return value if safe and ours else None


def iso(value: datetime) -> str:
    """A UTC time as ISO-8601 with Z."""
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def range_param(
    params: Mapping[str, str], *, now: datetime, default_span: timedelta
) -> tuple[datetime, datetime]:
    """`start` / `end` (ISO-8601; default the `default_span` before now; checked_range's
    cap); RangeError naming the bad one."""
    end = time_param(params, "end", now, now)
    return checked_range(time_param(params, "start", end - default_span, now), end)


def path_param(value: str) -> str:
    """A URL or path as the stored paths are (core/pagepaths.page_path); other text as is."""
    return (pagepaths.page_path(value) or "/") if "://" in value or value.startswith("/") else value


def whole_param(params: Mapping[str, str], name: str, default: int) -> int:
    """A whole number, else `default`; RangeError naming it."""
    try:
        return int(params.get(name) or default)
    except ValueError:
        raise RangeError(name, "not a whole number") from None


def api_time(params: Mapping[str, str], name: str, default: datetime, *, now: datetime) -> datetime:
    """An ISO-8601 time with its zone within reach, else `default`; BadRequest naming it."""
    value = params.get(name)
    if not value:
        return default
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise BadRequest(name, f"not an ISO-8601 time: {value!r}") from None
    if parsed.tzinfo is None:
        raise BadRequest(name, "time zone missing (use Z or an offset)")
    if not timebuckets.within_reach(parsed, now=now):
        raise BadRequest(name, "between 1970-01-01 and a year from now")
    return parsed.astimezone(UTC)


def api_int(params: Mapping[str, str], name: str, default: int, *, low: int, high: int) -> int:
    """An integer in [low, high], else `default`; BadRequest naming it."""
    value = params.get(name)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        raise BadRequest(name, "not an integer") from None
    if not low <= number <= high:
        raise BadRequest(name, f"between {low} and {high}")
    return number


def api_uuid(params: Mapping[str, str], name: str) -> uuid.UUID | None:
    """A UUID, else None; BadRequest naming it."""
    value = params.get(name)
    if not value:
        return None
    try:
        return uuid.UUID(value)
    except ValueError:
        raise BadRequest(name, "not a UUID") from None


def _page_time(value: str | None, field: str, errors: list[str], now: datetime) -> datetime | None:
    """A datetime-local / ISO value as UTC; None if absent, or bad (noted in errors)."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        errors.append(f"{field}: not a date and time (YYYY-MM-DDTHH:MM, UTC); showing the default")
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    if not timebuckets.within_reach(parsed, now=now):
        errors.append(f"{field}: between 1970 and a year from now; showing the default")
        return None
    return parsed.astimezone(UTC)


def page_range(
    params: Mapping[str, str], *, span: timedelta, now: datetime
) -> tuple[datetime, datetime, list[str]]:
    """A page's ?start= and ?end= (default: the `span` before now) and what was wrong."""
    errors: list[str] = []
    end = _page_time(params.get("end"), "end", errors, now) or now
    start = _page_time(params.get("start"), "start", errors, now) or end - span
    return start, end, errors


def page_cursor(value: str | None) -> uuid.UUID | None:
    """A page's cursor; anything that is not a TimeUUID (all our ids are) is ignored."""
    try:
        parsed = uuid.UUID(value) if value else None
    except ValueError:
        return None
    return parsed if parsed is not None and parsed.version == 1 else None


# How the API's schema describes the shared parameters.
USER_KEY = OpenApiParameter(
    "user_key",
    location=OpenApiParameter.PATH,
    description=userkeys.DESCRIPTION,
    pattern=f"^{userkeys.UserKeyConverter.regex}$",
    examples=[OpenApiExample("plain", "anon-1"), OpenApiExample("org/123", "~b3JnLzEyMw")],
)
CURSOR = OpenApiParameter(
    "cursor", OpenApiTypes.UUID, description="next_cursor of the previous page"
)
LIMIT = OpenApiParameter("limit", OpenApiTypes.INT, description="page size, 1-1000")
START = OpenApiParameter("start", OpenApiTypes.DATETIME, description="ISO-8601 with offset")
END = OpenApiParameter(
    "end", OpenApiTypes.DATETIME, description="exclusive; at most 92 days after start"
)
