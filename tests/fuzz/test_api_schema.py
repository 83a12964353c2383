"""Schemathesis against the OpenAPI schema: every API operation, fuzzed, never answers 5xx.

The schema is the one drf-spectacular serves at /api/schema; requests go straight to
the WSGI app with an analyst's token, against a site with real data in Cassandra.
"""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any

import pytest
import schemathesis
import yaml
from django.core.handlers.wsgi import WSGIHandler
from django.test import Client
from django.utils import timezone
from hypothesis import HealthCheck, given, settings

from sessions_app.domain.ingest.pipeline import Source, events_record
from tests.support.events import event
from tests.support.hypothesis import examples

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])
EXAMPLES = int(os.environ.get("FUZZ_API_EXAMPLES", "20"))


@pytest.fixture
def api_schema(token):
    response = Client().get("/api/schema", HTTP_AUTHORIZATION=f"Token {token}")
    assert response.status_code == 200, response.content
    schema = schemathesis.openapi.from_dict(yaml.safe_load(response.content))
    schema.app = WSGIHandler()
    return schema


@pytest.fixture
def visited(site):
    now = timezone.now().replace(microsecond=0)
    events_record(
        source=Source(site=site, received_at=now),
        raw_events=[event(now - timedelta(minutes=5 - i), anon="fz-user") for i in range(5)],
    )
    return site


@pytest.fixture
def unmetered(settings):
    """The token's hourly budget out of the way: the fuzz makes thousands of requests."""
    settings.API_TOKEN_RATE = 1_000_000


@pytest.mark.usefixtures("unmetered")
def test_no_operation_answers_5xx(api_schema, token, visited):
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 8  # every endpoint of the schema, not a subset
    for operation in operations:

        @settings(
            max_examples=examples(EXAMPLES),
            deadline=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        )
        @given(case=operation.as_strategy())
        def run(case: Any) -> None:
            if "site_id" in (case.path_parameters or {}):
                case.path_parameters["site_id"] = str(visited.id)  # reach the real code paths
            case.cookies = {}  # the token authenticates; generated cookies are noise
            response = case.call(headers={"Authorization": f"Token {token}"})
            label = (case.method, case.formatted_path, response.text[:500])
            assert response.status_code < 500, label
            if response.status_code >= 400 and "json" in response.headers.get("Content-Type", ""):
                assert response.json().get("error"), label

        run()
