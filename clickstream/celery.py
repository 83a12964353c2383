"""Celery application: configuration from Django settings (CELERY_*), one beat schedule.

Without DJANGO_SETTINGS_MODULE it uses the production settings, as manage.py and the
web entry points do (importing the `clickstream` package loads this module first).
"""

from __future__ import annotations

import os
from typing import Any

from celery import Celery
from celery.signals import worker_process_init
from django.conf import settings

from sessions_app.foundation.core.cql import reset_after_fork
from sessions_app.foundation.core.garbage import tune_gc

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clickstream.settings.production")

app = Celery("clickstream")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_process_init.connect
def _reset_cassandra_after_fork(**_: Any) -> None:
    """Drop the Cassandra connection inherited from the parent; reconnect lazily.

    A driver Cluster owns threads and sockets that do not survive fork(). The
    reset only unregisters, so this hook stays fast (Celery kills a child whose
    init takes longer than 4 s); the first query in the child connects.
    """
    reset_after_fork()


@worker_process_init.connect
def _tune_gc(**_: Any) -> None:
    """A worker child's startup objects out of the cycle collector's reach (seals
    allocate hundreds of thousands of short-lived rows); WORKER_GC_THRESHOLD."""
    tune_gc(settings.WORKER_GC_THRESHOLD)
