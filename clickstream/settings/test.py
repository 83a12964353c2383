"""Test settings: real Cassandra and Redis, a `test_` keyspace, fast hashing."""

import os
from urllib.parse import urlsplit

from .base import *

# pytest-xdist runs a worker per core (PYTEST_XDIST_WORKER=gw0, gw1, ...): each worker has a
# keyspace, a Redis database and a SQLite file of its own. The processes a test starts
# inherit the variable and are handed the suffixed names, so adding a suffix is idempotent.
XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if XDIST_WORKER:
    _suffix = f"_{XDIST_WORKER}"
    if not CASSANDRA_KEYSPACE.endswith(_suffix):
        CASSANDRA_KEYSPACE += _suffix
    DATABASES["cassandra"]["NAME"] = CASSANDRA_KEYSPACE
    DATABASES["cassandra"]["TEST"] = {"NAME": f"test_{CASSANDRA_KEYSPACE}"}
    _database = f"/{1 + int(XDIST_WORKER.removeprefix('gw'))}"
    REDIS_URL = urlsplit(REDIS_URL)._replace(path=_database).geturl()
    CELERY_BROKER_URL = urlsplit(CELERY_BROKER_URL)._replace(path=_database).geturl()
    CELERY_RESULT_BACKEND = urlsplit(CELERY_RESULT_BACKEND)._replace(path=_database).geturl()

SECRET_KEY = "test-only-key"  # noqa: S105
DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# A file, not :memory:, so the real Celery worker the tests start reads the same SQL
# rows (sites, bucket states) as the test process; the test runner recreates it.
STATE_DIR.mkdir(parents=True, exist_ok=True)  # a clean clone has none until a service starts
TEST_SQLITE = STATE_DIR / f"test-default{'-' + XDIST_WORKER if XDIST_WORKER else ''}.sqlite3"
DATABASES["default"] = {
    "ENGINE": "django.db.backends.sqlite3",
    "NAME": TEST_SQLITE,
    "TEST": {"NAME": TEST_SQLITE},
    "OPTIONS": {"timeout": 20},
}
# Every Cassandra statement issued from a test must target a `test_` keyspace;
# sessions_app.core.cql.keyspace() refuses anything else when this is set.
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
