"""The segments' pages: the site's list (POST: save the filters a page sends under a
name), one segment's page (POST: rename or share it) and its deletion."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from sessions_app.domain.permissions import site_page
from sessions_app.features.segments import defs
from sessions_app.features.web import periods
from sessions_app.features.web.params import site_next
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.models import Segment, Site


def _back(request: HttpRequest, site: Site, query: str) -> str:
    """Where a saved segment goes: the page it was saved on (a path of this site), with
    its filters, else the dashboard."""
    given = site_next(request.POST.get("next") or "", site.id)
    path = given.split("?", 1)[0] if given else f"/sites/{site.id}/"
    period = {k: v for k, v in request.POST.items() if k in periods.PARAMS and v}
    return f"{path}?{query}" + (f"&{urlencode(period)}" if period else "")


@site_page()
def segment_list(request: HttpRequest, site: Site) -> HttpResponse:
    """The segments this person sees; POST saves the filters posted with a name."""
    error = ""
    if request.method == "POST":
        try:
            if request.POST.get("replace"):  # an existing segment gets the page's filters
                segment = _replaced(request, site, request.POST["replace"])
            else:
                segment = defs.segment_save(
                    site=site,
                    user=request.user,
                    name=request.POST.get("name"),
                    filters=request.POST,
                    shared=request.POST.get("shared") == "on",
                )
            return redirect(_back(request, site, defs.shown(site, [segment])[0].query))
        except RangeError as exc:
            error = str(exc)
    segments = list(defs.visible(site, request.user)[: defs.MAX_SEGMENTS])
    admin = defs.may_share(request.user, site)  # asked once for the whole list
    context = {
        "site": site,
        "error": error,
        "segments": [
            (s, defs.may_change(request.user, site, s.segment, admin=admin))
            for s in defs.shown(site, segments)
        ],
    }
    return render(request, "sessions_app/segments.html", context, status=400 if error else 200)


def _replaced(request: HttpRequest, site: Site, asked: str) -> Segment:
    """The segment `asked` names, its filters replaced by the posted ones (its owner's or,
    shared, an admin's to change); RangeError naming the field."""
    ok = asked.isdigit() and len(asked) < 19
    found = defs.visible(site, request.user).filter(pk=int(asked)).first() if ok else None
    if found is None or not defs.may_change(request.user, site, found):
        raise RangeError("replace", "no segment of yours by that id")
    defs.segment_filters_replace(found, request.POST)
    return found


def _segment(request: HttpRequest, site: Site, segment_id: int) -> Segment:
    found = defs.visible(site, request.user).filter(pk=segment_id).first()
    if found is None:
        raise Http404("no such segment")
    return found


@site_page()
def segment_detail(request: HttpRequest, site: Site, segment_id: int) -> HttpResponse:
    """One segment: its filters and where to apply them; POST renames or shares it."""
    segment, error = _segment(request, site, segment_id), ""
    can_change = defs.may_change(request.user, site, segment)
    if request.method == "POST":
        if not can_change:
            raise Http404("no such segment")
        try:
            defs.segment_change(
                site=site,
                user=request.user,
                segment=segment,
                name=request.POST.get("name"),
                shared=request.POST.get("shared") == "on",
            )
            return redirect("sessions_app:segments", site.id)
        except RangeError as exc:
            error = str(exc)
            segment.refresh_from_db()
    context: dict[str, Any] = {
        "site": site,
        "item": defs.shown(site, [segment])[0],
        "can_change": can_change,
        "can_share": defs.may_share(request.user, site),
        "error": error,
    }
    return render(request, "sessions_app/segment.html", context, status=400 if error else 200)


@site_page()
def segment_delete(request: HttpRequest, site: Site, segment_id: int) -> HttpResponse:
    """Delete a segment (POST, by whoever may change it); GET: its page."""
    segment = _segment(request, site, segment_id)
    if request.method != "POST":
        return segment_detail(request, site_id=site.id, segment_id=segment_id)
    if not defs.may_change(request.user, site, segment):
        raise Http404("no such segment")
    segment.delete()
    return redirect("sessions_app:segments", site.id)
