"""Test settings: real Cassandra and Redis, a `test_` keyspace, fast hashing."""

from .base import *

SECRET_KEY = "test-only-key"  # noqa: S105
DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
DATABASES["default"] = {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}
# Every Cassandra statement issued from a test must target a `test_` keyspace;
# sessions_app.cassandra.keyspace() refuses anything else when this is set.
CASSANDRA_REQUIRED_KEYSPACE_PREFIX = "test_"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
