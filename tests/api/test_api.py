"""JSON API: token and session auth, caps, exports, OpenAPI schema."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.foundation.tables import user_sessions
from tests.support.accounts import auth
from tests.support.events import event

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])


@pytest.fixture
def data(site):
    now = timezone.now().replace(microsecond=0)
    events_record(
        source=Source(site=site, received_at=now),
        raw_events=[
            event(
                now - timedelta(minutes=20 - i),
                anon="api-anon",
                id=f"a{i}",
                **(
                    {"element": {"tag": "button", "text": "Buy, now"}, "type": "click"}
                    if i % 2
                    else {}
                ),
            )
            for i in range(6)
        ],
    )
    [summary] = user_sessions.session_list(site_id=site.id, user_key="api-anon")
    return summary, now


def test_token_auth_reads_sessions_events_and_activity(client, site, data, token):
    summary, now = data
    sessions = client.get(f"/api/sites/{site.id}/users/api-anon/sessions", **auth(token))
    assert sessions.status_code == 200
    assert sessions.json()["sessions"][0]["session_id"] == str(summary["session_id"])
    events = client.get(
        f"/api/sites/{site.id}/sessions/{summary['session_id']}/events", **auth(token)
    ).json()
    assert len(events["events"]) == 6 and events["session"]["event_count"] == 6
    first = client.get(
        f"/api/sites/{site.id}/users/api-anon/activity",
        {"limit": 4, "start": (now - timedelta(hours=1)).isoformat()},
        **auth(token),
    ).json()
    assert len(first["events"]) == 4 and first["next_cursor"]
    assert first["strategy"] in ("in", "parallel") and first["partitions"]
    assert 1 <= first["queries"] <= len(first["partitions"])
    second = client.get(
        f"/api/sites/{site.id}/users/api-anon/activity",
        {
            "limit": 4,
            "start": (now - timedelta(hours=1)).isoformat(),
            "cursor": first["next_cursor"],
        },
        **auth(token),
    ).json()
    assert len(second["events"]) == 2 and second["next_cursor"] is None


def test_missing_or_wrong_credentials_are_json_errors(client, site, data):
    anonymous = client.get(f"/api/sites/{site.id}/users/api-anon/sessions")
    assert anonymous.status_code in (401, 403)
    assert anonymous.json()["field"] == "auth"
    wrong = client.get(f"/api/sites/{site.id}/users/api-anon/sessions", **auth("nope"))
    assert wrong.status_code == 401 and wrong.json()["field"] == "auth"
    stranger = User.objects.create_user("plain", password="pw-plain-1")  # member of no site
    client.force_login(stranger)
    assert client.get(f"/api/sites/{site.id}/users/api-anon/sessions").status_code == 404


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"start": "2026-01-01T00:00:00+00:00", "end": "2026-06-01T00:00:00+00:00"}, "end"),
        ({"limit": "5000"}, "limit"),
        ({"limit": "many"}, "limit"),
        ({"start": "2026-01-01T00:00:00"}, "start"),
        ({"cursor": "not-a-uuid"}, "cursor"),
        ({"strategy": "magic"}, "strategy"),
        # bucket arithmetic overflows near year 1 and 9999: refused before it
        ({"end": "9999-12-31T23:59:59+00:00"}, "end"),
        ({"start": "0001-01-01T00:00:00+01:00"}, "start"),
        ({"start": "1960-01-01T00:00:00+00:00"}, "start"),
    ],
)
def test_bad_parameters_are_400_naming_the_field(client, site, token, params, field):
    response = client.get(f"/api/sites/{site.id}/users/u/activity", params, **auth(token))
    assert response.status_code == 400, response.content
    assert response.json()["field"] == field
    assert response.json()["error"].startswith(f"{field}: ")


def test_unknown_site_and_session_are_404(client, site, token):
    import uuid

    assert (
        client.get(f"/api/sites/{uuid.uuid4()}/users/u/sessions", **auth(token)).status_code == 404
    )
    missing = client.get(f"/api/sites/{site.id}/sessions/{uuid.uuid1()}/events", **auth(token))
    assert missing.status_code == 404 and missing.json()["field"] == "path"


def test_exports_as_csv_and_json(client, site, data, token):
    summary, _ = data
    url = f"/api/sites/{site.id}/sessions/{summary['session_id']}/export"
    response = client.get(url, {"format": "csv"}, **auth(token))
    assert response["Content-Type"] == "text/csv"
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert len(rows) == 6 and rows[1]["type"] == "click"
    assert json.loads(rows[1]["element"]) == {"tag": "button", "text": "Buy, now"}
    as_json = client.get(url, {"format": "json"}, **auth(token)).json()
    assert [e["type"] for e in as_json] == [r["type"] for r in rows]
    activity = client.get(
        f"/api/sites/{site.id}/users/api-anon/activity/export", {"format": "json"}, **auth(token)
    ).json()
    assert len(activity) == 6
    assert client.get(url, {"format": "xml"}, **auth(token)).status_code == 400


def test_openapi_schema_describes_the_endpoints(client, token):
    response = client.get(
        "/api/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json", **auth(token)
    )
    assert response.status_code == 200
    schema = json.loads(response.content)
    assert schema["openapi"].startswith("3.")
    paths = schema["paths"]
    activity = paths["/api/sites/{site_id}/users/{user_key}/activity"]["get"]
    assert {p["name"] for p in activity["parameters"]} >= {
        "start",
        "end",
        "cursor",
        "limit",
        "strategy",
        "site_id",
        "user_key",
    }
    assert "/api/sites/{site_id}/sessions/{session_id}/export" in paths
    docs = client.get("/api/docs", **auth(token))
    assert docs.status_code == 200
    assert "<script>" not in docs.content.decode().replace(" ", "")  # no inline script (CSP)


def test_ids_that_are_not_timeuuids_get_404_or_400_not_500(client, site, token):
    """Found by Schemathesis: Cassandra refuses a random UUID where a TimeUUID goes."""
    import uuid

    random_id = uuid.uuid4()
    events = client.get(f"/api/sites/{site.id}/sessions/{random_id}/events", **auth(token))
    assert events.status_code == 404
    sessions = client.get(
        f"/api/sites/{site.id}/users/someone/sessions", {"cursor": str(random_id)}, **auth(token)
    )
    assert sessions.status_code == 400 and sessions.json()["field"] == "cursor"
    activity = client.get(
        f"/api/sites/{site.id}/users/someone/activity", {"cursor": str(random_id)}, **auth(token)
    )
    assert activity.status_code == 400 and activity.json()["field"] == "cursor"


def test_export_file_names_are_safe_whatever_the_user_key(client, site, token):
    """Found by Schemathesis: a control character in the key broke the header."""
    response = client.get(
        f"/api/sites/{site.id}/users/%1E%C4%80evil%0A/activity/export",
        {"format": "csv"},
        **auth(token),
    )
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="activity-_evil.csv"'
