"""Funnels (SQL): a site's saved funnels and their immutable definition versions."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Funnel(models.Model):
    """A named funnel of one site; `current` is the version its results use.

    Editing the steps (or how it counts) adds a FunnelVersion, so results cached under
    an older definition (funnel_days, by digest) are never mistaken for the new one.
    """

    site = models.ForeignKey("sessions_app.Site", on_delete=models.CASCADE, related_name="funnels")
    name = models.CharField(max_length=100)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    current = models.ForeignKey(
        "sessions_app.FunnelVersion", null=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name


class FunnelVersion(models.Model):
    """One definition of a funnel (funnels/spec.definition_clean), never changed."""

    funnel = models.ForeignKey(Funnel, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    definition = models.JSONField()
    digest = models.CharField(max_length=32)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["funnel", "number"], name="one_funnel_version_number")
        ]

    def __str__(self) -> str:
        return f"{self.funnel_id} v{self.number}"
