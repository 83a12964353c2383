"""API tokens (SQL): only a SHA-256 digest of each key is stored, never the key itself."""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import models


class ApiToken(models.Model):
    """A user's named API key, optionally expiring; revoked tokens are kept, marked.

    The key (`cst_` + 40 random URL-safe characters) is shown once when it is made;
    requests are matched by the digest. `prefix` (the key's first characters) only
    helps its owner tell tokens apart. Its scope: `sites` (none: every site its user
    sees, as tokens made before scopes) and `read_only` (else it may also write goals,
    funnels, segments and annotations, as its user may).
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    digest = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=12)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    sites = models.ManyToManyField("sessions_app.Site", blank=True, related_name="+")
    read_only = models.BooleanField(default=False, db_default=False)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.user} · {self.name} ({self.prefix}…)"

    def usable_at(self, now: datetime) -> bool:
        """Whether the token authenticates at `now`: not revoked and not expired."""
        return self.revoked_at is None and (self.expires_at is None or now < self.expires_at)
