"""Exports: cells a spreadsheet would run as formulas are neutralised; an export cut at
its cap says so (a last CSV line, a JSON header), never silently."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.features.web import exports
from sessions_app.foundation.core import bounds
from sessions_app.foundation.tables import user_sessions
from tests.support.accounts import auth
from tests.support.events import event

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])


def record(site, events) -> None:
    outcome = events_record(source=Source(site=site, received_at=timezone.now()), raw_events=events)
    assert outcome.accepted == len(events), outcome.rejected


def csv_rows(response) -> list[list[str]]:
    assert response.status_code == 200
    return list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))


def test_csv_cells_that_start_a_formula_are_neutralised(client, site, token):
    at = timezone.now() - timedelta(minutes=5)
    dangerous = ['=HYPERLINK("http://x","y")', "+1+1", "-2+3", "@SUM(A1)", "\tx"]
    record(
        site,
        [
            event(at + timedelta(seconds=i), kind="custom", anon="formula", name=n, title=n)
            for i, n in enumerate(dangerous)
        ]
        + [event(at + timedelta(seconds=9), kind="custom", anon="formula", name="safe=1")],
    )
    response = client.get(
        f"/api/sites/{site.id}/users/formula/activity/export", {"format": "csv"}, **auth(token)
    )
    header, *rows = csv_rows(response)
    names = [r[header.index("name")] for r in rows]
    assert names == [f"'{n}" for n in dangerous] + ["safe=1"]
    [summary] = user_sessions.session_list(site_id=site.id, user_key="formula")
    session = client.get(
        f"/api/sites/{site.id}/sessions/{summary['session_id']}/export",
        {"format": "csv"},
        **auth(token),
    )
    header, *rows = csv_rows(session)
    assert [r[header.index("title")] for r in rows][:5] == [f"'{n}" for n in dangerous]
    # JSON keeps the values as they are: it is not run by spreadsheets.
    exported = json.loads(
        client.get(
            f"/api/sites/{site.id}/users/formula/activity/export",
            {"format": "json"},
            **auth(token),
        ).content
    )
    assert [e["name"] for e in exported][:5] == dangerous


def test_a_cell_value_is_neutralised_only_when_it_starts_a_formula():
    assert exports.csv_cell("\rx") == "'\rx" and exports.csv_cell("=1") == "'=1"
    assert exports.csv_cell("a=1") == "a=1" and exports.csv_cell(-5) == -5
    assert exports.csv_cell(None) == "" and exports.csv_cell({"=": 1}, as_json=True) == '{"=": 1}'


def test_an_export_cut_at_its_cap_says_so(client, site, token, monkeypatch):
    at = timezone.now() - timedelta(minutes=30)
    record(site, [event(at + timedelta(seconds=i), anon="many") for i in range(8)])
    url = f"/api/sites/{site.id}/users/many/activity/export"

    monkeypatch.setattr(exports, "EXPORT_MAX_EVENTS", 5)
    _, *rows = csv_rows(client.get(url, {"format": "csv"}, **auth(token)))
    assert len(rows) == 6 and rows[-1] == ["# cut: at most 5 events; narrow start and end"]
    response = client.get(url, {"format": "json"}, **auth(token))
    assert len(json.loads(response.content)) == 5
    assert response[exports.CUT_HEADER] == "at most 5 events; narrow start and end"

    monkeypatch.setattr(exports, "EXPORT_MAX_EVENTS", 8)  # exactly all: not cut
    _, *rows = csv_rows(client.get(url, {"format": "csv"}, **auth(token)))
    assert len(rows) == 8 and not rows[-1][0].startswith("# cut")
    assert exports.CUT_HEADER not in client.get(url, {"format": "json"}, **auth(token))

    # A session export holds at most a page of events.
    [summary] = user_sessions.session_list(site_id=site.id, user_key="many")
    session_url = f"/api/sites/{site.id}/sessions/{summary['session_id']}/export"
    monkeypatch.setattr(bounds, "MAX_PAGE", 3)
    _, *rows = csv_rows(client.get(session_url, {"format": "csv"}, **auth(token)))
    assert len(rows) == 4 and rows[-1] == ["# cut: the first 3 of 8 events"]
    response = client.get(session_url, {"format": "json"}, **auth(token))
    assert len(json.loads(response.content)) == 3
    assert response[exports.CUT_HEADER] == "the first 3 of 8 events"
