"""/api/heatmap: a page's heatmap for the on-page overlay (static/sessions_app/heatmap.js).

Not a session or API-token route: the overlay runs on the customer's page and sends the
short-lived token "View on page" put in the URL fragment (analysis/heatmaps.token_for)
as `Authorization: Bearer`. The answer is one site's page aggregates, read only, and
reaches a browser only from an origin the site allows (CORS; a preflight is answered
for the origins some enabled site allows).
"""

from __future__ import annotations

from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from sessions_app.analysis.heatmaps import overlay_answer, site_of_token
from sessions_app.core.bounds import RangeError
from sessions_app.models import Site
from sessions_app.views.collector import origin_allowed, origins_of_enabled_sites

STATUS = {"token": 401, "origin": 403, "site": 404}


def _error(exc: RangeError) -> JsonResponse:
    return JsonResponse({"error": str(exc)}, status=STATUS.get(exc.field, 400))


@require_http_methods(["GET", "OPTIONS"])
def overlay_data(request: HttpRequest) -> HttpResponse:
    origin = request.headers.get("Origin")
    if request.method == "OPTIONS":
        if not origin or origin.rstrip("/") not in origins_of_enabled_sites():
            return _error(RangeError("origin", "not allowed"))
        response = HttpResponse(status=204)
        response["Access-Control-Allow-Methods"] = "GET"
        response["Access-Control-Allow-Headers"] = "Authorization"
        response["Access-Control-Max-Age"] = "600"
    else:
        try:
            scheme, _, token = request.headers.get("Authorization", "").partition(" ")
            if scheme.lower() != "bearer" or not token:
                raise RangeError("token", "required as Authorization: Bearer <token>")
            site = Site.objects.filter(pk=site_of_token(token.strip()), enabled=True).first()
            if site is None:
                raise RangeError("site", "not found")
            if not origin_allowed(site, origin):
                raise RangeError("origin", "not allowed for this site")
            try:
                days = int(request.GET.get("days", "30"))
            except ValueError:
                raise RangeError("days", "expected a whole number of days") from None
            answer = overlay_answer(
                site_id=site.id,
                page=request.GET.get("page", ""),
                vp=request.GET.get("vp", ""),
                days=days,
                now=timezone.now(),
            )
        except RangeError as exc:
            response = _error(exc)
            if exc.field == "origin":
                return response  # nothing for a page the site does not allow
        else:
            response = JsonResponse(answer, encoder=DjangoJSONEncoder)
            response["Cache-Control"] = "private, max-age=60"
    if origin:
        response["Access-Control-Allow-Origin"] = origin
    response["Vary"] = "Origin"
    return response
