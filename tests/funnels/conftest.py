"""The shop the funnel tests count (tests/support/funnels.py's shop_build), on the test's
own site."""

from __future__ import annotations

import pytest

from tests.support.funnels import shop_build


@pytest.fixture
def shop(client, site, settings):
    settings.FUNNEL_INLINE_DAYS = 100  # no worker here: every day is scanned in the request
    return shop_build(client, site)
