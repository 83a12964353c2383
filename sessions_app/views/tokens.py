"""The signed-in user's API tokens: list, create (the key shown once), revoke."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from sessions_app.domain.accounts import tokens
from sessions_app.domain.permissions import signed_in_required, visible_sites

PAGE = "sessions_app:tokens"


class TokenForm(forms.Form):
    name = forms.CharField(
        max_length=tokens.NAME_MAX,
        error_messages={
            "required": "name: required (what the token is for)",
            "max_length": f"name: at most {tokens.NAME_MAX} characters",
        },
    )
    expires_days = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=tokens.EXPIRES_DAYS_MAX,
        error_messages={
            "invalid": "expires in days: a whole number, or empty for never",
            "min_value": "expires in days: at least 1",
            "max_value": f"expires in days: at most {tokens.EXPIRES_DAYS_MAX}",
        },
    )


@signed_in_required
@require_http_methods(["GET", "POST"])
def token_list(request: HttpRequest) -> HttpResponse:
    """GET: the user's tokens. POST: make one, and show its key on this response only."""
    form = TokenForm(request.POST or None)
    context: dict[str, Any] = {"form": form, "errors": [], "new": None}
    if request.method == "POST":
        if form.is_valid():
            context["new"] = tokens.token_create(
                user=request.user,
                name=form.cleaned_data["name"],
                expires_days=form.cleaned_data["expires_days"],
            )
            form = TokenForm()
            context["form"] = form
        else:
            context["errors"] = [e for errs in form.errors.values() for e in errs]
    context["tokens"] = tokens.tokens_of(request.user)
    context["sites"] = visible_sites(request.user)
    response = render(request, "sessions_app/tokens.html", context)
    response["Cache-Control"] = "no-store"  # the page may hold a key
    return response


@signed_in_required
@require_POST
def token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    """Revoke one of the user's own tokens; anyone else's is 404."""
    if not tokens.token_revoke(user=request.user, token_id=token_id):
        raise Http404("no such token")
    messages.success(request, "Token revoked: requests with it now get 401.")
    return redirect(PAGE)
