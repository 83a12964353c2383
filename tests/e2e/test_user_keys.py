"""In a real browser, which rewrites "..", "." and "\\" in paths, a user link still works."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.domain.ledger import sites
from tests.support.accounts import member
from tests.support.events import event

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True, databases=["default", "cassandra"]),
]

KEYS = ["..", ".", "back\\slash", "org/123", "a?b#c", "100%", "Zoë/ünïcode"]


def test_feed_links_open_the_right_profile(live_server, context):
    site = sites.site_create(name="Keys shop", origins=[live_server.url])
    now = timezone.now().replace(microsecond=0)
    for i, key in enumerate(KEYS):
        events_record(
            source=Source(site=site, received_at=now),
            raw_events=[event(now - timedelta(minutes=i + 1), anon=f"anon-{i}", user_id=key)],
        )
    user = User.objects.create_user("ana", password="correct-horse-1")
    member(user, site)
    page = context.new_page()
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "ana")
    page.fill("input[name=password]", "correct-horse-1")
    page.click("button[type=submit]")
    dashboard = f"{live_server.url}/sites/{site.id}/"
    for key in KEYS:
        page.goto(dashboard)
        page.get_by_role("link", name=key, exact=True).click()
        page.wait_for_load_state()
        assert page.locator("h1").inner_text() == key, page.url
        page.get_by_role("link", name="Activity explorer").click()
        page.wait_for_load_state()
        assert page.locator("h1").inner_text() == f"Activity of {key}", page.url
