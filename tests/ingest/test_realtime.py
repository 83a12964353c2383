"""Realtime visitors (domain/ingest/realtime.py): per-minute HyperLogLogs and page sets in Redis,
written in the request's last round trip, read for the dashboard and the API — checked
against a brute-force count of the events sent."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app.domain.ingest import realtime
from tests.support.accounts import auth
from tests.support.events import event, post

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])
BOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"


def test_marks_keep_the_window_and_page_views_only():
    now = timezone.now()
    marks = realtime.marks(
        [
            ("a", "pageview", "https://shop.example/p?x=1#top", now - timedelta(minutes=1)),
            ("a", "click", "https://shop.example/p", now - timedelta(minutes=1)),
            ("b", "pageview", "https://shop.example/old", now - timedelta(minutes=6)),
            ("c", "custom", None, now),
        ],
        now=now,
    )
    assert marks == realtime.Marks(visitors=["a", "c"], pages=["/p"])


def test_the_api_counts_who_is_here_now_like_a_brute_force_count(client, site, token):
    now = timezone.now().replace(microsecond=0)
    sent = []  # (user, type, path, ts, bot)
    for user, paths in (("rt-ann", ["/", "/pricing", "/pricing"]), ("rt-bob", ["/", "/docs"])):
        events = [
            event(now - timedelta(seconds=40 - i), anon=user, url=f"https://shop.example{p}")
            for i, p in enumerate(paths)
        ]
        events.append(
            event(
                now - timedelta(seconds=5),
                anon=user,
                kind="click",
                element={"tag": "button"},
                url="https://shop.example/",
            )
        )
        assert post(client, site, events).json()["accepted"] == len(events)
        sent += [(user, e["type"], e["url"].split("example")[1], now, False) for e in events]
    gone = event(now - timedelta(minutes=9), anon="rt-earlier", url="https://shop.example/old")
    assert post(client, site, [gone]).json()["accepted"] == 1
    crawler = event(now - timedelta(seconds=3), anon="rt-bot", url="https://shop.example/")
    assert post(client, site, [crawler], HTTP_USER_AGENT=BOT).json()["accepted"] == 1
    # A resend is a duplicate: it adds nothing.
    assert post(client, site, [gone, crawler]).json()["duplicates"] == 2

    found = client.get(f"/api/sites/{site.id}/realtime", **auth(token)).json()
    humans = [s for s in sent if not s[4]]
    assert found["visitors"] == len({s[0] for s in humans}) == 2
    expected = Counter(s[2] for s in humans if s[1] == "pageview")
    assert {p["path"]: p["views"] for p in found["pages"]} == dict(expected)


def test_realtime_is_per_site_and_members_only(client, site, token):
    from sessions_app.domain.ledger import sites

    other = sites.site_create(name="Other", origins=["https://shop.example"])
    now = timezone.now()
    assert post(client, site, [event(now, anon="rt-here")]).json()["accepted"] == 1
    assert client.get(f"/api/sites/{site.id}/realtime", **auth(token)).json()["visitors"] == 1
    assert client.get(f"/api/sites/{other.id}/realtime", **auth(token)).status_code == 404


def test_a_minutes_paths_are_capped_keeping_the_most_viewed(client, site, monkeypatch):
    from sessions_app.domain.ingest import coordination
    from sessions_app.foundation.core.redis_client import redis_client

    monkeypatch.setattr(coordination, "REALTIME_MAX_PATHS", 5)
    now = timezone.now().replace(microsecond=0)
    paths = ["/hot", "/hot", "/hot"] + [f"/p{i}" for i in range(8)]
    events = [
        event(now - timedelta(seconds=30 - i), anon="rt-many", url=f"https://shop.example{p}")
        for i, p in enumerate(paths)
    ]
    assert post(client, site, events).json()["accepted"] == len(events)
    # the receipt's minute: now's, or the next one if the request crossed into it
    keys = [realtime.minute_keys(site.id, now + timedelta(minutes=m))[1] for m in (0, 1)]
    [kept] = [k for k in (redis_client().zrevrange(p, 0, -1, withscores=True) for p in keys) if k]
    assert len(kept) == 5 and kept[0] == (b"/hot", 3.0)
