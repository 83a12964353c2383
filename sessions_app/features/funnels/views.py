"""The Funnels pages: the list with a definition form, a funnel's results (bars, times,
trend, breakdown, drill-down links; it refreshes while days are being computed), and the
units behind a step, each opening its session's timeline with the steps highlighted."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils import timezone

from sessions_app.domain.goals.defs import MAX_GOALS
from sessions_app.domain.goals.kinds import STEP_KINDS
from sessions_app.domain.goals.steps import OPS
from sessions_app.domain.permissions import ADMIN, site_page, site_role
from sessions_app.features.funnels import answers, builder, defs, suggest
from sessions_app.features.funnels.spec import MAX_STEPS
from sessions_app.features.funnels.table import split_names
from sessions_app.features.web.params import query_params
from sessions_app.features.web.periods import PARAMS
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.models import Funnel, Goal, Site

BAR_WIDTH = 560


def _form_context(
    request: HttpRequest,
    site: Site,
    definition: dict[str, Any] | None,
    name: str,
    rows: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    rows = rows if rows is not None else builder.definition_rows(definition)
    return {
        "site": site,
        "can_edit": site_role(request.user, site.id) == ADMIN,  # the form only for them
        "rows": [{**r, "n": n} for n, r in enumerate(rows, start=1)],
        "max_steps": MAX_STEPS,
        "name": name,
        "definition": definition or {"count_by": "user", "window": {"unit": "session"}},
        "kinds": list(STEP_KINDS),
        "goals": Goal.objects.filter(site=site).order_by("name").only("name")[:MAX_GOALS],
        "matches": STEP_KINDS.form_matches(),
        "ops": OPS,
        "error_row": None,
    }


def _posted(request: HttpRequest, site: Site) -> tuple[dict[str, Any], dict[str, Any], bool]:
    """A builder POST: (the definition, the form's context, whether to save it). A row
    button (add, remove, move) only shows the rows again."""
    rows = builder.form_rows(request.POST)
    action = request.POST.get("builder")
    if action:
        rows = builder.rows_action(rows, action)
    definition, numbers = builder.rows_definition(rows, request.POST)
    context = _form_context(request, site, definition, request.POST.get("name") or "", rows)
    context["numbers"] = numbers
    return definition, context, not action


def _failed(context: dict[str, Any], exc: RangeError) -> str:
    """The error in plain words, its row marked in the form's context."""
    row, text = builder.plain_error(exc, context.get("numbers") or [])
    context["error_row"] = row
    return text


@site_page(edit_role=ADMIN)
def funnel_list(request: HttpRequest, site: Site) -> HttpResponse:
    """The site's funnels; POST (the site's admins) defines a new one (400 naming the bad
    field)."""
    error, form = "", _form_context(request, site, None, "")
    if request.method == "POST":
        definition, form, save = _posted(request, site)
        try:
            if save:
                funnel = defs.funnel_create(
                    site=site, name=form["name"], definition=definition, user=request.user
                )
                return redirect("sessions_app:funnel", site.id, funnel.pk)
        except RangeError as exc:
            error = _failed(form, exc)
    context = {
        **form,
        "funnels": Funnel.objects.filter(site=site).select_related("current"),
        "error": error,
    }
    return render(request, "sessions_app/funnels.html", context, status=400 if error else 200)


@site_page(edit_role=ADMIN)
def funnel_detail(request: HttpRequest, site: Site, funnel_id: int) -> HttpResponse:
    """A funnel's results over the range in the URL; POST (the site's admins) edits it (a
    new version)."""
    funnel = defs.funnel_of(site, funnel_id)
    error, answer = "", None
    definition = funnel.current.definition if funnel.current else None
    form = _form_context(request, site, definition, funnel.name)
    if request.method == "POST":
        definition, form, save = _posted(request, site)
        try:
            if save:
                defs.funnel_update(funnel=funnel, name=form["name"], definition=definition)
                return redirect("sessions_app:funnel", site.id, funnel.pk)
        except RangeError as exc:
            error = _failed(form, exc)
    params = query_params(request)
    if not error:
        try:
            answer = answers.funnel_result(site, funnel, params)
        except RangeError as exc:
            error = str(exc)
    shown = {k: v for k, v in params.items() if k == "breakdown"}
    context = {
        **form,
        "funnel": funnel,
        "answer": answer,
        "bars": _bars(answer["steps"]) if answer else [],
        "days_done": answer["days"]["total"] - len(answer["days"]["pending"]) if answer else 0,
        "error": error,
        "values": shown,
        "range": urlencode(answer["period"]) if answer else "",
        "range_note": answer["note"] if answer else "",
        "dimensions": split_names(),
    }
    return render(request, "sessions_app/funnel.html", context, status=400 if error else 200)


def _bars(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Horizontal bars: each step's share of the first (the rest of its width: lost)."""
    first = steps[0]["count"] if steps else 0
    return [
        {**s, "y": i * 34, "w": round(BAR_WIDTH * s["count"] / first, 1) if first else 0}
        for i, s in enumerate(steps)
    ]


@site_page()
def funnel_suggestions(request: HttpRequest, site: Site) -> JsonResponse:
    """What the builder suggests for each step kind's text field, from the site's recent
    events ({kind: [value, ...]})."""
    return JsonResponse({"suggestions": suggest.step_suggestions(site.id, timezone.now())})


@site_page()
def funnel_units(request: HttpRequest, site: Site, funnel_id: int) -> HttpResponse:
    """The users (or sessions) that reached a step or dropped off after it."""
    funnel = defs.funnel_of(site, funnel_id)
    params = query_params(request)
    error, page = "", None
    try:
        page = answers.funnel_unit_page(site, funnel, params, limit=50)
    except RangeError as exc:
        error = str(exc)
    kept = {k: v for k, v in params.items() if k in (*PARAMS, "step", "outcome")}
    context = {
        "site": site,
        "funnel": funnel,
        "page": page,
        "error": error,
        "next_url": (
            "?" + urlencode({**kept, "cursor": page["next_cursor"]})
            if page and page["next_cursor"]
            else None
        ),
    }
    return render(request, "sessions_app/funnel_units.html", context, status=400 if error else 200)
