"""WSGI entry point (gunicorn clickstream.wsgi).

Once the app is loaded, its objects are moved out of the cycle collector's reach
(gc.freeze: they live as long as the process) and the first generation's
threshold is raised to WEB_GC_THRESHOLD, so a request's short-lived rows are freed
by reference counting before any collection sees them.
"""

import gc
import os

from django.conf import settings
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clickstream.settings.local")
application = get_wsgi_application()

gc.collect()
gc.freeze()
_, older, oldest = gc.get_threshold()
gc.set_threshold(settings.WEB_GC_THRESHOLD, older, oldest)
