#!/usr/bin/env python
"""Django's command-line utility for administrative tasks.

Without DJANGO_SETTINGS_MODULE it uses the production settings, like wsgi.py, asgi.py
and celery.py: nothing falls back to debug settings. `make run` and `make test` set
their own; for other development commands set
DJANGO_SETTINGS_MODULE=clickstream.settings.local.
"""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clickstream.settings.production")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
