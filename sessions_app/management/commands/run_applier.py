"""Write queued plans into the tables until SIGTERM or SIGINT
(sessions_app/domain/ingest/applier.py).

Run one or more beside the web workers; without any, the collector writes each
plan itself. On a stop signal it stops announcing itself, applies what is left in
the queue and exits.
"""

from __future__ import annotations

import signal
import threading
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from sessions_app.domain.ingest import applier
from sessions_app.foundation.core.garbage import tune_gc


class Command(BaseCommand):
    help = __doc__

    def handle(self, *args: Any, **options: Any) -> None:
        tune_gc(settings.WORKER_GC_THRESHOLD)
        stop = threading.Event()

        def _stop(_signum: int, _frame: object) -> None:
            stop.set()

        signal.signal(signal.SIGTERM, _stop)
        signal.signal(signal.SIGINT, _stop)
        total = applier.run(stop)
        self.stdout.write(
            f"applied {total.applied} plans ({total.statements} statements); "
            f"left to the replay task: {total.stale} stale, {total.failed} failed"
        )
