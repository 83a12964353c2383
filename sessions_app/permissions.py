"""Roles: analysts read everything; admins also manage retention and erasure."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from rest_framework.permissions import BasePermission

ANALYST = "analyst"
ADMIN = "admin"


def is_admin(user: Any) -> bool:
    return bool(
        user
        and user.is_authenticated
        and (user.is_superuser or user.groups.filter(name=ADMIN).exists())
    )


def is_analyst(user: Any) -> bool:
    return bool(
        user
        and user.is_authenticated
        and (is_admin(user) or user.groups.filter(name=ANALYST).exists())
    )


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


analyst_required = role_required(is_analyst)
admin_required = role_required(is_admin)


class IsAnalyst(BasePermission):
    message = "the analyst or admin role is required"

    def has_permission(self, request: Any, view: Any) -> bool:
        return is_analyst(request.user)
