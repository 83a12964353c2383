"""docker-compose.yml stays in step with the settings (it cannot run here: no Docker engine)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
APP_SERVICES = ("web", "applier", "worker", "analysis-worker", "beat")
ENV_READ = re.compile(r'env(?:\.\w+)?\(\s*"([A-Z][A-Z0-9_]*)"')


def _compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def _settings_env_names() -> set[str]:
    names = set()
    for path in (ROOT / "clickstream" / "settings").glob("*.py"):
        names.update(ENV_READ.findall(path.read_text()))
    return names


def test_services_and_healthchecks() -> None:
    services = _compose()["services"]
    assert set(services) == {
        "cassandra",
        "redis",
        "web",
        "applier",
        "worker",
        "analysis-worker",
        "beat",
    }
    assert services["cassandra"]["image"].startswith("cassandra:5.0")
    assert services["redis"]["image"].startswith("redis:7")
    for name, service in services.items():
        assert "test" in service.get("healthcheck", {}), f"{name} has no healthcheck"


def test_app_services_use_only_names_the_settings_read() -> None:
    known = _settings_env_names() | {"DJANGO_SETTINGS_MODULE"}
    services = _compose()["services"]
    for name in APP_SERVICES:
        env = services[name]["environment"]
        unknown = set(env) - known
        assert not unknown, f"{name} sets variables the settings never read: {unknown}"
        for required in (
            "CASSANDRA_HOSTS",
            "CASSANDRA_KEYSPACE",
            "CASSANDRA_LOCAL_DC",
            "REDIS_URL",
            "CELERY_BROKER_URL",
            "DJANGO_SECRET_KEY",
        ):
            assert required in env, f"{name} lacks {required}"
        assert env["DJANGO_SETTINGS_MODULE"] == "clickstream.settings.production"


def test_app_services_wait_for_healthy_dependencies() -> None:
    services = _compose()["services"]
    for name in APP_SERVICES:
        depends = services[name]["depends_on"]
        assert depends["cassandra"]["condition"] == "service_healthy"
        assert depends["redis"]["condition"] == "service_healthy"


def test_settings_parse_the_replication_values_compose_uses() -> None:
    from clickstream.settings.base import cassandra_replication

    env = _compose()["services"]["web"]["environment"]
    assert cassandra_replication(env["CASSANDRA_REPLICATION"]) == {
        "strategy_class": "SimpleStrategy",
        "replication_factor": 1,
    }
    assert cassandra_replication("NetworkTopologyStrategy:dc1=3,dc2=2") == {
        "strategy_class": "NetworkTopologyStrategy",
        "dc1": 3,
        "dc2": 2,
    }


def test_no_default_secret_and_web_on_loopback_unless_told() -> None:
    services = _compose()["services"]
    for name in APP_SERVICES:
        env = services[name]["environment"]
        # Compose refuses to start without a secret key of the operator's.
        assert env["DJANGO_SECRET_KEY"] == "${DJANGO_SECRET_KEY:?set DJANGO_SECRET_KEY}"
        assert env["TRUST_X_FORWARDED_PROTO"] == "${TRUST_X_FORWARDED_PROTO:-false}"
    assert services["web"]["ports"] == ["${WEB_BIND:-127.0.0.1}:8000:8000"]
    for name, service in services.items():
        assert name == "web" or "ports" not in service, f"{name} publishes a port"


def test_the_default_worker_leaves_the_analysis_queue_to_its_own_worker() -> None:
    services = _compose()["services"]
    assert "-Q celery" in services["worker"]["command"]
    assert "-Q analysis" in services["analysis-worker"]["command"]
    assert "analysis@" in str(services["analysis-worker"]["healthcheck"]["test"])


def test_the_image_installs_the_runtime_lock_with_hashes_then_the_project_alone() -> None:
    build = _compose()["x-app"]["build"]["dockerfile_inline"]
    npm, python = build.split("FROM python:")  # the npm stage, then the app's
    assert "RUN npm ci --omit=dev" in npm and "COPY --from=npm" in python
    runs = [line.strip() for line in python.splitlines() if line.strip().startswith("RUN ")]
    assert runs[0] == "RUN pip install --no-cache-dir --require-hashes -r requirements.lock"
    assert runs[1:] == ["RUN pip install --no-cache-dir --no-deps -e ."]
    assert "requirements-dev.lock" not in build  # no test or lint tools in the image
