"""ASGI entry point; without DJANGO_SETTINGS_MODULE, the production settings."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clickstream.settings.production")
application = get_asgi_application()
