"""A site's settings page and the account's API tokens."""

from __future__ import annotations

import re
import uuid
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from sessions_app.domain.accounts import tokens
from sessions_app.domain.ledger import sites
from sessions_app.domain.permissions import ADMIN, signed_in_required, site_page, visible_sites
from sessions_app.features.web import periods
from sessions_app.foundation.models import Site
from sessions_app.foundation.models.sites import (
    REPLAY_RETENTION_MAX_DAYS,
    validate_redact_params,
    validate_replay_exclude,
)

MAX_ORIGINS = 50


REPLAY_FIELDS = (
    "replay",
    "replay_sample",
    "replay_mask_text",
    "replay_exclude",
    "replay_retention_days",
)


_ORIGIN = re.compile(r"^https?://[A-Za-z0-9.-]+(:\d{1,5})?$")


def _lines(text: str) -> list[str]:
    return [part for part in re.split(r"[\s,]+", text.strip()) if part]


class SiteSettingsForm(forms.Form):
    allowed_origins = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text="One origin a line, e.g. https://shop.example (scheme, host, optional port).",
    )
    redact_params = forms.CharField(
        required=False,
        help_text="URL parameters the tracker drops besides its defaults, e.g. email, phone; "
        "-code keeps one the defaults would drop.",
    )

    vitals = forms.BooleanField(
        required=False,
        label="Web vitals",
        help_text="Measure LCP, INP, CLS, FCP and TTFB on every page (the tracker loads a "
        "6 KB script for it); shown on the Performance page. Update the snippet after a change.",
    )
    replay = forms.BooleanField(
        required=False,
        label="Session replay",
        help_text="Record what visitors see, to watch beside a session's click path (the "
        "tracker loads a 36 KB script for the sampled visitors). Every input is masked; "
        "mark private text with data-cs-mask, hide an element with data-cs-block. "
        "Update the snippet after a change.",
    )
    replay_sample = forms.IntegerField(
        required=False,
        min_value=0,
        max_value=100,
        label="Replay sample (%)",
        help_text="Percent of visitors recorded (a visitor's sessions are all in or all out).",
    )
    replay_mask_text = forms.BooleanField(
        required=False,
        label="Mask all text in replays",
        help_text="Every text of the page shows as * in replays, not only data-cs-mask elements.",
    )
    replay_exclude = forms.CharField(
        required=False,
        label="Pages never recorded",
        help_text="Path patterns, one a line or comma-separated; * matches anything, "
        "e.g. /account/*",
    )
    replay_retention_days = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=REPLAY_RETENTION_MAX_DAYS,
        label="Keep replays (days)",
        help_text="Replays older than this are deleted (1-365).",
    )
    time_zone = forms.CharField(
        required=False,
        max_length=64,
        widget=forms.TextInput(attrs={"list": "zone-names", "autocomplete": "off"}),
        help_text="Type to search, e.g. Berlin: days, hours and “Today” are counted in it.",
    )

    def clean_time_zone(self) -> str:
        name = self.cleaned_data["time_zone"].strip() or "UTC"
        if name not in periods.zone_names():
            raise ValidationError(f"not a time zone: {name[:64]!r} (pick one, e.g. Europe/Berlin)")
        return name

    def clean_allowed_origins(self) -> list[str]:
        origins = [o.rstrip("/") for o in _lines(self.cleaned_data["allowed_origins"])]
        if len(origins) > MAX_ORIGINS:
            raise ValidationError(f"at most {MAX_ORIGINS} origins")
        for origin in origins:
            if not _ORIGIN.match(origin):
                raise ValidationError(f"not an origin: {origin[:100]!r} (https://host[:port])")
        return list(dict.fromkeys(origins))

    def clean_replay_sample(self) -> int:
        value = self.cleaned_data["replay_sample"]
        return 100 if value is None else int(value)  # left empty: everyone

    def clean_replay_retention_days(self) -> int:
        value = self.cleaned_data["replay_retention_days"]
        return 30 if value is None else int(value)  # left empty: the default

    def clean_replay_exclude(self) -> list[str]:
        patterns = list(dict.fromkeys(_lines(self.cleaned_data["replay_exclude"])))
        validate_replay_exclude(patterns)
        return patterns

    def clean_redact_params(self) -> list[str]:
        names = list(dict.fromkeys(_lines(self.cleaned_data["redact_params"])))
        validate_redact_params(names)
        return names


def _initial(site: Site) -> dict[str, Any]:
    return {
        "allowed_origins": "\n".join(site.allowed_origins),
        "redact_params": ", ".join(site.redact_params),
        "time_zone": site.time_zone,
        "vitals": site.vitals,
        **{name: getattr(site, name) for name in REPLAY_FIELDS},
        "replay_exclude": "\n".join(site.replay_exclude),
    }


@site_page(ADMIN)
def site_settings(request: HttpRequest, site: Site) -> HttpResponse:
    """GET: the page; POST: save origins and redaction (audited), then back to the page."""
    status = 200
    if request.method == "POST":
        form = SiteSettingsForm(request.POST)
        if form.is_valid():
            names = ("allowed_origins", "redact_params", "time_zone", "vitals", *REPLAY_FIELDS)
            changed = [k for k in names if form.cleaned_data[k] != getattr(site, k)]
            if changed:
                for name in changed:
                    setattr(site, name, form.cleaned_data[name])
                site.save(update_fields=changed)
                sites.site_saved_record(
                    site=site, actor=request.user, created=False, changed=changed
                )
                saved = ", ".join(c.replace("_", " ") for c in changed)
                messages.success(request, f"Saved: {saved}")
            return redirect("sessions_app:site", site_id=site.id)
        status = 400
    else:
        form = SiteSettingsForm(initial=_initial(site))
    base = request.build_absolute_uri("/").rstrip("/")
    members = site.memberships.select_related("user").order_by("user__username")
    context = {
        "site": site,
        "base": base,
        "members": members,
        "form": form,
        "zone_names": periods.zone_names(),
    }
    return render(request, "sessions_app/site.html", context, status=status)


@site_page(ADMIN)
def heatmap_links_revoke(request: HttpRequest, site: Site) -> HttpResponse:
    """GET: what revoking does, and its button; POST: rotate the site's heatmap salt
    (audited): every "View on page" link dies. Access is checked first, so the route
    answers outsiders 404 like every site route."""
    if request.method != "POST":
        return render(request, "sessions_app/heatmap_links_revoke.html", {"site": site})
    sites.site_heatmap_salt_rotate(site=site, actor=request.user)
    messages.success(request, "Revoked every heatmap link issued so far")
    return redirect("sessions_app:site", site_id=site.id)


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

    read_only = forms.BooleanField(required=False)
    sites = forms.TypedMultipleChoiceField(
        required=False,
        coerce=uuid.UUID,
        error_messages={"invalid_choice": "sites: %(value)s is none of your sites"},
    )

    def __init__(self, *args: Any, sites: list[Any], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["sites"]
        assert isinstance(field, forms.TypedMultipleChoiceField)
        field.choices = [(str(site.id), site.name) for site in sites]


@signed_in_required
@require_http_methods(["GET", "POST"])
def token_list(request: HttpRequest) -> HttpResponse:
    """GET: the user's tokens. POST: make one (for all the user's sites or those named,
    reading and writing or only reading), and show its key on this response only."""
    sites = list(visible_sites(request.user))
    form = TokenForm(request.POST or None, sites=sites)
    context: dict[str, Any] = {"form": form, "errors": [], "new": None}
    if request.method == "POST":
        if form.is_valid():
            chosen = set(form.cleaned_data["sites"])
            context["new"] = tokens.token_create(
                user=request.user,
                name=form.cleaned_data["name"],
                expires_days=form.cleaned_data["expires_days"],
                sites=[site for site in sites if site.id in chosen],
                read_only=form.cleaned_data["read_only"],
            )
            form = TokenForm(sites=sites)
            context["form"] = form
        else:
            context["errors"] = [e for errs in form.errors.values() for e in errs]
    context["tokens"] = tokens.tokens_of(request.user).prefetch_related("sites")
    context["sites"], context["rate"] = sites, settings.API_TOKEN_RATE
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
