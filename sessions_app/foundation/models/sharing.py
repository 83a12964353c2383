"""Share links (SQL): a read-only view of one site's reports for people without a login."""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import models


class ShareLink(models.Model):
    """A capability URL, `/share/<slug>/`, showing a site's dashboard (and the `reports`
    chosen for it) read-only (features/sharing, docs/sharing.md).

    `filters` are locked: copied from a segment when the link is made (its name kept in
    `segment_name`), so deleting or changing the segment later never widens the link.
    `password` is a Django password hash ("" for none); `embed_origins` the origins that
    may show the link in an iframe (none: no framing). A link is kept when revoked.
    """

    site = models.ForeignKey(
        "sessions_app.Site", on_delete=models.CASCADE, related_name="share_links"
    )
    name = models.CharField(max_length=100)
    slug = models.CharField(max_length=32, unique=True)
    reports = models.JSONField(default=list)
    filters = models.JSONField(default=dict)
    segment_name = models.CharField(max_length=100, blank=True, default="")
    password = models.CharField(max_length=128, blank=True, default="")
    embed_origins = models.JSONField(default=list)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.site} · {self.name}"

    def usable_at(self, now: datetime) -> bool:
        """Whether the link opens at `now`: not revoked and not expired."""
        return self.revoked_at is None and (self.expires_at is None or now < self.expires_at)
