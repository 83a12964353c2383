"""What the Chromium walks share: the human user agent, screenshots, polling a condition."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.repo import ROOT

ARTIFACTS = ROOT / "artifacts"
HUMAN_AGENT = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/156.0 Safari/537.36"
)


def wait_for(check: Callable[[], Any], *, timeout: float = 20.0, every: float = 0.25) -> Any:
    """Poll check() until it returns something truthy; fail with its last value."""
    deadline = time.monotonic() + timeout
    value = check()
    while not value and time.monotonic() < deadline:
        time.sleep(every)
        value = check()
    assert value, f"condition not met within {timeout}s (last value: {value!r})"
    return value


def screenshot(page: Any, name: str) -> Path | None:
    """Save a full-page screenshot to artifacts/ for people to look at, when SCREENSHOTS=1
    (`make screenshots`). No test reads them, and the walks' 200 of them cost a run of
    `make test` about 20 % of the walks' time."""
    if os.environ.get("SCREENSHOTS") != "1":
        return None
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
