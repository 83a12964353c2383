"""Jobs run by Celery and commands: the purge (the erasure job lives in
sessions_app.domain.erasure)."""
