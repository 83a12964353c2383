"""Create the Storage-Attached Indexes the table registry names and drop retired ones (run
after sync_cassandra)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from sessions_app.foundation.tables import registry


class Command(BaseCommand):
    help = __doc__

    def handle(self, *args: Any, **options: Any) -> None:
        count = registry.indexes_ensure()
        self.stdout.write(f"{count} index statements run")
