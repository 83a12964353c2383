"""Share links' pages: a site's list (its admins make and revoke links there) and what
a link opens (`/share/<slug>/`, no login): the dashboard and the reports chosen for it,
read-only, behind the link's password if it has one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.clickjacking import xframe_options_exempt

from sessions_app.domain.accounts import share_links
from sessions_app.domain.permissions import ADMIN, site_page
from sessions_app.features.dashboard.views import dashboard_context
from sessions_app.features.segments import defs as segments
from sessions_app.features.sharing import defs
from sessions_app.features.vitals.views import performance_context
from sessions_app.features.web.params import query_params
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.models import ShareLink, Site


@site_page(role=ADMIN)
def share_list(request: HttpRequest, site: Site) -> HttpResponse:
    """The site's links, newest first; POST makes one (its URL is then at the top)."""
    error, form = "", None
    if request.method == "POST":
        form = request.POST
        try:
            defs.link_create(
                site=site,
                user=request.user,
                name=form.get("name"),
                reports=form.getlist("reports"),
                segment=form.get("segment"),
                password=form.get("password"),
                origins=form.get("embed_origins"),
                expires_days=form.get("expires_days"),
            )
            return redirect("sessions_app:share-links", site.id)
        except RangeError as exc:
            error = str(exc)
    context = {
        "site": site,
        "error": error,
        "form": form,
        "form_reports": form.getlist("reports") if form else [],
        "rate": settings.SHARE_LINK_RATE,
        "links": defs.listed(site),
        "reports": defs.REPORTS,
        "segments": segments.visible(site, request.user)[: segments.MAX_SEGMENTS],
        "base_url": request.build_absolute_uri("/share/"),
    }
    return render(request, "sessions_app/share_links.html", context, status=400 if error else 200)


@site_page(role=ADMIN)
def share_revoke(request: HttpRequest, site: Site, link_id: int) -> HttpResponse:
    """Revoke one link (POST): it answers 404 from then on. GET: the list."""
    link = ShareLink.objects.filter(site=site, pk=link_id).first()
    if link is None:
        raise Http404("no such link")
    if request.method != "POST":
        return share_list(request, site_id=site.id)
    defs.link_revoke(link)
    return redirect("sessions_app:share-links", site.id)


def _framed(response: HttpResponse, link: ShareLink) -> HttpResponse:
    """A link's headers: never indexed nor cached, its slug never sent on as a referrer,
    framed only by the origins the link lists."""
    response["X-Robots-Tag"] = "noindex, nofollow"
    response["Cache-Control"] = "private, no-store"
    response["Referrer-Policy"] = "no-referrer"
    if link.embed_origins:
        ancestors = " ".join(["'self'", *link.embed_origins])
        response["Content-Security-Policy"] = settings.CONTENT_SECURITY_POLICY.replace(
            "frame-ancestors 'none'", f"frame-ancestors {ancestors}"
        )
    else:
        response["X-Frame-Options"] = "DENY"
    return response


def _opened(
    request: HttpRequest, slug: str, report: str
) -> tuple[ShareLink | None, HttpResponse | None]:
    """The link if this request may see its `report`; else the answer to give (the
    password form, 429), or Http404 for a link that does not open or lacks the report."""
    link = share_links.link_open(slug)
    if link is None or report not in link.reports:
        raise Http404("no such link")
    rate = share_links.rate_take(link)
    if rate is not None and rate.exceeded:
        response = render(request, "sessions_app/share_limited.html", {"link": link}, status=429)
        response["Retry-After"] = str(rate.retry_after())
        return None, _framed(response, link)
    if share_links.unlocked(link, request.session):
        return link, None
    error, status = "", 200
    if request.method == "POST":
        if share_links.unlock(link, request.session, request.POST.get("password") or ""):
            return None, redirect(request.path)
        error, status = "password: not this link's password", 403
    context = {"link": link, "site": link.site, "error": error}
    response = render(request, "sessions_app/share_password.html", context, status=status)
    return None, _framed(response, link)


def _shared(report: str) -> Callable[[Callable[..., dict[str, Any]]], Any]:
    """A report of a link: its context from the link's parameters, the share frame."""

    def decorator(build: Callable[..., dict[str, Any]]) -> Any:
        @xframe_options_exempt  # _framed decides
        def view(request: HttpRequest, slug: str) -> HttpResponse:
            link, answer = _opened(request, slug, report)
            if link is None:
                assert answer is not None
                return answer
            read = defs.viewer_params(link, query_params(request))
            if read is None:
                raise Http404("no such link")
            params, dropped = read
            context = build(link, params, request)
            if dropped:
                context["filter_error"] = dropped
            context.update(
                {
                    "share": link,
                    "share_report": report,
                    "share_reports": [(r, defs.REPORTS[r]) for r in link.reports],
                    "base_template": "sessions_app/share_base.html",
                    "locked": set(link.filters),
                }
            )
            status = 400 if context.get("error") and report != "dashboard" else 200
            template = f"sessions_app/{report}.html"
            return _framed(render(request, template, context, status=status), link)

        return view

    return decorator


@_shared("dashboard")
def share_dashboard(link: ShareLink, params: dict[str, str], request: HttpRequest) -> dict:
    return dashboard_context(link.site, params=params, own=request.GET, latest=False)


@_shared("performance")
def share_performance(link: ShareLink, params: dict[str, str], request: HttpRequest) -> dict:
    return performance_context(link.site, params)
