"""WSGI entry point (gunicorn clickstream.wsgi).

Without DJANGO_SETTINGS_MODULE it uses the production settings (never the debug ones),
which refuse to start without DJANGO_SECRET_KEY.

POST /collect and /v1/* take the collector's lean path (clickstream/fastpath.py) unless
COLLECT_FAST_PATH is off. Once the app is loaded, its objects are moved out of the cycle
collector's reach (gc.freeze: they live as long as the process) and the first generation's
threshold is raised to WEB_GC_THRESHOLD, so a request's short-lived rows are freed
by reference counting before any collection sees them.
"""

import os

from django.conf import settings
from django.core.wsgi import get_wsgi_application

from clickstream.fastpath import CollectorFastPath
from sessions_app.foundation.core.garbage import tune_gc

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clickstream.settings.production")
django_application = get_wsgi_application()
application = (
    CollectorFastPath(django_application) if settings.COLLECT_FAST_PATH else django_application
)

tune_gc(settings.WEB_GC_THRESHOLD)
