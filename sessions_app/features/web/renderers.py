"""A JSON renderer backed by orjson (sessions_app.jsonfmt: the API's one encoder)."""

from __future__ import annotations

from typing import Any

from rest_framework.renderers import BaseRenderer

from sessions_app.foundation.core.jsonfmt import dumps

__all__ = ["ORJSONRenderer", "dumps"]


class ORJSONRenderer(BaseRenderer):
    media_type = "application/json"
    format = "json"
    charset = None

    def render(
        self,
        data: Any,
        accepted_media_type: str | None = None,
        renderer_context: dict[str, Any] | None = None,
    ) -> bytes:
        del accepted_media_type  # DRF's signature: JSON is this renderer's one media type
        if renderer_context is not None:
            # DRF leaves two reference cycles through every response, which kept
            # each payload (a timeline's 1,000 events) alive until Python's cycle
            # collector ran: the response puts itself into this dict, which it
            # holds, and the view (also in this dict) keeps the response. Neither
            # is read after render().
            renderer_context.pop("response", None)
            view = renderer_context.get("view")
            if view is not None:
                view.response = None
        if data is None:
            return b""
        return dumps(data)
