"""/api/heatmap: a page's heatmap for the on-page overlay (static/sessions_app/heatmap.js).

Not a session or API-token route: the overlay runs on the customer's page and sends the
short-lived token "View on page" put in the URL fragment (heatmaps/reads.token_for)
as `Authorization: Bearer`. The token reads one page of one site; the request must come
from an origin that site allows (a browser sends `Origin` on this cross-origin fetch, so
a request without one is refused, unless the browser marks it same-origin: then this
server's origin must be allowed), and Access-Control-Allow-Origin only ever echoes an
allowed origin, errors included. A preflight is answered for the origins some enabled
site allows. The range is the Heatmaps page's (heatmaps/ranges.py): the same period
parameters, the same cap. The answer holds page aggregates only, never who clicked.
"""

from __future__ import annotations

from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from sessions_app.domain.ledger.sites import origin_allowed, origins_of_enabled_sites
from sessions_app.features.heatmaps.ranges import heatmap_range
from sessions_app.features.heatmaps.reads import range_answer, site_of_token, token_check
from sessions_app.features.web import periods
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.models import Site

STATUS = {"token": 401, "origin": 403}


def _error(exc: RangeError) -> JsonResponse:
    return JsonResponse({"error": str(exc)}, status=STATUS.get(exc.field, 400))


def _request_origin(request: HttpRequest) -> str:
    """The Origin header; for a same-origin GET, which carries none (the Fetch standard),
    this server's origin when the browser says so in Sec-Fetch-Site (pages cannot set it:
    the overlay on the demo shop, served by the app itself)."""
    origin = request.headers.get("Origin", "")
    if not origin and request.headers.get("Sec-Fetch-Site") == "same-origin":
        origin = f"{request.scheme}://{request.get_host()}"
    return origin


def _answer(request: HttpRequest, origin: str) -> tuple[HttpResponse, Site | None]:
    """The overlay's answer or the error naming its field, and the site the token named."""
    site = None
    try:
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token:
            raise RangeError("token", "required as Authorization: Bearer <token>")
        token = token.strip()
        site = Site.objects.filter(pk=site_of_token(token), enabled=True).first()
        if site is None:  # the same answer as a bad signature: no site-id oracle
            raise RangeError("token", "not a heatmap token of this server")
        if not origin_allowed(site, origin):
            raise RangeError("origin", "not allowed for this site")
        page = request.GET.get("page", "")
        token_check(token, site_id=site.id, salt=site.heatmap_salt, page=page)
        params = {k: str(v) for k, v in request.GET.items()}
        zone = periods.site_zone(site.time_zone)
        # The Heatmaps page's range (handed over in the fragment), read as the page reads
        # it; without one (an old link) the last 30 days, the overlay's old default.
        covered = heatmap_range(params, zone=zone, now=timezone.now(), default="30d")
        answer, _ = range_answer(
            site_id=site.id,
            page=page,
            vp=params.get("vp", ""),
            start=covered.start,
            end=covered.end,
        )
        days = (covered.end - covered.start).total_seconds() / 86_400
        answer = {**answer, "days": round(days), "range": covered.described()}
    except RangeError as exc:
        return _error(exc), site
    response = JsonResponse(answer, encoder=DjangoJSONEncoder)
    response["Cache-Control"] = "private, max-age=60"
    return response, site


@require_http_methods(["GET", "OPTIONS"])
def overlay_data(request: HttpRequest) -> HttpResponse:
    origin = _request_origin(request)
    allowed = bool(origin) and origin.rstrip("/") in origins_of_enabled_sites()
    if request.method == "OPTIONS":
        if not allowed:
            return _error(RangeError("origin", "not allowed"))
        response = HttpResponse(status=204)
        response["Access-Control-Allow-Methods"] = "GET"
        response["Access-Control-Allow-Headers"] = "Authorization"
        response["Access-Control-Max-Age"] = "600"
    elif not origin:
        response = _error(
            RangeError("origin", "required: the overlay reads from a page of the site")
        )
    else:
        response, site = _answer(request, origin)
        # Once the token names a site, only that site's origins are echoed.
        allowed = origin_allowed(site, origin) if site is not None else allowed
    if allowed and "Origin" in request.headers:
        response["Access-Control-Allow-Origin"] = origin
    response["Vary"] = "Origin"
    return response
