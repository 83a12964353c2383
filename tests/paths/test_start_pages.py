"""Transitions and Heatmaps open on the period's most viewed pages, with their page views
(a brute-force count of the raw page views), each a link to its page's report."""

from __future__ import annotations

import html
import re
from collections import Counter
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.support.clock import recent_fixed
from tests.support.dataset import AGENTS
from tests.support.events import event
from tests.support.paths import send
from tests.support.sealing import seal_everything

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

SHOP = "https://shop.example"
PAGES = ["/", "/pricing", "/docs", "/pricing", "/", "/", "/blog/ünï"]


@pytest.fixture
def viewed(client, site):
    """Visits yesterday (sealed) and just now (live); a bot's views not counted."""
    start = recent_fixed(days_ago=1, at=timedelta(hours=9))
    views: Counter[str] = Counter()
    for n in range(5):
        ts = start + timedelta(hours=n, minutes=n)
        paths = PAGES[n : n + 3]
        send(
            client,
            site,
            [
                event(ts + timedelta(seconds=9 * i), anon=f"v{n}", url=SHOP + p)
                for i, p in enumerate(paths)
            ],
            AGENTS[n % 5],
        )
        views.update(paths)
    send(client, site, [event(start, anon="bot", url=SHOP + "/docs")], AGENTS[5])
    seal_everything(site, timezone.now())
    now = timezone.now() - timedelta(minutes=2)
    send(client, site, [event(now, anon="late", url=SHOP + "/docs")], AGENTS[0])
    views["/docs"] += 1
    return views


@pytest.mark.parametrize("page", ["transitions", "heatmaps"])
def test_a_page_report_without_a_page_lists_the_most_viewed_ones(
    client, analyst, site, viewed, page
):
    response = client.get(f"/sites/{site.id}/{page}/", {"period": "7d"})
    assert response.status_code == 200
    body = response.content.decode()
    table = body.split('id="most-viewed"', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r'href="\?([^"]*)">([^<]*)</a></td><td class="num">(\d+)</td>', table)
    assert {html.unescape(p): int(n) for _, p, n in rows} == dict(viewed)
    assert [int(n) for _, _, n in rows] == sorted((int(n) for _, _, n in rows), reverse=True)
    link = html.unescape(rows[0][0])
    assert "period=7d" in link and "page=" in link
    assert client.get(f"/sites/{site.id}/{page}/?{link}").status_code == 200
