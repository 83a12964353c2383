"""Django admin: sites (editable); bucket states, watermarks, erasures, suppressions (read-only)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from sessions_app.models import BucketState, ErasureRequest, ReplayWatermark, Site, Suppression


@admin.register(Site)
class SiteAdmin(admin.ModelAdmin):
    list_display = ["name", "key", "enabled", "event_shards", "created_at"]
    list_filter = ["enabled"]
    search_fields = ["name", "key"]
    readonly_fields = ["id", "key", "created_at"]


class ReadOnlyAdmin(admin.ModelAdmin):
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


@admin.register(ReplayWatermark)
class ReplayWatermarkAdmin(ReadOnlyAdmin):
    list_display = ["site", "replayed_through", "updated_at"]


@admin.register(ErasureRequest)
class ErasureRequestAdmin(ReadOnlyAdmin):
    """Receipts: created by the erasure page only, never edited."""

    list_display = ["created_at", "site", "kind", "requested_by_name", "state", "finished_at"]
    list_filter = ["state", "kind", "site"]


@admin.register(Suppression)
class SuppressionAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "site", "erasure"]
    list_filter = ["site"]
