"""The sites list: each site with its unique visitors over the chosen period (the
dashboard's own figure), the change against the period before and a trend; the period
is kept on every site link, and back to the list."""

from __future__ import annotations

import html
import re
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.support.accounts import member
from tests.support.dataset import AGENTS
from tests.support.events import event
from tests.support.paths import send
from tests.support.shared import shop_site

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])


def _visitors(client, site, count: int) -> None:
    at = timezone.now() - timedelta(hours=3)
    for n in range(count):
        send(client, site, [event(at + timedelta(minutes=n), anon=f"p{n}")], AGENTS[n % 5])


def test_each_site_shows_its_visitors_trend_and_keeps_the_period(client, analyst, site):
    other = shop_site()
    member(analyst, other)
    _visitors(client, site, 3)
    _visitors(client, other, 5)
    body = client.get("/", {"period": "30d"}).content.decode()
    for one, count in ((site, 3), (other, 5)):
        row = body.split(f'data-site="{one.id}"', 1)[1].split("</tr>", 1)[0]
        api = client.get(f"/api/sites/{one.id}/report", {"period": "30d"}).json()
        assert api["kpis"]["visitors"] == count
        assert f'<td class="num visitors">{count}</td>' in row
        assert "no earlier data" in row  # nothing in the 30 days before
        assert len(re.findall(r"<rect ", row)) == 30  # a bar a day
        link = html.unescape(re.search(r'class="row-link" href="([^"]*)"', row).group(1))
        assert link == f"/sites/{one.id}/?period=30d"
    dashboard = client.get(f"/sites/{site.id}/", {"period": "30d"}).content.decode()
    assert 'href="/?period=30d"' in dashboard  # back to the list, the period kept


def test_a_bad_period_on_the_list_says_so_and_shows_the_default(client, analyst, site):
    response = client.get("/", {"period": "fortnight"})
    assert response.status_code == 200
    body = response.content.decode()
    assert 'role="alert"' in body and "period" in body and "showing last 7 days instead" in body
    assert f'data-site="{site.id}"' in body
