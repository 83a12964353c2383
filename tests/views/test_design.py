"""One way to write things, and the frame's navigation."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import User

from sessions_app.domain.ledger import sites
from sessions_app.templatetags.clickstream import duration, local, number
from tests.support.accounts import member

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (None, ""),
        (timedelta(seconds=0.4), "0.4s"),
        (4.25, "4.2s"),
        (42, "42s"),
        (59.6, "1m 00s"),
        (471, "7m 51s"),
        (timedelta(minutes=62, seconds=5), "1h 02m"),
        (1560, "26m 00s"),
        (timedelta(days=2, hours=3, minutes=4), "2d 03h"),
    ],
)
def test_durations_are_written_one_way(value, shown):
    assert duration(value) == shown


@pytest.mark.parametrize(
    ("value", "shown"),
    [(0, "0"), (1234567, "1,234,567"), (12.0, "12"), (1234.5, "1,234.5"), ("7.1%", "7.1%")],
)
def test_numbers_get_thousands_separators(value, shown):
    assert number(value) == shown


def test_times_are_in_the_sites_zone_and_utc_says_so():
    at = datetime(2026, 11, 27, 23, 30, 12, 345678, tzinfo=UTC)
    berlin = sites.site_create(name="Berlin", origins=[])
    berlin.time_zone = "Europe/Berlin"
    assert local(at, berlin) == "2026-11-28 00:30"  # no microseconds, the local day
    assert local(at) == "2026-11-27 23:30 UTC"
    assert local(None, berlin) == ""


def _nav(body: str) -> str:
    return body[body.index('<nav class="main-nav"') : body.index("</nav>")]


def test_the_nav_marks_the_page_and_lists_the_analyst_pages(client, analyst, site):
    body = client.get(f"/sites/{site.id}/sessions/").content.decode()
    nav = _nav(body)
    current = re.findall(r'<a href="[^"]+" aria-current="page">([^<]+)</a>', nav)
    assert current == ["Sessions"]
    for name in ("Dashboard", "Sessions", "Users", "Funnels", "Paths", "Transitions", "Heatmaps"):
        assert f">{name}</a>" in nav, name
    assert '<a class="skip-link" href="#main">' in body and '<main id="main"' in body
    assert 'id="menu-button" aria-expanded="false" aria-controls="main-nav"' in body
    assert '<details class="menu settings-menu">' in nav
    assert "Site &amp; snippet" not in nav  # an analyst, not the site's admin


def test_the_switcher_lists_the_persons_other_sites_on_the_same_page(client, analyst, site):
    mine = sites.site_create(name="Second shop", origins=[])
    member(analyst, mine)
    sites.site_create(name="Not hers", origins=[])
    body = client.get(f"/sites/{site.id}/funnels/").content.decode()
    switcher = body[body.index('class="menu site-switcher"') : body.index("</details>")]
    assert f'href="/sites/{mine.id}/funnels/">Second shop</a>' in switcher
    assert "Not hers" not in switcher and f'href="/sites/{site.id}/funnels/"' not in switcher


def test_settings_pages_keep_the_last_sites_nav(client, analyst, site):
    assert f"/sites/{site.id}/" not in _nav(client.get("/account/tokens/").content.decode())
    client.get(f"/sites/{site.id}/paths/")
    nav = _nav(client.get("/account/tokens/").content.decode())
    assert f'href="/sites/{site.id}/"' in nav and 'aria-current="page">API tokens' in nav
    site.memberships.all().delete()  # access gone: the nav forgets the site
    assert f"/sites/{site.id}/" not in _nav(client.get("/account/tokens/").content.decode())


def test_admin_pages_keep_the_site_context(client, site):
    root = User.objects.create_superuser("root", password="pw-root-123")
    client.force_login(root)
    client.get(f"/sites/{site.id}/")
    body = client.get("/admin/").content.decode()
    assert f'href="/sites/{site.id}/">Dashboard</a>' in body and "<strong>Shop</strong>" in body


def test_the_explorer_links_users_and_counts_its_rows(client, analyst, site):
    from django.utils import timezone

    from sessions_app.domain.ingest.pipeline import Source, events_record
    from tests.support.events import event

    at = timezone.now() - timedelta(hours=2)
    events_record(
        source=Source(site=site, received_at=at),
        raw_events=[
            event(
                at,
                anon="a-1",
                user_id="ada@example.com",
                url="https://shop.example/?utm_source=x&id=1",
            )
        ],
    )
    body = client.get(f"/sites/{site.id}/sessions/").content.decode()
    assert f'href="/sites/{site.id}/users/ada@example.com/">ada@example.com</a>' in body
    assert '<p class="result-count" id="result-count"><strong>1</strong> session shown' in body
    assert '<span class="truncate entry" title="Entry: /">/</span>' in body  # as a path


def test_the_styleguide_is_for_development_only(client, settings):
    assert client.get("/styleguide/").status_code == 404
    settings.DEBUG = True
    body = client.get("/styleguide/").content.decode()
    for part in ("kpi", "table-frame", "chip", "empty-state", "data-confirm", "toast", "advanced"):
        assert part in body, part
