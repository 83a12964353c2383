"""A session's replay under /api/ (the player on the timeline page reads it)."""

from __future__ import annotations

import uuid

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from sessions_app.domain.permissions import SiteView
from sessions_app.features.replays import reads


class SessionReplay(SiteView):
    """A session's recording: the recorder (rrweb) events of its next chunks in order
    (`chunks` names them), the first answer 4 chunks so that the player starts at once;
    `next` is the `after` of the following answer, null at the end; `missing_assets`
    the stylesheets (by hash) no longer stored, which the events lack. A session
    without a recording answers empty chunks."""

    @extend_schema(
        parameters=[
            OpenApiParameter("after", str, description="the previous answer's next"),
        ],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request: Request, site_id: uuid.UUID, session_id: uuid.UUID) -> Response:
        after = reads.cursor_parse(request.query_params.get("after"))  # RangeError: a 400
        if session_id.version != 1:
            return Response({"chunks": [], "events": [], "next": None, "missing_assets": []})
        return Response(reads.replay_page(site_id=self.site.id, session_id=session_id, after=after))
