"""The annotations' pages: the site's notes (POST: a new one, from a chart's "Add note" or
this page), one note's page (POST: change it) and its deletion."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from sessions_app.domain.permissions import ADMIN, site_page, site_role
from sessions_app.features.annotations import notes
from sessions_app.features.web.params import site_next, whole_param
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.models import Annotation, Site

PAGE = 100  # notes on a page of the list


def _back(request: HttpRequest, site: Site) -> str | None:
    """The page a note was added or opened from (`next`, posted or in the URL), its query
    kept: a path of this site, else None."""
    return site_next(request.POST.get("next") or request.GET.get("next") or "", site.id)


def _posted(request: HttpRequest) -> dict[str, Any]:
    """The form's fields: day, end day, note, public."""
    return {
        "day": request.POST.get("day") or "",
        "end_day": request.POST.get("end_day") or "",
        "note": request.POST.get("note") or "",
        "public": request.POST.get("public") == "on",
    }


def _blank(site: Site) -> dict[str, Any]:
    """The form of a new note: on the site's today."""
    return {"day": notes.today(site).isoformat(), "end_day": "", "note": "", "public": False}


@site_page()
def annotation_list(request: HttpRequest, site: Site) -> HttpResponse:
    """The site's notes, the latest day first; POST (any member) adds one."""
    error, form = "", _blank(site)
    if request.method == "POST":
        form = _posted(request)
        try:
            notes.annotation_save(site=site, user=request.user, **form)
            return redirect(_back(request, site) or f"/sites/{site.id}/annotations/")
        except RangeError as exc:
            error = str(exc)
    try:
        number = whole_param(request.GET, "page", 1)
    except RangeError:
        number = 1
    pages = Paginator(notes.of_site(site), PAGE)
    user, admin = request.user, site_role(request.user, site.id) == ADMIN
    page = pages.get_page(number)
    context = {
        "site": site,
        "error": error,
        "form": form,
        "page": page,
        "count": pages.count,
        "rows": [
            (a, notes.days_label(a.day, a.last_day), notes.may_change(user, site, a, admin=admin))
            for a in page.object_list
        ],
        "max_note": notes.MAX_NOTE,
        "next": _back(request, site) or "",
    }
    return render(request, "sessions_app/annotations.html", context, status=400 if error else 200)


def _stored(annotation: Annotation) -> dict[str, Any]:
    """The form's fields as the note has them."""
    return {
        "day": annotation.day.isoformat(),
        "end_day": annotation.end_day.isoformat() if annotation.end_day else "",
        "note": annotation.note,
        "public": annotation.public,
    }


def _page(
    site: Site,
    annotation: Annotation,
    *,
    can_change: bool,
    form: dict[str, Any],
    error: str = "",
    deleting: str = "",
    back: str = "",
) -> dict[str, Any]:
    """A note's page: its form (for whoever may change it) and its deletion."""
    return {
        "site": site,
        "annotation": annotation,
        "label": notes.days_label(annotation.day, annotation.last_day),
        "can_change": can_change,
        "form": form,
        "error": error,
        "delete_error": deleting,
        "max_note": notes.MAX_NOTE,
        "next": back,
    }


def _annotation(site: Site, annotation_id: int) -> Annotation:
    found = notes.of_site(site).filter(pk=annotation_id).first()
    if found is None:
        raise Http404("no such note")
    return found


@site_page()
def annotation_detail(request: HttpRequest, site: Site, annotation_id: int) -> HttpResponse:
    """One note; POST (its author or a site admin) changes it."""
    annotation, error = _annotation(site, annotation_id), ""
    can_change = notes.may_change(request.user, site, annotation)
    form = _stored(annotation)
    if request.method == "POST":
        if not can_change:
            raise PermissionDenied("only its author or the site's admins change a note")
        form = _posted(request)
        try:
            notes.annotation_change(annotation=annotation, **form)
            return redirect(_back(request, site) or f"/sites/{site.id}/annotations/")
        except RangeError as exc:
            error = str(exc)
            annotation.refresh_from_db()
    back = _back(request, site) or ""
    context = _page(site, annotation, can_change=can_change, form=form, error=error, back=back)
    return render(request, "sessions_app/annotation.html", context, status=400 if error else 200)


@site_page()
def annotation_delete(request: HttpRequest, site: Site, annotation_id: int) -> HttpResponse:
    """Delete a note (POST, confirmed, by its author or a site admin); GET: its page."""
    annotation = _annotation(site, annotation_id)
    if request.method != "POST":
        return annotation_detail(request, site_id=site.id, annotation_id=annotation_id)
    if not notes.may_change(request.user, site, annotation):
        raise PermissionDenied("only its author or the site's admins delete a note")
    if request.POST.get("confirm") != "yes":
        why = "Tick the box to confirm the deletion."
        back = _back(request, site) or ""
        form = _stored(annotation)
        context = _page(site, annotation, can_change=True, form=form, deleting=why, back=back)
        return render(request, "sessions_app/annotation.html", context, status=400)
    annotation.delete()
    return redirect(_back(request, site) or f"/sites/{site.id}/annotations/")
