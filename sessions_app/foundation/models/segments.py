"""Saved segments (SQL): a named set of the explorer's and the dashboard's filters."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Segment(models.Model):
    """A site's filters under a name (features/segments): its owner's alone, or every
    member's once shared (only the site's admins share). `filters` holds the URL
    parameters of the filters as the pages read them (explorer.filter_names())."""

    site = models.ForeignKey("sessions_app.Site", on_delete=models.CASCADE, related_name="segments")
    name = models.CharField(max_length=100)
    filters = models.JSONField()
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    shared = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name
