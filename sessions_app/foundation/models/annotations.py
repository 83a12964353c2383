"""Annotations (SQL): a note on a day or a range of days, shown on a site's time charts."""

from __future__ import annotations

from datetime import date

from django.conf import settings
from django.db import models


class Annotation(models.Model):
    """A site's note on `day` (through `end_day`, inclusive, when a range), days in the
    site's time zone (features/annotations). `public`: a share link's viewers see it
    too; members of the site see every one."""

    site = models.ForeignKey(
        "sessions_app.Site", on_delete=models.CASCADE, related_name="annotations"
    )
    day = models.DateField()
    end_day = models.DateField(null=True, blank=True)  # None: the one day
    note = models.CharField(max_length=200)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    public = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-day", "-id"]
        indexes = [models.Index(fields=["site", "day"], name="annotation_site_day")]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(end_day__isnull=True) | models.Q(end_day__gte=models.F("day")),
                name="annotation_end_day_not_before_day",
            )
        ]

    def __str__(self) -> str:
        return self.note

    @property
    def last_day(self) -> date:
        """The range's last day (its first, for a single day)."""
        return self.end_day or self.day
