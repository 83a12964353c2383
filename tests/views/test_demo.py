"""/demo/: the demo shop. ?site=KEY shows another site only in development (DEBUG);
otherwise the page is always the demo site's."""

from __future__ import annotations

import pytest

from sessions_app.domain.ledger import sites

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo_site(db):
    return sites.site_create(name="Demo Shop", origins=["http://testserver"])


def test_site_parameter_is_ignored_without_debug(client, demo_site, site) -> None:
    html = client.get("/demo/", {"site": site.key}).content.decode()
    assert f'data-site="{demo_site.key}"' in html
    assert site.key not in html


def test_site_parameter_shows_that_site_in_development(client, demo_site, site, settings) -> None:
    settings.DEBUG = True
    html = client.get("/demo/", {"site": site.key}).content.decode()
    assert f'data-site="{site.key}"' in html
    assert demo_site.key not in html
