"""Against a live HTTP server: concurrent replays and a real Segment SDK."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app.domain.aggregates import sources
from sessions_app.domain.sessions import activity, feed, lists
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.tables import user_sessions
from tests.support.conversion import purchase_goal
from tests.support.events import ORIGIN, event, minutes
from tests.support.sessions import stored_events

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "cassandra"])


def _count(table: str, where: str, *params) -> int:
    statement = prepare(f"SELECT COUNT(*) AS n FROM {{ks}}.{table} WHERE {where}")
    return cassandra_session().execute(statement, params).one()["n"]


def test_one_beacon_replayed_three_times_concurrently_writes_once(live_server, site, live_now):
    t0 = live_now - minutes(3)
    body = json.dumps(
        {
            "site": site.key,
            "events": [
                event(t0, id="b-1"),
                event(t0 + timedelta(seconds=5), kind="click", id="b-2"),
            ],
        }
    ).encode()
    barrier = threading.Barrier(3)
    answers: list[dict] = []

    def send() -> None:
        request = urllib.request.Request(
            f"{live_server.url}/collect",
            data=body,
            method="POST",
            headers={"Content-Type": "text/plain", "Origin": ORIGIN},
        )
        barrier.wait()
        with urllib.request.urlopen(request, timeout=30) as response:
            answers.append(json.loads(response.read()))

    threads = [threading.Thread(target=send) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(a["accepted"] for a in answers) == [0, 0, 2]
    assert sum(a["duplicates"] for a in answers) == 4
    [summary] = user_sessions.session_list(site_id=site.id, user_key="anon-1")
    sid = summary["session_id"]
    assert summary["event_count"] == 2
    assert _count("session_events", "session_id = ?", sid) == 2
    bucket = activity.user_activity(
        site_id=site.id, user_key="anon-1", start=t0, end=live_now
    ).events
    assert len(bucket) == 2
    site_rows = sources.site_bucket_events(site_id=site.id, hour=t0, shards=site.event_shards)
    site_rows += (
        sources.site_bucket_events(
            site_id=site.id, hour=t0 + timedelta(seconds=5), shards=site.event_shards
        )
        if (t0.hour != (t0 + timedelta(seconds=5)).hour)
        else []
    )
    assert len(site_rows) == 2
    assert len(feed.feed_latest(site_id=site.id)) == 1


def test_segment_sdk_end_to_end(live_server, site):
    from segment.analytics.client import Client

    purchase_goal(site)  # the tracked purchase converts the session
    analytics = Client(write_key=site.key, host=live_server.url, max_retries=1)
    now = timezone.now()
    analytics.identify(
        "seg-user-1",
        {"plan": "pro"},
        anonymous_id="seg-anon-1",
        timestamp=now - timedelta(seconds=30),
    )
    analytics.page(
        "seg-user-1",
        name="Pricing",
        properties={"url": "https://shop.example/pricing", "title": "Pricing"},
        timestamp=now - timedelta(seconds=20),
    )
    analytics.track(
        "seg-user-1",
        "purchase",
        {"value": 99, "currency": "EUR"},
        timestamp=now - timedelta(seconds=10),
    )
    analytics.flush()
    analytics.shutdown()

    deadline = time.monotonic() + 10
    sessions = []
    while time.monotonic() < deadline and not sessions:
        sessions = user_sessions.session_list(site_id=site.id, user_key="seg-user-1")
        time.sleep(0.2)
    [summary] = sessions
    assert summary["event_count"] == 3 and summary["converted"] is True
    timeline = stored_events(session_id=summary["session_id"])
    assert [(e["type"], e["name"]) for e in timeline] == [
        ("custom", "$identify"),
        ("pageview", "Pricing"),  # the page's name
        ("custom", "purchase"),
    ]
    assert timeline[0]["props"] == {"plan": "pro"}
    assert timeline[1]["url"] == "https://shop.example/pricing"
    assert timeline[2]["props"] == {"value": 99, "currency": "EUR"}
    assert lists.identity_links(site_id=site.id, user_id="seg-user-1") == ["seg-anon-1"]


def test_segment_sdk_with_gzip(live_server, site):
    from segment.analytics.client import Client

    analytics = Client(write_key=site.key, host=live_server.url, max_retries=1, gzip=True)
    analytics.track("seg-gzip", "purchase", {"value": 5}, timestamp=timezone.now())
    analytics.flush()
    analytics.shutdown()
    [summary] = user_sessions.session_list(site_id=site.id, user_key="seg-gzip")
    [stored] = stored_events(session_id=summary["session_id"])
    assert (stored["name"], stored["props"]) == ("purchase", {"value": 5})


def test_segment_endpoints_require_the_site_key(live_server, site):
    request = urllib.request.Request(
        f"{live_server.url}/v1/track",
        method="POST",
        data=json.dumps({"userId": "u", "event": "x"}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as error:
        urllib.request.urlopen(request, timeout=10)
    assert error.value.code == 401
    assert json.loads(error.value.read())["field"] == "Authorization"
