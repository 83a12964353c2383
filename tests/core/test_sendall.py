"""core/sendall: a plan's statements sent at once, waited for on one latch."""

from __future__ import annotations

import pytest

from sessions_app.foundation.core.sendall import wait_all


@pytest.mark.timeout(30)
def test_nothing_to_send_returns_at_once_not_after_the_request_timeout(settings):
    # A plan whose every key was erased has no statements. The latch is counted down
    # by responses; with none it was waited on until the request timeout ran out
    # (here two hours, so the test's own timeout fails it).
    settings.CASSANDRA_REQUEST_TIMEOUT = 3600
    wait_all([])
