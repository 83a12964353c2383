"""The site page in headless Chromium: the snippet's Copy button puts the snippet on the
clipboard, and the allowed origins are shown once (in the settings form)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import expect

from sessions_app.domain.ledger import sites
from tests.support.accounts import member
from tests.support.browser import screenshot

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True, databases=["default", "cassandra"]),
]


def test_copy_the_snippet_and_see_each_origin_once(live_server, browser):
    site = sites.site_create(name="Copy shop", origins=["https://copy.example"])
    member(User.objects.create_user("cara", password="correct-horse-3"), site, "admin")
    context = browser.new_context(viewport={"width": 390, "height": 844})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page = context.new_page()
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "cara")
    page.fill("input[name=password]", "correct-horse-3")
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/sites/{site.id}/site")

    assert page.content().count("https://copy.example") == 1  # the form's field alone
    page.get_by_role("button", name="Copy").click()
    # The label changes once the clipboard's promise settles: waited for, not read at once.
    expect(page.get_by_role("button", name="Copied")).to_be_visible()
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied == page.locator("#tracker-snippet").text_content()
    assert f'data-site="{site.key}"' in copied and copied.startswith("<script async src=")
    screenshot(page, "site-snippet-390")
    context.close()
