"""Who may see what.

Sites: a user sees a site iff they are a Django superuser or have a SiteMembership of
it. The membership's role decides what they do there: an **analyst** reads its pages,
API and exports; an **admin** also opens its settings page and creates, changes and
deletes its funnels. A site the user may not see answers 404 exactly as a site that does
not exist (never 403: that would confirm it exists). `site_for` is the one check;
`site_page` applies it to a page, and `SiteView` to an API route (both take an
`edit_role` for their writes). API tokens act as their user.

The installation: the `admin` group (or a superuser) manages retention, erasure,
partition sizing and the Django admin, where memberships are granted.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from rest_framework.exceptions import PermissionDenied as DRFPermissionDenied
from rest_framework.exceptions import Throttled
from rest_framework.request import Request
from rest_framework.views import APIView

from sessions_app.domain.accounts import tokens
from sessions_app.domain.accounts.rates import Rate
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.models import ApiToken, Segment, Site, SiteMembership

ANALYST = SiteMembership.ANALYST
ADMIN = SiteMembership.ADMIN
_RANK = {ANALYST: 1, ADMIN: 2}
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def is_admin(user: Any) -> bool:
    """The installation's admin role: a superuser or a member of the `admin` group."""
    return bool(
        user
        and user.is_authenticated
        and (user.is_superuser or user.groups.filter(name=ADMIN).exists())
    )


def _signed_in(user: Any) -> bool:
    return bool(user and user.is_authenticated and user.is_active)


def visible_sites(user: Any) -> QuerySet[Site]:
    """The sites the user may see: all for a superuser, else those of their memberships."""
    if not _signed_in(user):
        return Site.objects.none()
    if user.is_superuser:
        return Site.objects.all()
    return Site.objects.filter(memberships__user=user)


def site_role(user: Any, site_id: uuid.UUID) -> str | None:
    """The user's role on a site (a superuser is admin everywhere), None if none."""
    if not _signed_in(user):
        return None
    if user.is_superuser:
        return ADMIN
    role: str | None = (
        SiteMembership.objects.filter(user=user, site_id=site_id)
        .values_list("role", flat=True)
        .first()
    )
    return role


def site_for(user: Any, site_id: uuid.UUID, *, role: str = ANALYST) -> Site:
    """Return the site if the user may act on it in `role`.

    Http404 if the user may not see it, whether or not it exists (DRF answers it as its
    NotFound); PermissionDenied (403) to a member whose role is below `role`.
    """
    site: Site | None = None
    held = ANALYST
    if _signed_in(user):
        if user.is_superuser:
            site, held = Site.objects.filter(id=site_id).first(), ADMIN
        else:
            membership = (
                SiteMembership.objects.select_related("site")
                .filter(user=user, site_id=site_id)
                .first()
            )
            if membership is not None:
                site, held = membership.site, membership.role
    if site is None:
        raise Http404("no such site")
    if _RANK[held] < _RANK[role]:
        raise PermissionDenied(f"the site's {role} role is required")
    return site


def role_required(check: Callable[[Any], bool]) -> Callable[..., Any]:
    """Redirect anonymous users to the login page; answer 403 to users without the role."""

    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not check(request.user):
                raise PermissionDenied("your role does not allow this page")
            return view(request, *args, **kwargs)

        return wrapper

    return decorator


signed_in_required = role_required(_signed_in)
admin_required = role_required(is_admin)


def site_page(role: str = ANALYST, *, edit_role: str | None = None) -> Callable[..., Any]:
    """A page of one site: the view gets the Site (from `site_id`) once site_for allows it;
    a POST needs `edit_role` when given.

    Anonymous users go to the login page (for any site id, existing or not).
    """

    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapper(
            request: HttpRequest, *args: Any, site_id: uuid.UUID, **kwargs: Any
        ) -> HttpResponse:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            needed = edit_role if edit_role and request.method not in SAFE_METHODS else role
            site = site_for(request.user, site_id, role=needed)
            return view(request, site, *args, **kwargs)

        wrapper.site_role = role  # type: ignore[attr-defined]
        return wrapper

    return decorator


class SiteView(APIView):
    """An API route of one site (`site_id` in its path): `self.site` once the requester
    may read it (`site_for`; another site answers 404 like a missing one).

    The check runs in `initial`, after authentication and before the handler parses
    any parameter, so a 400 never tells a stranger that a site exists.
    """

    site_role = ANALYST
    edit_role: str | None = None  # the role POST, PUT, PATCH and DELETE need, if higher
    site: Site

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        token = request.auth if isinstance(request.auth, ApiToken) else None
        if token is not None:
            _token_check(request, token, kwargs["site_id"])
        role = self.site_role if request.method in SAFE_METHODS else self.edit_role
        self.site = site_for(request.user, kwargs["site_id"], role=role or self.site_role)
        if request.method in SAFE_METHODS and request.query_params.get("segment"):
            _segment_apply(request, self.site)

    def finalize_response(
        self, request: Request, response: HttpResponseBase, *args: Any, **kwargs: Any
    ) -> HttpResponseBase:
        """A token's answers say where its hour stands (X-RateLimit-*), a 429 too."""
        rate: Rate | None = getattr(request, "token_rate", None)
        if rate is not None:
            response["X-RateLimit-Limit"] = str(rate.limit)
            response["X-RateLimit-Remaining"] = str(max(rate.remaining, 0))
            response["X-RateLimit-Reset"] = str(rate.reset)
        return super().finalize_response(request, response, *args, **kwargs)


def segments_seen(site: Site, user: Any) -> QuerySet[Segment]:
    """The site's saved segments this person sees: their own and the shared ones."""
    mine = Q(owner_id=user.pk) if user.pk is not None else Q(pk__in=[])
    return Segment.objects.filter(site=site).filter(mine | Q(shared=True))


def _segment_apply(request: Request, site: Site) -> None:
    """`segment=<id>`: a saved segment of the site the requester sees (theirs or shared),
    its filters added to the request's parameters, so the route reads them as if they
    were in the URL (docs/segments.md). RangeError (400) for another id, or for a filter
    the URL also sets to another value."""
    asked = request.query_params["segment"]
    ok = asked.isdigit() and len(asked) < 19
    found = segments_seen(site, request.user).filter(pk=int(asked)).first() if ok else None
    if found is None or not isinstance(found.filters, dict):
        raise RangeError("segment", "no such segment of this site")
    params = request._request.GET.copy()
    for name, value in found.filters.items():
        if params.get(name) not in (None, "", value):
            raise RangeError("segment", f"it sets {name} too: drop one of them")
        params[name] = value
    del params["segment"]
    request._request.GET = params


class TokenLimited(Throttled):
    field = "token"


class TokenReadOnly(DRFPermissionDenied):
    field = "token"


def _token_check(request: Request, token: ApiToken, site_id: uuid.UUID) -> None:
    """The token's scope (another site is 404, as a site its user cannot see; a write
    with a read-only token is 403), then its hour's count (429 past its limit)."""
    if not tokens.token_reaches(token, site_id):
        raise Http404("no such site")
    if token.read_only and request.method not in SAFE_METHODS:
        raise TokenReadOnly("this token may only read (its scope: read)")
    rate = tokens.rate_take(token)
    request.token_rate = rate
    if rate is not None and rate.exceeded:
        raise TokenLimited(wait=rate.retry_after(), detail=f"over {rate.limit} requests this hour")
