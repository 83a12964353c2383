"""The funnel builder (features/funnels/builder.py, features/funnels/suggest.py): its rows without
JavaScript (add, remove, move), errors in plain words on the row they concern, and suggestions from
the site's recent events for members only."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from sessions_app.domain.goals.kinds import STEP_KINDS
from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.domain.ledger import sites
from sessions_app.features.funnels import builder, defs
from sessions_app.foundation.core.bounds import RangeError
from tests.support.accounts import member
from tests.support.events import event

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

ROWS = {
    "name": "Buy",
    "rows": "3",
    "step-1-kind": "pageview",
    "step-1-value": "/pricing",
    "step-1-match": "exact",
    "step-2-kind": "click",
    "step-2-value": "",
    "step-2-match": "exact",
    "step-3-kind": "event",
    "step-3-value": "purchase",
    "count_by": "user",
    "window_unit": "session",
}


def _error(post: dict) -> tuple[int | None, str]:
    rows = builder.form_rows(post)
    definition, numbers = builder.rows_definition(rows, post)
    with pytest.raises(RangeError) as caught:
        defs.funnel_create(
            site=sites.site_create(name="S", origins=[]), name="x", definition=definition
        )
    return builder.plain_error(caught.value, numbers)


def test_each_kinds_missing_value_reads_in_plain_words_on_its_row(db) -> None:
    assert _error(ROWS) == (
        2,
        "Step 2: enter a CSS selector (or the clicked text, with “click text”)",
    )
    row, text = _error({**ROWS, "step-2-value": "#buy", "step-3-value": ""})
    assert (row, text) == (3, "Step 3: enter an event name, like purchase")
    row, text = _error({**ROWS, "step-1-value": "", "step-2-value": "#buy"})
    assert (row, text) == (1, "Step 1: enter a page path, like /pricing")
    row, text = _error({**ROWS, "step-2-kind": "", "step-2-value": "x"})
    assert row == 2 and text.startswith("Step 2: choose what the step is (page view, click")
    # an empty row in between: the error names the row on the screen, not the step's index
    shifted = {
        **ROWS,
        "rows": "4",
        "step-2-kind": "",
        "step-2-value": "",
        "step-3-kind": "click",
        "step-3-value": "",
        "step-4-kind": "event",
        "step-4-value": "purchase",
    }
    assert _error(shifted)[0] == 3


def test_a_negative_or_missing_window_and_too_few_steps_are_flagged(db) -> None:
    fixed = {**ROWS, "step-2-value": "#buy", "window_unit": "hours", "window_value": "-3"}
    row, text = _error(fixed)
    assert row is None and text.startswith("Conversion window: enter a whole number from 1")
    assert _error({**fixed, "window_value": ""})[1].startswith("Conversion window")
    one = {"name": "x", "rows": "3", "step-1-kind": "pageview", "step-1-value": "/"}
    assert _error(one)[1] == "A funnel needs 2 to 10 steps: fill in at least 2 rows."


def test_rows_are_added_removed_and_moved_without_javascript(client, site) -> None:
    admin = User.objects.create_user("fa", password="pw-12345-abc")
    member(admin, site, "admin")
    client.force_login(admin)
    url = f"/sites/{site.id}/funnels/"
    first = client.get(url).content.decode()
    assert first.count("<legend>Step ") == builder.FIRST_ROWS
    added = client.post(url, {**ROWS, "builder": "add"}).content.decode()
    assert added.count("<legend>Step ") == 4 and 'name="step-4-kind"' in added
    moved = client.post(url, {**ROWS, "builder": "up-3"}).content.decode()
    assert 'name="step-2-value" class="step-value" value="purchase"' in moved
    removed = client.post(url, {**ROWS, "builder": "remove-1"}).content.decode()
    assert removed.count("<legend>Step ") == 2 and 'value="/pricing"' not in removed
    assert not site.funnels.exists()  # a row button never saves
    bad = client.post(url, ROWS)
    html = bad.content.decode()
    assert bad.status_code == 400 and 'class="step-row has-error"' in html
    assert html.index("has-error") > html.index('name="step-1-kind"')  # on row 2
    assert "Step 2: enter a CSS selector" in html and "steps[1]" not in html


def test_suggestions_come_from_recent_events_for_members_only(client, site) -> None:
    at = timezone.now().replace(microsecond=0) - timedelta(minutes=30)
    raws = [
        event(at, url="https://shop.example/pricing?utm_source=x"),
        event(at + timedelta(seconds=1), url="https://shop.example/pricing"),
        event(
            at + timedelta(seconds=2),
            kind="click",
            element={"tag": "button", "selector": "main > button#buy", "text": "Buy"},
        ),
        event(at + timedelta(seconds=3), kind="custom", name="purchase"),
        event(at + timedelta(seconds=4), url="https://shop.example/ünïcode/页"),
    ]
    events_record(source=Source(site=site, received_at=at + timedelta(seconds=9)), raw_events=raws)
    viewer = User.objects.create_user("fv", password="pw-12345-abc")
    member(viewer, site)
    client.force_login(viewer)
    found = client.get(f"/sites/{site.id}/funnels/suggestions").json()["suggestions"]
    assert set(found) == set(STEP_KINDS.names())
    assert found["pageview"][0] == "/pricing" and "/ünïcode/页" in found["pageview"]
    assert found["click"] == ["main > button#buy"] and found["event"] == ["purchase"]
    other = sites.site_create(name="Other", origins=[])
    assert client.get(f"/sites/{other.id}/funnels/suggestions").status_code == 404
    client.logout()
    assert client.get(f"/sites/{site.id}/funnels/suggestions").status_code in (302, 404)
