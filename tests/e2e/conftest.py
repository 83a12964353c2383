"""Headless Chromium (Debian's /usr/bin/chromium) driven by Playwright."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser import HUMAN_AGENT

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop on this thread; the ORM calls the
    # tests make between browser steps are still plain synchronous code.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: make test installs it (apt-get install chromium)")
    with sync_playwright() as playwright:
        # The browser-wide flag also covers sendBeacon/keepalive requests, which
        # leave without the per-context override; headless Chromium would
        # otherwise (rightly) be flagged as a bot.
        instance = playwright.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[*CHROMIUM_ARGS, f"--user-agent={HUMAN_AGENT}"],
        )
        yield instance
        instance.close()


@pytest.fixture
def context(browser) -> Iterator[Any]:
    context = browser.new_context(user_agent=HUMAN_AGENT, viewport={"width": 1280, "height": 800})
    yield context
    context.close()


@pytest.fixture
def demo_any_site(settings) -> None:
    """Let /demo/?site=KEY show a test's own site: it does so in development (DEBUG) only."""
    settings.DEBUG = True
