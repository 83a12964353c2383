"""Replay fixtures: the collector's `live_now` (the real present, ms precision), a site
with replay on, and a visitor's session to record."""

from datetime import datetime

import pytest

from tests.ingest.conftest import event, live_now, minutes, post  # noqa: F401 (a fixture)


@pytest.fixture
def replay_site(site):
    site.replay = True
    site.save()
    return site


@pytest.fixture
def visit(client, replay_site, live_now) -> datetime:  # noqa: F811 (the fixture above)
    """A visitor's session of anon-1 whose tracker events started 5 minutes ago."""
    start = live_now - minutes(5)
    response = post(client, replay_site, [event(start), event(start + minutes(1), kind="click")])
    assert response.status_code == 200, response.content
    return start
