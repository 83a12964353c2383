"""Admin pages for retention: policies per table, the tables' options, purge runs."""

from __future__ import annotations

import uuid
from typing import Any

from celery.result import AsyncResult
from django import forms
from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from sessions_app.domain.jobs import purge
from sessions_app.domain.ledger import policies, sites
from sessions_app.domain.permissions import admin_required
from sessions_app.foundation.models import Site

PAGE = "sessions_app:retention"
MAX_REPLAY_SITES = 200  # sites listed with their replay retention


class PolicyForm(forms.Form):
    days = forms.IntegerField(
        error_messages={
            "required": "days: required",
            "invalid": "days: a whole number such as 400",
        }
    )


def _queued(request: HttpRequest) -> dict[str, Any] | None:
    """Return the state of the purge task named by ?task= (from the result backend)."""
    try:
        task_id = str(uuid.UUID(request.GET.get("task", "")))
    except ValueError:
        return None
    result: AsyncResult[dict[str, Any]] = AsyncResult(task_id)
    if not result.ready():
        return {"id": task_id, "state": "queued"}
    if not result.successful():
        return {"id": task_id, "state": "failed", "error": str(result.result)}
    summary = result.result
    if not isinstance(summary, dict):
        return {"id": task_id, "state": "failed", "error": repr(summary)}
    return {"id": task_id, "state": "done", **summary}


def _replays() -> dict[str, Any]:
    """Session replays are kept per site (its "Keep replays (days)"), not by a policy."""
    field = Site._meta.get_field("replay_retention_days")
    recording = Site.objects.filter(replay=True).order_by("name")
    return {
        "tables": policies.REPLAY_TABLES,
        "default": field.default,
        "max": policies.REPLAY_MAX_DAYS,
        "sites": list(recording[:MAX_REPLAY_SITES]),
        "more": max(0, recording.count() - MAX_REPLAY_SITES),
    }


def _page(request: HttpRequest, *, errors: dict[str, list[str]], status: int = 200) -> HttpResponse:
    context: dict[str, Any] = {
        "replays": _replays(),
        "queued": _queued(request),
        "policies": [
            {"policy": policy, "errors": errors.get(policy.key, [])}
            for policy in policies.retention_policies()
        ],
        "options": policies.live_table_options(),
        "runs": purge.purge_runs(limit=20),
        "unknown": [
            m for key, found in errors.items() if policies.policy_label(key) is None for m in found
        ],
        "cache_seconds": policies.POLICY_CACHE_SECONDS,
        "purge_max": settings.PURGE_MAX_PARTITIONS,
    }
    return render(request, "sessions_app/retention.html", context, status=status)


@admin_required
@require_GET
def retention_page(request: HttpRequest) -> HttpResponse:
    """Show the policies with their forms, the tables' options and the latest purge runs."""
    return _page(request, errors={})


@admin_required
@require_POST
def policy_save(request: HttpRequest, key: str) -> HttpResponse:
    """Save one policy (new writes use it from now on) or show why it was refused (400)."""
    label = policies.policy_label(key)
    if label is None:
        return _page(request, errors={key: [f"policy: unknown policy {key!r}"]}, status=404)
    form = PolicyForm(request.POST)
    if not form.is_valid():
        problems = [str(m) for messages_ in form.errors.values() for m in messages_]
        return _page(request, errors={key: problems}, status=400)
    try:
        policies.retention_set(key=key, days=form.cleaned_data["days"], actor=request.user)
    except policies.RetentionError as exc:
        return _page(request, errors={key: [str(exc)]}, status=400)
    messages.success(
        request,
        f"{label}: {form.cleaned_data['days']} days for new writes; "
        "rows already written keep their TTL.",
    )
    return redirect(PAGE)


@admin_required
@require_POST
def purge_request(request: HttpRequest) -> HttpResponse:
    """Queue a purge run now; the page lists its result once a worker has run it."""
    task_id = purge.purge_queue(requested_by=request.user.pk)
    sites.admin_action_record(
        actor=request.user, action="purge.request", target="purge", details={"task": task_id}
    )
    messages.success(request, f"Purge queued (task {task_id}); its run appears below.")
    return redirect(f"{reverse(PAGE)}?task={task_id}")
