"""How the API answers an error: {"error": "field: reason", "field": ...}."""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import APIException
from rest_framework.response import Response
from rest_framework.views import exception_handler

from sessions_app.foundation.core.bounds import RangeError


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Return every API error as {"error", "field"} JSON."""
    if isinstance(exc, RangeError | ValueError) and not isinstance(exc, APIException):
        field = getattr(exc, "field", "query")
        message = str(exc).split(": ", 1)[-1] if ": " in str(exc) else str(exc)
        return Response({"error": f"{field}: {message}", "field": field}, status=400)
    response = exception_handler(exc, context)
    if response is not None:
        detail = (
            response.data.get("detail", response.data)
            if isinstance(response.data, dict)
            else response.data
        )
        field = getattr(exc, "field", "auth" if response.status_code in (401, 403) else "path")
        response.data = {"error": f"{field}: {detail}", "field": field}
    return response
