"""Pages load cleanly in Chromium: no console errors (CSP included), no failed requests."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from sessions_app.domain.ledger import sites
from tests.support.accounts import member

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True, databases=["default", "cassandra"]),
]


def _watch(page) -> list[str]:
    """Collect console errors, uncaught exceptions and 4xx/5xx responses of a page."""
    problems: list[str] = []
    page.on(
        "console",
        lambda m: (
            problems.append(f"console {m.type} at {m.location.get('url')}: {m.text}")
            if m.type == "error"
            else None
        ),
    )
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on(
        "response",
        lambda r: problems.append(f"HTTP {r.status} {r.url}") if r.status >= 400 else None,
    )
    page.on("requestfailed", lambda r: problems.append(f"failed {r.url}: {r.failure}"))
    return problems


def test_pages_and_api_docs_load_without_console_errors_or_404s(live_server, context):
    site = sites.site_create(name="Console shop", origins=[live_server.url])
    user = User.objects.create_user("cleo", password="correct-horse-1")
    member(user, site, "admin")  # the site's settings page is for its admins
    page = context.new_page()
    problems = _watch(page)

    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "cleo")
    page.fill("input[name=password]", "correct-horse-1")
    page.click("button[type=submit]")
    page.wait_for_load_state("networkidle")
    for path in ("/", f"/sites/{site.id}/", f"/sites/{site.id}/site", "/account/tokens/"):
        page.goto(f"{live_server.url}{path}")
        page.wait_for_load_state("networkidle")

    page.goto(f"{live_server.url}/api/docs")
    page.wait_for_selector(".opblock-summary-path", timeout=15000)
    page.wait_for_load_state("networkidle")
    # Swagger UI's own rules (box-sizing, background) come from a stylesheet, not <style>.
    assert page.evaluate("getComputedStyle(document.body).margin") == "0px"

    icon = page.goto(f"{live_server.url}/favicon.ico")
    assert icon.ok and icon.headers["content-type"].startswith("image/svg+xml")

    assert problems == []
