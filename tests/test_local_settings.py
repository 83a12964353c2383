"""The `make run` settings (clickstream/settings/local.py): debug off unless DEBUG=1, a secret
key generated once per checkout in .state (mode 0600), the app's own error pages and static
files with debug off, and `manage.py create_site` on a fresh state folder."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.db import connections

ROOT = Path(__file__).resolve().parent.parent

# A child process with the local settings, serving a few requests in-process.
PROBE = """
import json
import django
django.setup()
from django.conf import settings
from django.test import Client
client = Client(HTTP_HOST="127.0.0.1", raise_request_exception=False)
missing = client.get("/no-such-page")
static = client.get("/static/sessions_app/app.css")
print(json.dumps({
    "key": settings.SECRET_KEY,
    "debug": settings.DEBUG,
    "missing": [missing.status_code, missing.content.decode()],
    "static": [static.status_code, b"".join(static.streaming_content).decode()[:200]],
    "localhost": Client(HTTP_HOST="localhost").get("/no-such-page").status_code,
}))
"""


def _env(state: Path, **extra: str) -> dict[str, str]:
    """The test environment minus DJANGO_* and DEBUG, with the local settings and `state`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_") and k != "DEBUG"}
    env.update(
        DJANGO_SETTINGS_MODULE="clickstream.settings.local",
        CLICKSTREAM_STATE_DIR=str(state),
        DATABASE_URL=f"sqlite:///{state / 'db.sqlite3'}",
        CASSANDRA_KEYSPACE=connections["cassandra"].settings_dict["NAME"],
        **extra,
    )
    return env


def _run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def _probe(state: Path, **extra: str) -> dict[str, Any]:
    done = _run([sys.executable, "-c", PROBE], _env(state, **extra))
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_secret_key_is_generated_once_per_state_folder_and_kept_private(tmp_path) -> None:
    state = tmp_path / "fresh"  # not there yet, as in a fresh clone
    first = _probe(state)
    key_file = state / "secret_key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert first["key"] == key_file.read_text().strip()
    assert len(first["key"]) >= 50 and "insecure" not in first["key"]
    assert _probe(state)["key"] == first["key"]  # a second start reads the same key
    assert _probe(tmp_path / "other")["key"] != first["key"]  # another checkout, another key
    # An explicit DJANGO_SECRET_KEY wins, and nothing is written for it.
    assert _probe(tmp_path / "given", DJANGO_SECRET_KEY="k" * 50)["key"] == "k" * 50
    assert not (tmp_path / "given" / "secret_key").exists()


@pytest.mark.parametrize(
    ("extra", "debug"),
    [
        ({}, False),
        ({"DEBUG": "1"}, True),
        ({"DJANGO_DEBUG": "true"}, True),
        ({"DEBUG": "0"}, False),
    ],
)
def test_debug_is_off_unless_asked_for(tmp_path, extra, debug) -> None:
    assert _probe(tmp_path, **extra)["debug"] is debug


def test_debug_off_serves_the_apps_404_page_and_static_files(tmp_path) -> None:
    seen = _probe(tmp_path)
    status, html = seen["missing"]
    assert status == 404
    assert "<h1>Page not found</h1>" in html and 'class="brand"' in html
    assert "URLconf" not in html and "admin/" not in html and "DEBUG" not in html
    assert seen["static"][0] == 200 and seen["static"][1].strip()  # WhiteNoise, no collectstatic
    assert seen["localhost"] == 404  # ALLOWED_HOSTS: 127.0.0.1 and localhost


def test_create_site_works_on_a_fresh_state_folder(tmp_path) -> None:
    env = _env(tmp_path / "fresh")
    _run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], env)
    done = _run(
        [sys.executable, "manage.py", "create_site", "Shop", "--origin", "https://shop.example"],
        env,
    )
    assert done.stdout.strip().splitlines()[-1].startswith("cs_")
