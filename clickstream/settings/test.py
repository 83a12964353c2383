"""Test settings: real Cassandra and Redis, a `test_` keyspace, fast hashing."""

from .base import *

SECRET_KEY = "test-only-key"  # noqa: S105
DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# A file, not :memory:, so the real Celery worker the tests start reads the same SQL
# rows (sites, bucket states) as the test process; the test runner recreates it.
STATE_DIR.mkdir(parents=True, exist_ok=True)  # a clean clone has none until a service starts
TEST_SQLITE = STATE_DIR / "test-default.sqlite3"
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
