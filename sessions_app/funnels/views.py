"""The Funnels pages: the list with a definition form, a funnel's results (bars, times,
trend, breakdown, drill-down links; it refreshes while days are being computed), and the
units behind a step, each opening its session's timeline with the steps highlighted."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from sessions_app.core.bounds import RangeError
from sessions_app.funnels import answers, defs
from sessions_app.funnels.spec import MAX_STEPS
from sessions_app.funnels.table import split_names
from sessions_app.goals.kinds import STEP_KINDS
from sessions_app.goals.steps import OPS
from sessions_app.models import Funnel, Site
from sessions_app.params import query_params
from sessions_app.periods import PARAMS
from sessions_app.permissions import ADMIN, site_page, site_role

BAR_WIDTH = 560


def _form_step(kind: str, value: str, match: str) -> dict[str, Any]:
    """A builder row's step fields by its kind (an unknown kind keeps the text as a name,
    for the form to show again beside the error)."""
    found = STEP_KINDS.get(kind)
    return found.form_step(value, match) if found else {"name": value}


def form_definition(post: Any) -> tuple[dict[str, Any], str]:
    """The definition and name a form posts: rows step-N-kind/value/match (+ one property
    condition prop-N-key/op/value); empty rows are skipped."""
    steps = []
    for n in range(1, MAX_STEPS + 1):
        kind = (post.get(f"step-{n}-kind") or "").strip()
        value = (post.get(f"step-{n}-value") or "").strip()
        if not kind and not value:
            continue
        match = post.get(f"step-{n}-match") or "exact"
        step: dict[str, Any] = {"kind": kind, **_form_step(kind, value, match)}
        key = (post.get(f"prop-{n}-key") or "").strip()
        if key:
            step["properties"] = [
                {"key": key, "op": post.get(f"prop-{n}-op") or "eq",
                 "value": post.get(f"prop-{n}-value") or ""}
            ]  # fmt: skip
        steps.append(step)
    window: dict[str, Any] = {"unit": post.get("window_unit") or "session"}
    if window["unit"] != "session":
        window["value"] = post.get("window_value") or None
    definition = {"steps": steps, "count_by": post.get("count_by") or "user", "window": window}
    return definition, post.get("name") or ""


def _rows(definition: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Form rows (MAX_STEPS) prefilled from a definition."""
    steps = (definition or {}).get("steps") or []
    rows = []
    for n in range(MAX_STEPS):
        step = steps[n] if n < len(steps) else {}
        kind = STEP_KINDS.get(step.get("kind", ""))
        value, match = (
            kind.form_value(step) if kind else (step.get("name") or "", step.get("match", "exact"))
        )
        prop = (step.get("properties") or [{}])[0]
        rows.append({"n": n + 1, "kind": step.get("kind", ""), "value": value, "match": match,
                     "prop": prop})  # fmt: skip
    return rows


def _form_context(
    request: HttpRequest, site: Site, definition: dict[str, Any] | None, name: str
) -> dict[str, Any]:
    return {
        "site": site,
        "can_edit": site_role(request.user, site.id) == ADMIN,  # the form only for them
        "rows": _rows(definition),
        "name": name,
        "definition": definition or {"count_by": "user", "window": {"unit": "session"}},
        "kinds": list(STEP_KINDS),
        "matches": STEP_KINDS.form_matches(),
        "ops": OPS,
    }


@site_page(edit_role=ADMIN)
def funnel_list(request: HttpRequest, site: Site) -> HttpResponse:
    """The site's funnels; POST (the site's admins) defines a new one (400 naming the bad
    field)."""
    error, definition, name = "", None, ""
    if request.method == "POST":
        definition, name = form_definition(request.POST)
        try:
            funnel = defs.funnel_create(
                site=site, name=name, definition=definition, user=request.user
            )
            return redirect("sessions_app:funnel", site.id, funnel.pk)
        except RangeError as exc:
            error = str(exc)
    context = {
        **_form_context(request, site, definition, name),
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
    name = funnel.name
    if request.method == "POST":
        definition, name = form_definition(request.POST)
        try:
            defs.funnel_update(funnel=funnel, name=name, definition=definition)
            return redirect("sessions_app:funnel", site.id, funnel.pk)
        except RangeError as exc:
            error = str(exc)
    params = query_params(request)
    if not error:
        try:
            answer = answers.funnel_result(site, funnel, params)
        except RangeError as exc:
            error = str(exc)
    shown = {k: v for k, v in params.items() if k == "breakdown"}
    context = {
        **_form_context(request, site, definition, name),
        "funnel": funnel,
        "answer": answer,
        "bars": _bars(answer["steps"]) if answer else [],
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
