"""Django admin (admin role only, see admin_site): sites with audited key rotation and
disabling; audited site memberships; API tokens (revocable; keys are never stored);
bucket states, redo watermarks, purge runs, the audit log, erasure receipts
and suppressions read-only."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.forms import ModelForm
from django.http import HttpRequest

from sessions_app.admin_site import RoleModelAdmin
from sessions_app.domain.accounts import tokens
from sessions_app.domain.ledger import sites
from sessions_app.foundation.models import (
    AdminAction,
    ApiToken,
    BucketState,
    ErasureRequest,
    PurgeRun,
    RedoWatermark,
    Site,
    SiteMembership,
    Suppression,
    UnappliedLogEntry,
    UserBucketWidth,
)


@admin.register(Site)
class SiteAdmin(RoleModelAdmin):
    list_display = ["name", "key", "enabled", "time_zone", "event_shards", "created_at"]
    list_filter = ["enabled"]
    search_fields = ["name", "key"]
    readonly_fields = ["id", "key", "created_at"]
    actions = ["rotate_key", "disable"]

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # disable instead: a site's id keys its Cassandra partitions

    def save_model(self, request: HttpRequest, obj: Site, form: ModelForm, change: bool) -> None:
        super().save_model(request, obj, form, change)
        sites.site_saved_record(
            site=obj, actor=request.user, created=not change, changed=list(form.changed_data)
        )

    @admin.action(description="Rotate the tracker key (the old key stops working)")
    def rotate_key(self, request: HttpRequest, queryset: QuerySet[Site]) -> None:
        for site in queryset:
            sites.site_key_rotate(site=site, actor=request.user)
        self.message_user(
            request,
            f"{queryset.count()} key(s) rotated; update the snippet on the site's pages. "
            "Collector caches drop the old key within 30 seconds.",
            messages.SUCCESS,
        )

    @admin.action(description="Disable (stop accepting events; data is kept)")
    def disable(self, request: HttpRequest, queryset: QuerySet[Site]) -> None:
        for site in queryset.filter(enabled=True):
            sites.site_disable(site=site, actor=request.user)
        self.message_user(request, "Disabled.", messages.SUCCESS)


@admin.register(SiteMembership)
class SiteMembershipAdmin(RoleModelAdmin):
    """Who sees which site, and as what (permissions.site_for); every change is audited."""

    list_display = ["user", "site", "role", "created_at"]
    list_filter = ["role", "site"]
    search_fields = ["user__username", "site__name"]

    def _audit(self, request: HttpRequest, obj: SiteMembership, action: str) -> None:
        sites.admin_action_record(
            actor=request.user,
            action=action,
            target=f"{obj.user.get_username()} on site {obj.site.name} ({obj.site_id})",
            details={"role": obj.role},
        )

    def save_model(
        self, request: HttpRequest, obj: SiteMembership, form: ModelForm, change: bool
    ) -> None:
        super().save_model(request, obj, form, change)
        self._audit(request, obj, "site.grant")

    def delete_model(self, request: HttpRequest, obj: SiteMembership) -> None:
        self._audit(request, obj, "site.revoke")
        super().delete_model(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[SiteMembership]) -> None:
        for obj in queryset.select_related("user", "site"):
            self._audit(request, obj, "site.revoke")
        super().delete_queryset(request, queryset)


class ReadOnlyAdmin(RoleModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(BucketState)
class BucketStateAdmin(ReadOnlyAdmin):
    list_display = [
        "bucket",
        "site",
        "granularity",
        "state",
        "late_events",
        "seals",
        "sealed_at",
        "updated_at",
    ]
    list_filter = ["state", "granularity", "site"]
    date_hierarchy = "bucket"


@admin.register(RedoWatermark)
class RedoWatermarkAdmin(ReadOnlyAdmin):
    list_display = ["site", "redone_through", "updated_at"]


@admin.register(UnappliedLogEntry)
class UnappliedLogEntryAdmin(ReadOnlyAdmin):
    list_display = ["batch_id", "site", "logged_at", "attempts", "error", "updated_at"]


@admin.register(PurgeRun)
class PurgeRunAdmin(ReadOnlyAdmin):
    list_display = [
        "started_at",
        "trigger",
        "requested_by",
        "probed",
        "deleted",
        "more_left",
        "finished_at",
    ]
    list_filter = ["trigger"]


@admin.register(AdminAction)
class AdminActionAdmin(ReadOnlyAdmin):
    list_display = ["at", "actor_name", "action", "target", "details"]
    list_filter = ["action"]
    search_fields = ["actor_name", "target"]
    date_hierarchy = "at"


@admin.register(ErasureRequest)
class ErasureRequestAdmin(ReadOnlyAdmin):
    """Receipts: created by the erasure page only, never edited."""

    list_display = ["created_at", "site", "kind", "requested_by_name", "state", "finished_at"]
    list_filter = ["state", "kind", "site"]


@admin.register(Suppression)
class SuppressionAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "site", "erasure"]
    list_filter = ["site"]


@admin.register(UserBucketWidth)
class UserBucketWidthAdmin(ReadOnlyAdmin):
    """Super-active users moved to finer event buckets (adaptive sizing)."""

    list_display = ["user_key", "site", "width", "effective_from", "reason", "created_at"]
    list_filter = ["site", "width"]
    search_fields = ["user_key"]


@admin.register(ApiToken)
class ApiTokenAdmin(ReadOnlyAdmin):
    """Tokens by user (the key is never stored); an admin may revoke any."""

    list_display = ["user", "name", "prefix", "created_at", "expires_at", "last_used_at"]
    list_filter = ["revoked_at"]
    search_fields = ["user__username", "name", "prefix"]
    exclude = ["digest"]
    actions = ["revoke"]

    @admin.action(description="Revoke (requests with it get 401)")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        for token in queryset.filter(revoked_at__isnull=True).select_related("user"):
            tokens.token_revoke(user=token.user, token_id=token.pk)
            sites.admin_action_record(
                actor=request.user,
                action="token.revoke",
                target=f"token {token.name} ({token.prefix}…) of {token.user.get_username()}",
            )
        self.message_user(request, "Revoked.", messages.SUCCESS)
