"""Admin pages for erasure: the request form with the receipts, and one request's progress."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from django import forms
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from sessions_app.domain.erasure import erasures, job
from sessions_app.domain.permissions import admin_required
from sessions_app.foundation.models import ErasureRequest, Site

log = logging.getLogger(__name__)
RECEIPTS_SHOWN = 100


class ErasureForm(forms.Form):
    site = forms.ModelChoiceField(
        queryset=Site.objects.all(),
        error_messages={"required": "site: required", "invalid_choice": "site: no such site"},
    )
    kind = forms.ChoiceField(
        choices=ErasureRequest.KINDS,
        error_messages={
            "required": "kind: required",
            "invalid_choice": "kind: user_id or anonymous_id",
        },
    )
    key = forms.CharField(
        max_length=256,
        strip=True,
        error_messages={
            "required": "key: required (the exact user id or anonymous id)",
            "max_length": "key: at most 256 characters",
        },
    )
    # Typed twice: an erasure cannot be undone, and a wrong key erases someone else.
    key_again = forms.CharField(
        max_length=256,
        strip=True,
        error_messages={"required": "key again: type the key a second time to confirm"},
    )
    # Set after the page warned that the key has no data (it still goes on the suppression list).
    anyway = forms.BooleanField(required=False)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if "key" in data and "key_again" in data and data["key"] != data["key_again"]:
            self.add_error("key_again", "key again: does not match the key; type it again")
        return data


def _errors(form: forms.Form) -> list[str]:
    return [str(message) for messages in form.errors.values() for message in messages]


@admin_required
def erasure_list(request: HttpRequest) -> HttpResponse:
    """Show the request form and the receipts; a POST records a request and starts its job,
    once the key was typed twice and, for a key with no data, after a warning."""
    form = ErasureForm(request.POST if request.method == "POST" else None)
    context: dict[str, Any] = {"form": form, "errors": []}
    if request.method == "POST":
        if (
            form.is_valid()
            and not form.cleaned_data["anyway"]
            and not erasures.key_has_data(
                site=form.cleaned_data["site"], key=form.cleaned_data["key"]
            )
        ):
            context["no_data"] = form.cleaned_data
        elif form.is_valid():
            data = form.cleaned_data
            try:
                created = erasures.erasure_request(
                    site=data["site"], key=data["key"], kind=data["kind"], requested_by=request.user
                )
            except erasures.ErasureError as exc:
                context["errors"] = [str(exc)]
            else:
                return redirect("sessions_app:erasure", request_id=created.pk)
        else:
            context["errors"] = _errors(form)
    context["receipts"] = list(
        ErasureRequest.objects.select_related("site").order_by("-created_at")[:RECEIPTS_SHOWN]
    )
    status = 400 if context["errors"] else 200
    return render(request, "sessions_app/erasure_list.html", context, status=status)


@admin_required
def erasure_detail(request: HttpRequest, request_id: uuid.UUID) -> HttpResponse:
    """Show one request's progress while it runs, and its receipt once done."""
    found = ErasureRequest.objects.select_related("site").filter(pk=request_id).first()
    if found is None:
        raise Http404("no such erasure request")
    counts = found.counts or {}
    rows = [(table, counts.get(table, 0)) for table in job.TABLES]
    resealed = [(g, counts.get(f"{g}s_resealed", 0)) for g in job.RESEALED]
    return render(
        request,
        "sessions_app/erasure_detail.html",
        {
            "erasure": found,
            "rows": rows,
            "total": sum(n for _, n in rows),
            "resealed": resealed,
            "rewritten": counts.get("transaction_log_rewritten", 0),
        },
    )
