"""The frame's behaviour in Chromium: destructive forms ask in a dialog first (revoke,
erase), and below 900 px the nav folds behind the menu button."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from sessions_app.domain.accounts import tokens
from sessions_app.domain.ledger import sites
from sessions_app.foundation.models import ApiToken, ErasureRequest
from tests.support.browser import HUMAN_AGENT, screenshot

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True, databases=["default", "cassandra"]),
]


def _login(page, base: str) -> None:
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=username]", "sam")
    page.fill("input[name=password]", "correct-horse-7")
    page.click("main button[type=submit]")
    page.wait_for_load_state("networkidle")


@pytest.fixture
def sam(db):
    return User.objects.create_superuser("sam", password="correct-horse-7")


def test_revoke_asks_first_and_cancel_keeps_the_token(live_server, context, sam):
    made = tokens.token_create(user=sam, name="ci deploys", expires_days=None)
    page = context.new_page()
    _login(page, live_server.url)
    page.goto(f"{live_server.url}/account/tokens/")
    dialog = page.locator("#confirm-dialog")
    page.click("form.revoke button")
    assert dialog.is_visible()
    assert "ci deploys" in page.inner_text("#confirm-dialog .confirm-title")
    screenshot(page, "confirm-revoke")
    page.click("#confirm-dialog .confirm-cancel")
    assert not dialog.is_visible()
    assert ApiToken.objects.get(pk=made.token.pk).revoked_at is None
    page.click("form.revoke button")
    with page.expect_navigation():
        page.click("#confirm-dialog .confirm-go")
    assert ApiToken.objects.get(pk=made.token.pk).revoked_at is not None
    assert "Token revoked" in page.inner_text(".toasts")


def test_erase_asks_then_warns_about_a_key_without_data(live_server, context, sam):
    site = sites.site_create(name="Erase shop", origins=[])
    page = context.new_page()
    _login(page, live_server.url)
    page.goto(f"{live_server.url}/erasure/")
    page.select_option("select[name=site]", str(site.pk))
    page.fill("#erase-key", "ghost")
    page.fill("#erase-key-again", "ghost")
    page.click("#erasure-form button[type=submit]")
    assert page.locator("#confirm-dialog").is_visible()
    with page.expect_navigation():
        page.click("#confirm-dialog .confirm-go")
    assert "No data found for ghost" in page.inner_text("#no-data")
    assert not ErasureRequest.objects.exists()
    page.click("#erasure-form button[type=submit]")  # "Erase anyway", asked again
    with page.expect_navigation():
        page.click("#confirm-dialog .confirm-go")
    assert ErasureRequest.objects.get().key == "ghost"
    assert "/erasure/" in page.url


def test_the_phone_nav_opens_from_the_menu_button(live_server, browser, sam):
    site = sites.site_create(name="Phone shop", origins=[])
    context = browser.new_context(
        user_agent=HUMAN_AGENT, viewport={"width": 390, "height": 844}, has_touch=True
    )
    page = context.new_page()
    _login(page, live_server.url)
    page.goto(f"{live_server.url}/sites/{site.id}/")
    nav, button = page.locator("#main-nav"), page.locator("#menu-button")
    assert button.is_visible() and not nav.is_visible()
    button.click()
    assert nav.is_visible() and button.get_attribute("aria-expanded") == "true"
    assert page.locator("#main-nav a:text-is('Transitions')").bounding_box()["height"] >= 44
    page.click("#main-nav .settings-menu summary")
    assert page.locator("#main-nav a:text-is('Retention')").is_visible()
    screenshot(page, "phone-menu-open")
    page.keyboard.press("Escape")
    assert not page.locator("#main-nav a:text-is('Retention')").is_visible()
    button.click()
    assert not nav.is_visible()
    page.set_viewport_size({"width": 1366, "height": 900})
    assert nav.is_visible() and not button.is_visible()  # wide: no menu button
    page.reload()
    page.keyboard.press("Tab")  # the first tab stop is the skip link
    assert page.evaluate("document.activeElement.className") == "skip-link"
    context.close()
