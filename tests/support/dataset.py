"""A varied set of sessions sent through /collect, and what the raw data says of each.

Each session is one visitor (its own anonymous id) and one request: a landing page with
or without UTM tags and a referrer, a few more pages, maybe a custom event or the
conversion, from a user agent and address picked from tables of real ones. The brute
force the tests compare with reads the sessions' stored summaries (user_sessions) and
the events sent, never the table under test.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

from sessions_app.foundation.core.pagepaths import page_path
from sessions_app.foundation.tables import user_sessions
from tests.support.conversion import PURCHASE, purchase_goal
from tests.support.events import event, post

SHOP = "https://shop.example"
AGENTS = [
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/131.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like "
    "Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (iPad; CPU OS 16_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/16.6 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/131.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
]
ADDRESSES = ["8.8.8.8", "81.2.69.142", "2a02:8108::1", "10.0.0.1"]
LANDINGS = [
    ("/", None),
    ("/?utm_source=newsletter&utm_medium=email&utm_campaign=spring", None),
    ("/pricing?utm_source=google&utm_medium=cpc&utm_campaign=brand&gclid=x1", None),
    ("/blog/cassandra", "https://www.google.com/"),
    ("/", "https://twitter.com/someone/status/1"),
    ("/pricing", "https://news.ycombinator.com/item?id=1"),
]
PAGES = ["/", "/pricing", "/cart", "/blog/cassandra", "/docs", "/checkout"]
EVENTS = ["signup", "video_play", PURCHASE]


def sessions_send(client: Any, site: Any, *, now: datetime, count: int, days: int, seed: int):
    """Send `count` sessions spread over the `days` before now; return what each had, by
    user key (the user id of an identified one, else its anonymous id). The site's
    conversions are its "Purchase" goal."""
    purchase_goal(site)
    rng = random.Random(seed)
    sent: dict[str, dict[str, Any]] = {}
    span = int(timedelta(days=days).total_seconds()) - 3600
    for i in range(count):
        anon = f"x{seed}-{i}"
        start = now - timedelta(seconds=rng.randrange(600, span))
        landing, referrer = rng.choice(LANDINGS)
        paths = [landing] + [rng.choice(PAGES) for _ in range(rng.randrange(0, 5))]
        events = []
        for n, path in enumerate(paths):
            extra = {"referrer": referrer} if n == 0 and referrer else {}
            if i % 7 == 0:
                extra["user_id"] = f"user-{i}"
            events.append(
                event(start + timedelta(seconds=40 * n), anon=anon, url=SHOP + path, **extra)
            )
        if rng.random() < 0.5:
            name = rng.choice(EVENTS)
            events.append(
                event(
                    start + timedelta(seconds=40 * len(paths)),
                    kind="custom",
                    anon=anon,
                    name=name,
                    url=SHOP + paths[-1],
                    **({"user_id": f"user-{i}"} if i % 7 == 0 else {}),
                )
            )
        response = post(
            client,
            site,
            events,
            sent_at=now,
            HTTP_USER_AGENT=rng.choice(AGENTS),
            REMOTE_ADDR=rng.choice(ADDRESSES),
        )
        assert response.status_code == 200, response.content
        sent[f"user-{i}" if i % 7 == 0 else anon] = {
            "pages": {page_path(SHOP + p) for p in paths},
            "events": {e["name"] for e in events if e["type"] == "custom"},
            # What the raw events say of the visit (the dashboard's brute force):
            "sent_started": start,
            "sent_pageviews": len(paths),
            "sent_duration": 40 * (len(events) - 1),
            "sent_converted": any(e.get("name") == PURCHASE for e in events),
        }
    return sent


def sessions_truth(site: Any, sent: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Every sent session as the brute force sees it: its stored summary plus the pages
    and custom events the raw events say it had."""
    truth = []
    for key, raw in sent.items():
        for summary in user_sessions.session_list(site_id=site.id, user_key=key):
            truth.append(
                {
                    **summary,
                    "user_key": key,
                    "entry_path": page_path(summary["entry_url"]),
                    "exit_path": page_path(summary["exit_url"]),
                    "duration_s": int(
                        (summary["last_seen_at"] - summary["started_at"]).total_seconds()
                    ),
                    "identified": summary["user_id"] is not None,
                    **raw,
                }
            )
    return truth
