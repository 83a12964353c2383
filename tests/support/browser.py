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


def wait_for(
    check: Callable[[], Any],
    *,
    timeout: float = 20.0,
    every: float = 0.25,
    pause: Callable[[float], Any] = time.sleep,
) -> Any:
    """Poll check() until it returns something truthy; fail with its last value. Polling a
    page's events, `pause` is the page's own wait: the sync API delivers them (requests,
    console messages) only while it runs."""
    deadline = time.monotonic() + timeout
    value = check()
    while not value and time.monotonic() < deadline:
        pause(every)
        value = check()
    assert value, f"condition not met within {timeout}s (last value: {value!r})"
    return value


# The replay recorder's chunk interval on the demo shop in the tests (`?chunk=`, the
# snippet's data-replay-interval; 5 s by default): the tests wait for one chunk, or (to
# see that nothing is sent) for two intervals.
CHUNK_MS = 1000


class Chunks:
    """The session replay chunks a page posts: how many were sent and answered, and the
    last answer's status (a 409, the session not placed yet, is sent again later)."""

    def __init__(self, page: Any) -> None:
        self.page, self.sent, self.answered, self.last_status = page, 0, 0, 0
        page.on("request", self._sent)
        page.on("response", self._answer)

    def _sent(self, request: Any) -> None:
        self.sent += "/replay?" in request.url

    def _answer(self, response: Any) -> None:
        if "/replay?" in response.url:
            self.answered, self.last_status = self.answered + 1, response.status

    def all_stored(self, timeout: float = 15.0) -> None:
        """Let one of the recorder's intervals pass (and a half, to compress and send),
        then wait until every chunk sent is answered, the last one stored: what the page
        did so far went out in an interval's chunk, not in the last one, sent as the page
        is left (which is lost when it is too big for keepalive)."""
        self.page.wait_for_timeout(CHUNK_MS * 1.5)

        def settled() -> bool:
            return self.sent > 0 and self.answered >= self.sent and self.last_status == 200

        wait_for(settled, timeout=timeout, every=0.05, pause=self._pause)

    def _pause(self, seconds: float) -> None:
        self.page.wait_for_timeout(seconds * 1000)


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
