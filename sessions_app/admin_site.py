"""The Django admin site, open to the admin role only.

Django's own gate is `is_staff`, and it answers everyone else with its login form.
Here the gate is the admin role (permissions.is_admin): anonymous users go to the
login form, authenticated users without the role get 403 on every admin URL,
including the login page and the model actions.
"""

from __future__ import annotations

from functools import wraps
from typing import Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse

from sessions_app.domain.permissions import is_admin


class RoleAdminSite(admin.AdminSite):
    site_header = "clickstream admin"
    site_title = "clickstream admin"

    def has_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.is_active and is_admin(request.user))

    def admin_view(self, view: Any, cacheable: bool = False) -> Any:
        inner = super().admin_view(view, cacheable)

        @wraps(view)
        def gated(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if request.user.is_authenticated and not self.has_permission(request):
                raise PermissionDenied("the admin role is required")
            return inner(request, *args, **kwargs)

        return gated

    def login(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> Any:
        if request.user.is_authenticated and not self.has_permission(request):
            raise PermissionDenied("the admin role is required")
        return super().login(request, extra_context)


class RoleModelAdmin(admin.ModelAdmin):
    """A model admin whose permissions are the admin role, not per-model Django permissions."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        return is_admin(request.user)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_admin(request.user)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return is_admin(request.user)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_admin(request.user)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_admin(request.user)
