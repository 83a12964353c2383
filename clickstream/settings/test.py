"""Test settings: real Cassandra and Redis, a `test_` keyspace, fast hashing."""

import os
from urllib.parse import urlsplit

from .base import *

# pytest-xdist runs a worker per core (PYTEST_XDIST_WORKER=gw0, gw1, ...). pytest-django
# gives each worker's test databases a suffix (keyspace test_clickstream_gw0, SQLite file
# test-default.sqlite3_gw0); here each also gets a Redis database of its own. The processes
# a test starts inherit the variable: they read the same SQLite file and Redis database,
# and are handed the keyspace.
XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if XDIST_WORKER:
    _database = f"/{1 + int(XDIST_WORKER.removeprefix('gw'))}"
    REDIS_URL = urlsplit(REDIS_URL)._replace(path=_database).geturl()
    CELERY_BROKER_URL = urlsplit(CELERY_BROKER_URL)._replace(path=_database).geturl()
    CELERY_RESULT_BACKEND = urlsplit(CELERY_RESULT_BACKEND)._replace(path=_database).geturl()
    # Celery reads CELERY_BROKER_URL from the environment before the settings: both agree.
    os.environ.update(
        REDIS_URL=REDIS_URL,
        CELERY_BROKER_URL=CELERY_BROKER_URL,
        CELERY_RESULT_BACKEND=CELERY_RESULT_BACKEND,
    )

SECRET_KEY = "test-only-key"  # noqa: S105
DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# A file, not :memory:, so the real Celery worker the tests start reads the same SQL
# rows (sites, bucket states) as the test process; the test runner recreates it.
STATE_DIR.mkdir(parents=True, exist_ok=True)  # a clean clone has none until a service starts
TEST_SQLITE = STATE_DIR / "test-default.sqlite3"
DATABASES["default"] = {
    "ENGINE": "django.db.backends.sqlite3",
    # What a process a test started opens: the test runner's file, suffixed as pytest-django
    # suffixes it under xdist.
    "NAME": f"{TEST_SQLITE}_{XDIST_WORKER}" if XDIST_WORKER else TEST_SQLITE,
    "TEST": {"NAME": TEST_SQLITE},
    "OPTIONS": {"timeout": 20},
}
# Every Cassandra statement issued from a test must target a `test_` keyspace;
# sessions_app.foundation.core.cql.keyspace() refuses anything else when this is set.
CASSANDRA_REQUIRED_KEYSPACE_PREFIX = "test_"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
STATIC_ROOT = None  # type: ignore[assignment]  # static files come from the finders; nothing is collected in tests
ALLOWED_HOSTS = ["testserver", "127.0.0.1", "localhost"]
# Tests send many requests from 127.0.0.1 within a second; the rate-limit tests
# lower these explicitly.
COLLECT_RATE_PER_SITE = 100_000
COLLECT_RATE_PER_IP = 100_000
# The deep health check waits this long for the workers' ping replies (1 s in
# production); a test's worker on this machine answers in milliseconds.
HEALTH_PING_SECONDS = 0.5
