"""The Goals pages of a site: the list with each goal's backfill progress and a form to
define one (the site's admins), a goal's page to change or delete it."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone

from sessions_app.domain.goals.defs import goal_of
from sessions_app.domain.goals.kinds import STEP_KINDS
from sessions_app.domain.goals.steps import OPS
from sessions_app.domain.jobs import goal_backfill as goal_jobs
from sessions_app.domain.permissions import ADMIN, site_page, site_role
from sessions_app.features.annotations import notes
from sessions_app.features.goals import stats
from sessions_app.features.web.params import query_params
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.models import Goal, Site

# A field an error names, as the form calls it.
FIELDS = {
    "name": "Name",
    "definition.kind": "Kind",
    "definition.path": "Path",
    "definition.match": "Match",
    "definition.selector": "Selector or text",
    "definition.name": "Event name",
    "definition.properties": "Property condition",
}
POSTED = ("name", "kind", "value", "match", "prop_key", "prop_op", "prop_value")


def form_goal(post: Any) -> tuple[str, dict[str, Any]]:
    """The name and definition the form posts (kind, value, match; one property condition)."""
    kind = (post.get("kind") or "").strip()
    value = (post.get("value") or "").strip()
    found = STEP_KINDS.get(kind)
    step: dict[str, Any] = {"kind": kind}
    if found is not None and value:  # an empty one: the kind says what it needs
        step.update(found.form_step(value, post.get("match") or "exact"))
    key = (post.get("prop_key") or "").strip()
    if key:
        step["properties"] = [
            {"key": key, "op": post.get("prop_op") or "eq", "value": post.get("prop_value") or ""}
        ]
    return post.get("name") or "", step


def plain_error(exc: RangeError) -> str:
    """A save's error in the form's words ("Path: required for a page view step")."""
    field = exc.field.split("[")[0]
    message = str(exc).split(": ", 1)[-1]
    return f"{FIELDS.get(field, 'Goal')}: {message}"


def _form(goal: Goal | None, post: Any = None) -> dict[str, Any]:
    """The form's values: posted, else the goal's, else empty."""
    if post is not None:
        return {k: post.get(k) or "" for k in POSTED}
    if goal is None:
        return {"kind": "pageview", "match": "exact", "prop_op": "eq"}
    step = goal.definition
    value, match = STEP_KINDS[step["kind"]].form_value(step)
    prop = (step.get("properties") or [{}])[0]
    return {
        "name": goal.name,
        "kind": step["kind"],
        "value": value,
        "match": match,
        "prop_key": prop.get("key", ""),
        "prop_op": prop.get("op", "eq"),
        "prop_value": prop.get("value", ""),
    }


def _saved(request: HttpRequest, site: Site, goal: Goal | None) -> Goal:
    """Save the posted goal and queue its backfill once committed; RangeError if invalid."""
    name, definition = form_goal(request.POST)
    with transaction.atomic():
        saved = goal_jobs.goal_save(
            site=site, name=name, definition=definition, now=timezone.now(), goal=goal
        )
        if goal_jobs.backfill_due(saved):
            transaction.on_commit(lambda: goal_jobs.backfill_queue(saved))
    return saved


def _context(request: HttpRequest, site: Site, form: dict[str, Any], error: str) -> dict[str, Any]:
    return {
        "site": site,
        "can_edit": site_role(request.user, site.id) == ADMIN,
        "form": form,
        "error": error,
        "kinds": [k for k in STEP_KINDS if k.in_goals],
        "matches": STEP_KINDS.form_matches(),
        "ops": OPS,
    }


@site_page(edit_role=ADMIN)
def goal_list(request: HttpRequest, site: Site) -> HttpResponse:
    """The site's goals and their backfill; POST (the site's admins) defines a new one."""
    error, form = "", _form(None)
    if request.method == "POST":
        try:
            _saved(request, site, None)
            return redirect("sessions_app:goals", site.id)
        except RangeError as exc:
            error, form = plain_error(exc), _form(None, request.POST)
    rows = list(Goal.objects.filter(site=site))
    period, range_error = stats.stats_period(site, query_params(request))
    lines = stats.goal_lines(site, period) if rows else {}
    context = {
        **_context(request, site, form, error),
        "goals": [(row, goal_of(row).label, lines.get(row.pk)) for row in rows],
        "period": period,
        "range_error": range_error,
        "working": any(r.backfill_state in (Goal.QUEUED, Goal.RUNNING) for r in rows),
    }
    return render(request, "sessions_app/goals.html", context, status=400 if error else 200)


def _goal(site: Site, goal_id: int) -> Goal:
    goal = Goal.objects.filter(site=site, pk=goal_id).first()
    if goal is None:
        raise Http404("no such goal")
    return goal


@site_page(edit_role=ADMIN)
def goal_detail(request: HttpRequest, site: Site, goal_id: int) -> HttpResponse:
    """One goal; POST (the site's admins) changes it (a new definition is backfilled)."""
    goal = _goal(site, goal_id)
    error, form = "", _form(goal)
    if request.method == "POST":
        try:
            _saved(request, site, goal)
            return redirect("sessions_app:goals", site.id)
        except RangeError as exc:
            error, form = plain_error(exc), _form(goal, request.POST)
            goal.refresh_from_db()
    period, range_error = stats.stats_period(site, query_params(request))
    days = stats.goal_days(site, goal, period)
    marks = notes.for_chart(site, period)
    context = {
        **_context(request, site, form, error),
        "goal": goal,
        "label": goal_of(goal).label,
        "period": period,
        "range_error": range_error,
        "line": stats.goal_lines(site, period).get(goal.pk),
        "days": days,
        "trend_width": stats.trend_width(days),
        # The period's notes behind the bars of their days (the list under it: the include).
        "note_bars": notes.on_bars(marks, [d.day for d in days], step=stats.BAR_STEP),
    }
    return render(request, "sessions_app/goal.html", context, status=400 if error else 200)


@site_page(role=ADMIN)
def goal_delete(request: HttpRequest, site: Site, goal_id: int) -> HttpResponse:
    """Delete a goal (POST, confirmed), back to the list; GET: the goal's page, which asks."""
    goal = _goal(site, goal_id)
    confirmed = request.method == "POST" and request.POST.get("confirm") == "yes"
    if not confirmed:
        error = "Tick the box to confirm the deletion." if request.method == "POST" else ""
        context = {
            **_context(request, site, _form(goal), ""),
            "goal": goal,
            "label": goal_of(goal).label,
            "delete_error": error,
        }
        return render(request, "sessions_app/goal.html", context, status=400 if error else 200)
    goal_jobs.goal_delete(goal)
    return redirect("sessions_app:goals", site.id)
