"""Deployment defaults: every entry point uses the production settings when
DJANGO_SETTINGS_MODULE is unset (never the debug ones), and those pass
`manage.py check --deploy` with a real secret key and host names."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connections

ROOT = Path(__file__).resolve().parent.parent
SECRET = secrets.token_urlsafe(50)

# A child process with the production settings, serving a few requests in-process.
PROBE = """
import json
import django
django.setup()
from django.conf import settings
from django.test import Client
client = Client()
print(json.dumps({
    "proxy_header": settings.SECURE_PROXY_SSL_HEADER,
    "plain": client.get("/healthz/deep").status_code,
    "location": client.get("/healthz/deep").get("Location"),
    "forwarded": client.get("/healthz/deep", HTTP_X_FORWARDED_PROTO="https").status_code,
    "secure": client.get("/healthz/deep", secure=True).status_code,
    "hsts": client.get("/healthz/deep", secure=True).get("Strict-Transport-Security"),
    "liveness": client.get("/healthz").status_code,
}))
"""


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The test environment minus every DJANGO_* variable, state in tmp_path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    env.update(
        CLICKSTREAM_STATE_DIR=str(tmp_path),
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        # Never a real keyspace, though nothing here writes to Cassandra.
        CASSANDRA_KEYSPACE=connections["cassandra"].settings_dict["NAME"],
        **extra,
    )
    return env


def _run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_manage_py_defaults_to_production_and_asks_for_a_secret_key(tmp_path) -> None:
    done = _run([sys.executable, "manage.py", "check"], _env(tmp_path))
    assert done.returncode != 0
    assert "DJANGO_SECRET_KEY is not set" in done.stderr
    assert "DJANGO_SETTINGS_MODULE=clickstream.settings.local" in done.stderr


@pytest.mark.parametrize("module", ["clickstream.wsgi", "clickstream.asgi", "clickstream.celery"])
def test_each_entry_point_defaults_to_production(tmp_path, module) -> None:
    code = (
        f"import {module}; from django.conf import settings; "
        "print(settings.SETTINGS_MODULE, settings.DEBUG)"
    )
    done = _run([sys.executable, "-c", code], _env(tmp_path, DJANGO_SECRET_KEY=SECRET))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["clickstream.settings.production", "False"]
    unset = _run([sys.executable, "-c", code], _env(tmp_path))
    assert unset.returncode != 0 and "DJANGO_SECRET_KEY is not set" in unset.stderr


def test_check_deploy_reports_nothing(tmp_path) -> None:
    env = _env(tmp_path, DJANGO_SECRET_KEY=SECRET, DJANGO_ALLOWED_HOSTS="analytics.example.com")
    done = _run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "DEBUG"], env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "System check identified no issues (0 silenced)." in done.stdout


@pytest.mark.parametrize("trusted", [False, True])
def test_https_redirect_hsts_and_x_forwarded_proto_only_when_trusted(tmp_path, trusted) -> None:
    env = _env(
        tmp_path,
        DJANGO_SECRET_KEY=SECRET,
        DJANGO_ALLOWED_HOSTS="testserver",
        DJANGO_SETTINGS_MODULE="clickstream.settings.production",
        **({"TRUST_X_FORWARDED_PROTO": "true"} if trusted else {}),
    )
    done = _run([sys.executable, "-c", PROBE], env)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["plain"] == 301 and seen["location"] == "https://testserver/healthz/deep"
    assert seen["secure"] == 404  # served over HTTPS: the deep check, there for admins only
    assert seen["hsts"] == "max-age=31536000; includeSubDomains; preload"
    assert seen["liveness"] in (200, 503)  # load balancers probe over plain HTTP: no redirect
    if trusted:
        assert seen["proxy_header"] == ["HTTP_X_FORWARDED_PROTO", "https"]
        assert seen["forwarded"] == 404
    else:
        assert seen["proxy_header"] is None
        assert seen["forwarded"] == 301  # a client's own header does not pass for HTTPS
