"""Sites (SQL): the tenant of every Cassandra row, its tracker key and allowed origins."""

from __future__ import annotations

import secrets
import uuid

from django.db import models


def new_site_key() -> str:
    """Return a fresh public tracker key (not a secret: it ships in page source)."""
    return "cs_" + secrets.token_urlsafe(18)


class Site(models.Model):
    """A tracked website; `id` is the stable key of its Cassandra partitions."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    key = models.CharField(max_length=64, unique=True, default=new_site_key)
    allowed_origins = models.JSONField(default=list, blank=True)
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name
