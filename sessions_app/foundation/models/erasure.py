"""Erasure requests (which double as receipts) and the suppression list (SQL)."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from .sites import Site


class ErasureRequest(models.Model):
    """One admin's request to erase a user key of a site, and its receipt.

    Who asked and when (`requested_by`, `created_at`), how far the job got
    (`state`, `step`) and how many rows it deleted per table (`counts`) all stay
    here after the data is gone; the key itself stays too, since the suppression
    list needs it anyway.
    """

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    STATES = [(QUEUED, "queued"), (RUNNING, "running"), (DONE, "done"), (FAILED, "failed")]
    USER_ID = "user_id"
    ANONYMOUS_ID = "anonymous_id"
    KINDS = [(USER_ID, "user id"), (ANONYMOUS_ID, "anonymous id")]

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    site = models.ForeignKey(Site, on_delete=models.PROTECT, related_name="erasures")
    key = models.CharField(max_length=256)
    kind = models.CharField(max_length=16, choices=KINDS)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Kept as text too: the receipt must name the admin even if the login is deleted.
    requested_by_name = models.CharField(max_length=150)
    state = models.CharField(max_length=8, choices=STATES, default=QUEUED)
    step = models.CharField(max_length=64, blank=True)
    # Every user key the request covered: the key and, for a user id, its linked anonymous ids.
    keys = models.JSONField(default=list, blank=True)
    # Rows deleted (or rewritten) per table, and buckets resealed, as the job goes.
    counts = models.JSONField(default=dict, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["state", "created_at"])]

    def __str__(self) -> str:
        return f"erase {self.kind} of {self.site_id} ({self.state})"

    @property
    def finished(self) -> bool:
        return self.state in (self.DONE, self.FAILED)


class Suppression(models.Model):
    """A user key of a site whose events the collector and the log replay refuse."""

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="suppressions")
    key = models.CharField(max_length=256)
    created_at = models.DateTimeField(auto_now_add=True)
    erasure = models.ForeignKey(
        ErasureRequest, null=True, on_delete=models.SET_NULL, related_name="suppressions"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["site", "key"], name="one_suppression_per_key"),
        ]

    def __str__(self) -> str:
        return f"{self.site_id} suppressed key"
