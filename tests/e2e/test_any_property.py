"""A visitor's 3,000-character value wraps inside the activity table at 390 px: the
content never scrolls sideways (headless Chromium)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.domain.ledger import sites
from sessions_app.foundation.tables import user_sessions
from tests.support.browser import screenshot
from tests.support.events import event

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True, databases=["default", "cassandra"]),
]

UNBROKEN = "Z" * 3000  # no space to break at


# At 390 px the timeline folds its Δ and clock columns away, so "What" keeps its width.
@pytest.mark.parametrize("page_name", ["activity", "timeline"])
def test_a_long_value_wraps_at_390_px(live_server, context, page_name, settings):
    # Written in the request and read at once: not handed to an applier another test of
    # this worker may have announced.
    settings.APPLY_QUEUE = False
    site = sites.site_create(name="Long values", origins=[live_server.url])
    now = timezone.now().replace(microsecond=0)
    sent = event(
        now - timedelta(minutes=1),
        kind="custom",
        name="purchase",
        anon="long",
        props={"items": 2, "note": UNBROKEN},
    )
    events_record(source=Source(site=site, received_at=now), raw_events=[sent])
    [session] = user_sessions.session_list(site_id=site.id, user_key="long")
    User.objects.create_superuser("root", password="pw-root-123")
    page = context.new_page()
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "root")
    page.fill("input[name=password]", "pw-root-123")
    page.click("button[type=submit]")
    page.wait_for_selector("h1")
    path = (
        f"/sites/{site.id}/sessions/{session['session_id']}/"
        if page_name == "timeline"
        else f"/sites/{site.id}/users/long/activity"
    )
    page.goto(live_server.url + path)
    page.wait_for_selector("code", state="attached")
    assert page.locator(f"code:has-text('note={UNBROKEN[:50]}')").count() == 1
    screenshot(page, f"any-property-{page_name}-390")
    # Nothing in the content spills sideways (the site header is another matter).
    assert page.evaluate(
        "(main => main.scrollWidth <= main.clientWidth)(document.querySelector('main'))"
    )
    cell = page.locator(f"td:has(code:has-text('note={UNBROKEN[:50]}'))")
    assert cell.evaluate("cell => cell.scrollWidth <= cell.clientWidth")  # wrapped, not spilt
