"""Headless Chromium (Debian's /usr/bin/chromium) driven by Playwright."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"
HUMAN_AGENT = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/156.0 Safari/537.36"
)
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


def wait_for(check: Callable[[], Any], *, timeout: float = 20.0, every: float = 0.25) -> Any:
    """Poll check() until it returns something truthy; fail with its last value."""
    deadline = time.monotonic() + timeout
    value = check()
    while not value and time.monotonic() < deadline:
        time.sleep(every)
        value = check()
    assert value, f"condition not met within {timeout}s (last value: {value!r})"
    return value


def screenshot(page: Any, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
