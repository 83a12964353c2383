"""Retention policies, purge bookkeeping and the audit log of admin actions (SQL)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class RetentionPolicy(models.Model):
    """Days to keep one kind of data (retention.SPECS); no row means the settings default."""

    key = models.CharField(max_length=32, primary_key=True)
    days = models.PositiveIntegerField()
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "retention policies"

    def __str__(self) -> str:
        return f"{self.key}: {self.days} days"


class PurgeWatermark(models.Model):
    """Buckets of one site's table already purged: everything before `purged_through`."""

    site = models.ForeignKey("sessions_app.Site", on_delete=models.CASCADE, related_name="+")
    table = models.CharField(max_length=48)
    purged_through = models.DateTimeField()
    # Last user key done inside the bucket at purged_through (per-user tables only).
    cursor = models.TextField(blank=True, default="")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["site", "table"], name="one_purge_mark_per_table")
        ]

    def __str__(self) -> str:
        return f"{self.site_id} {self.table} purged through {self.purged_through.isoformat()}"


class PurgeRun(models.Model):
    """One run of the purge: how many partitions it probed and deleted, per table."""

    BEAT = "beat"
    ADMIN = "admin"
    TRIGGERS = [(BEAT, "beat"), (ADMIN, "admin")]

    trigger = models.CharField(max_length=8, choices=TRIGGERS, default=BEAT)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    probed = models.PositiveIntegerField(default=0)
    deleted = models.PositiveIntegerField(default=0)
    by_table = models.JSONField(default=dict, blank=True)  # table -> partitions deleted
    more_left = models.BooleanField(default=False)  # stopped at PURGE_MAX_PARTITIONS
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-started_at"]

    def __str__(self) -> str:
        return f"purge {self.started_at.isoformat()}: {self.deleted} partitions"


class AdminAction(models.Model):
    """Audit log: who did what to which target, and when (written by the services)."""

    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_name = models.CharField(max_length=150)  # kept if the user is deleted
    action = models.CharField(max_length=32, db_index=True)
    target = models.CharField(max_length=200)
    details = models.JSONField(default=dict, blank=True)
    at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.at.isoformat()} {self.actor_name} {self.action} {self.target}"
