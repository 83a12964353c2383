"""Give site_sessions rows written before the partition-local terms their terms (once,
after upgrading; docs/analysis.md)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand
from django.utils import timezone

from sessions_app.domain.jobs.terms import terms_backfill
from sessions_app.foundation.models import Site


class Command(BaseCommand):
    help = __doc__

    def handle(self, *args: Any, **options: Any) -> None:
        now = timezone.now()
        total = 0
        for site in Site.objects.order_by("pk"):
            total += terms_backfill(site.id, now)
        self.stdout.write(f"{total} session rows given their terms")
