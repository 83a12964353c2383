"""POST /collect: auth, CORS, size and rate limits, accounting, stored rows."""

from __future__ import annotations

import base64
import gzip
import io
import json
import time
from datetime import timedelta

import pytest
from django.core.handlers.wsgi import WSGIRequest
from django.test import RequestFactory

from sessions_app.domain.aggregates import sources
from sessions_app.domain.ingest.pipeline import STEPS
from sessions_app.domain.ledger import quality
from sessions_app.domain.sessions import feed
from sessions_app.domain.sessions.activity import user_activity
from sessions_app.features.collector.views import collect
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.models import Site
from sessions_app.foundation.tables import user_sessions
from tests.support.conversion import purchase_goal
from tests.support.events import ORIGIN, event, minutes, post
from tests.support.sessions import stored_events

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])


def _rows(table: str, where: str, *params) -> list[dict]:
    return list(
        cassandra_session().execute(prepare(f"SELECT * FROM {{ks}}.{table} WHERE {where}"), params)
    )


def test_mixed_batch_lands_in_every_table_and_keeps_its_good_events(client, site, live_now):
    purchase_goal(site)  # the purchase converts the session
    t0 = live_now - minutes(20)
    events = [
        event(t0, url="https://shop.example/", title="Home"),
        {"id": "broken", "type": "pageview"},
        event(
            t0 + minutes(1),
            kind="click",
            url="https://shop.example/",
            element={
                "tag": "button",
                "id": "buy",
                "classes": ["btn"],
                "text": "Buy",
                "selector": "main > button#buy",
            },
        ),
        event(t0 + minutes(2), kind="custom", name="purchase", props={"value": 49}),
    ]
    response = post(client, site, events)
    assert response.status_code == 200
    body = response.json()
    assert body["accepted"] == 3 and body["duplicates"] == 0
    assert [r["index"] for r in body["rejected"]] == [1]

    [summary] = user_sessions.session_list(site_id=site.id, user_key="anon-1")
    assert summary["event_count"] == 3 and summary["pageview_count"] == 1
    assert summary["click_count"] == 1 and summary["converted"] is True
    assert summary["entry_url"] == "https://shop.example/"
    assert summary["started_at"] == t0
    timeline = stored_events(session_id=summary["session_id"])
    assert [e["type"] for e in timeline] == ["pageview", "click", "custom"]
    assert timeline[1]["element"]["selector"] == "main > button#buy"
    activity = user_activity(site_id=site.id, user_key="anon-1", start=t0, end=live_now).events
    assert [e["event_id"] for e in activity] == [e["event_id"] for e in timeline]
    hour_events = [
        e
        for h in {timebuckets.floor(t0, "hour"), timebuckets.floor(t0 + minutes(2), "hour")}
        for e in sources.site_bucket_events(site_id=site.id, hour=h, shards=site.event_shards)
    ]
    assert len(hour_events) == 3
    assert [f["session_id"] for f in feed.feed_latest(site_id=site.id)] == [summary["session_id"]]
    counts = quality.ingest_counts(site_id=site.id, hour=live_now)
    assert counts["received"] == 4 and counts["accepted"] == 3
    assert counts["rejected"] == {"ts": 1}


def test_received_equals_accepted_plus_rejected_plus_duplicates(client, site, live_now):
    batch = [event(live_now - minutes(5)), event(live_now - minutes(4)), {"bad": True}]
    post(client, site, batch)
    post(client, site, batch)  # a replay: two duplicates, one rejected again
    counts = quality.ingest_counts(site_id=site.id, hour=live_now)
    rejected = sum(counts["rejected"].values())
    assert counts == {**counts, "received": 6, "accepted": 2, "duplicates": 2}
    assert counts["accepted"] + rejected + counts["duplicates"] == counts["received"]


def test_server_timing_names_every_step_only_when_asked(client, site, settings, live_now):
    assert "Server-Timing" not in post(client, site, [event(live_now)])
    settings.COLLECT_SERVER_TIMING = True
    response = post(client, site, [event(live_now - minutes(1)), event(live_now)])
    assert response.status_code == 200
    timings = {}
    for part in response["Server-Timing"].split(", "):
        name, _, duration = part.partition(";dur=")
        timings[name] = float(duration)
    steps = [step.__name__ for step in STEPS]
    assert list(timings) == [*steps, "gc", "total"]
    assert all(value >= 0 for value in timings.values())
    # The total is the view's, so it holds every step and what surrounds them.
    assert timings["total"] >= sum(timings[name] for name in steps)
    rejected = post(client, site, [{"bad": True}], origin="https://evil.example")
    assert "Server-Timing" not in rejected  # an error answer has no steps to time


def test_unknown_and_disabled_site_keys_are_401(client, site, live_now):
    body = {"site": "cs_nope", "events": [event(live_now)]}
    response = client.post("/collect", json.dumps(body), content_type="application/json")
    assert response.status_code == 401
    assert response.json() == {"error": "site: unknown site key", "field": "site"}
    site.enabled = False
    site.save()
    response = post(client, site, [event(live_now)])
    assert response.status_code == 401
    assert response.json()["error"] == "site: disabled site key"


def test_origin_outside_the_allow_list_is_403(client, site, live_now):
    response = post(client, site, [event(live_now)], origin="https://evil.example")
    assert response.status_code == 403
    assert response.json()["field"] == "origin"
    assert user_sessions.session_list(site_id=site.id, user_key="anon-1") == []


def test_allowed_origin_gets_cors_headers_without_credentials(client, site, live_now):
    response = post(client, site, [event(live_now)])
    assert response["Access-Control-Allow-Origin"] == ORIGIN
    assert "Access-Control-Allow-Credentials" not in response


def test_preflight_allowed_and_denied(client, site):
    allowed = client.options(
        f"/collect?site={site.key}", HTTP_ORIGIN=ORIGIN, HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST"
    )
    assert allowed.status_code == 204
    assert allowed["Access-Control-Allow-Origin"] == ORIGIN
    assert "POST" in allowed["Access-Control-Allow-Methods"]
    assert allowed["Access-Control-Allow-Headers"] == "Content-Type"
    assert "Access-Control-Allow-Credentials" not in allowed
    denied = client.options(
        f"/collect?site={site.key}",
        HTTP_ORIGIN="https://evil.example",
        HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST",
    )
    assert denied.status_code == 403
    assert "Access-Control-Allow-Origin" not in denied
    assert denied.json()["field"] == "origin"


def test_preflight_without_a_site_key_reads_the_sites_once(
    client, site, django_assert_max_num_queries
):
    def preflight(origin: str):
        return client.options(
            "/collect", HTTP_ORIGIN=origin, HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST"
        )

    for _ in range(20):  # sites in SQL, all of which an uncached preflight used to read
        Site.objects.create(name="x", allowed_origins=["https://other.example"])
    with django_assert_max_num_queries(1):
        assert preflight(ORIGIN).status_code == 204
        assert preflight("https://other.example").status_code == 204
        assert preflight("https://evil.example").status_code == 403
    site.allowed_origins = ["https://moved.example"]
    site.save()  # forgets the cached origins
    assert preflight("https://moved.example").status_code == 204


def test_declared_body_over_the_cap_is_413(client, site, settings, live_now):
    settings.COLLECT_MAX_BODY_BYTES = 1000
    response = post(client, site, [event(live_now, props={"pad": "x" * 1500})])
    assert response.status_code == 413
    assert response.json()["field"] == "body"


def test_body_over_the_cap_without_content_length_is_413(site, settings, live_now):
    settings.COLLECT_MAX_BODY_BYTES = 1000
    raw = json.dumps({"site": site.key, "events": [event(live_now, props={"p": "x" * 3000})]})
    request = RequestFactory().post("/collect", raw, content_type="text/plain")
    del request.META["CONTENT_LENGTH"]  # chunked upload: no declared length
    request.META["HTTP_TRANSFER_ENCODING"] = "chunked"
    request.META["wsgi.input"] = io.BytesIO(raw.encode())
    response = collect(request)
    assert response.status_code == 413
    assert json.loads(response.content)["error"] == "body: more than 1000 bytes"


def test_content_length_shorter_than_the_body_cannot_smuggle_data(site, live_now):
    raw = json.dumps({"site": site.key, "events": [event(live_now)]})
    built = RequestFactory().post("/collect", raw, content_type="text/plain")
    environ = {**built.META, "CONTENT_LENGTH": "10", "wsgi.input": io.BytesIO(raw.encode())}
    response = collect(WSGIRequest(environ))
    assert response.status_code == 400
    assert json.loads(response.content)["field"] == "body"


def test_rate_limit_per_site_is_429_with_retry_after(client, site, settings, live_now):
    settings.COLLECT_RATE_PER_SITE = 2
    statuses = [
        post(client, site, [event(live_now)], REMOTE_ADDR=f"203.0.113.{n}") for n in range(5)
    ]
    limited = [r for r in statuses if r.status_code == 429]
    assert limited, [r.status_code for r in statuses]
    assert limited[0]["Retry-After"] == "1"
    assert limited[0].json()["field"] == "site"


def test_rate_limit_per_ip_is_429(client, site, settings, live_now):
    settings.COLLECT_RATE_PER_IP = 2
    statuses = [
        post(client, site, [event(live_now)], REMOTE_ADDR="203.0.113.9").status_code
        for _ in range(5)
    ]
    assert 429 in statuses
    other_ip = post(client, site, [event(live_now)], REMOTE_ADDR="203.0.113.10")
    assert other_ip.status_code == 200


def _second_start() -> None:
    """Wait for a new second: the limits count in one-second windows."""
    time.sleep(1.01 - time.time() % 1)


def test_events_are_counted_against_the_limits_as_well_as_requests(
    client, site, settings, live_now
):
    _second_start()
    settings.COLLECT_EVENTS_PER_SITE = 40
    settings.COLLECT_EVENTS_PER_IP = 100  # capped at half the site's: 20
    big = [event(live_now, id=f"ev-big-{i}") for i in range(15)]
    first = post(client, site, big, REMOTE_ADDR="203.0.113.20")
    assert first.status_code == 200
    second = post(
        client,
        site,
        [event(live_now, id=f"ev-more-{i}") for i in range(10)],
        REMOTE_ADDR="203.0.113.20",
    )
    assert second.status_code == 429 and second.json()["field"] == "ip"  # 25 > 20
    # Another client still has room in the site's budget: 15 + 15 <= 40.
    other = post(
        client,
        site,
        [event(live_now, id=f"ev-other-{i}") for i in range(15)],
        REMOTE_ADDR="203.0.113.21",
    )
    assert other.status_code == 200


def test_one_client_cannot_use_up_its_sites_budget(client, site, settings, live_now):
    settings.COLLECT_RATE_PER_SITE = 4
    settings.COLLECT_RATE_PER_IP = 0  # no own limit: still at most half the site's
    _second_start()
    flood = [
        post(client, site, [event(live_now)], REMOTE_ADDR="203.0.113.30").status_code
        for _ in range(10)
    ]
    assert flood.count(200) == 2 and flood.count(429) == 8
    assert post(client, site, [event(live_now)], REMOTE_ADDR="203.0.113.31").status_code == 200


def test_an_ipv6_client_is_limited_by_its_64(client, site, settings, live_now):
    settings.COLLECT_RATE_PER_IP = 2
    same_64 = [f"2001:db8:1:2::{n:x}" for n in range(1, 5)]  # four hosts of one /64
    _second_start()
    statuses = [post(client, site, [event(live_now)], REMOTE_ADDR=ip).status_code for ip in same_64]
    assert statuses.count(429) == 2
    other_64 = post(client, site, [event(live_now)], REMOTE_ADDR="2001:db8:1:3::1")
    assert other_64.status_code == 200


def test_clock_skew_is_corrected_with_sent_at(client, site, live_now):
    # The client's clock runs 2 hours behind: it stamped its event "10 minutes ago"
    # in its own time and sent the batch "now" in its own time.
    client_now = live_now - timedelta(hours=2)
    post(client, site, [event(client_now - minutes(10))], sent_at=client_now)
    [summary] = user_sessions.session_list(site_id=site.id, user_key="anon-1")
    assert abs(summary["started_at"] - (live_now - minutes(10))) < timedelta(seconds=5)


def test_small_clock_differences_are_transit_time_not_skew(client, site, live_now):
    ts = live_now - minutes(3)
    post(client, site, [event(ts)], sent_at=live_now - timedelta(seconds=20))
    [summary] = user_sessions.session_list(site_id=site.id, user_key="anon-1")
    assert summary["started_at"] == ts


def test_far_future_events_are_clamped_and_flagged(client, site, live_now):
    response = post(client, site, [event(live_now + timedelta(days=3))])
    assert response.json()["clamped"] == 1
    [summary] = user_sessions.session_list(site_id=site.id, user_key="anon-1")
    assert summary["started_at"] <= live_now + timedelta(seconds=5)
    [stored] = stored_events(session_id=summary["session_id"])
    assert stored["clamped"] is True


def test_late_events_are_accepted_and_marked(client, site, live_now):
    response = post(client, site, [event(live_now - timedelta(hours=3))])
    assert response.json()["late"] == 1 and response.json()["accepted"] == 1
    [summary] = user_sessions.session_list(site_id=site.id, user_key="anon-1")
    [stored] = stored_events(session_id=summary["session_id"])
    assert stored["late"] is True


def test_bots_are_flagged_and_ips_anonymised(client, site, live_now):
    post(
        client,
        site,
        [event(live_now, anon="crawler")],
        REMOTE_ADDR="203.0.113.77",
        HTTP_USER_AGENT="Mozilla/5.0 (compatible; Googlebot/2.1)",
    )
    post(
        client,
        site,
        [event(live_now, anon="human")],
        REMOTE_ADDR="2001:db8:abcd:12:1:2:3:4",
        HTTP_USER_AGENT="Mozilla/5.0 (X11; Linux x86_64) Firefox/133.0",
    )
    [bot] = _rows("user_sessions", "site_id = ? AND user_key = ?", site.id, "crawler")
    [human] = _rows("user_sessions", "site_id = ? AND user_key = ?", site.id, "human")
    assert bot["is_bot"] is True and bot["ip_prefix"] == "203.0.113.0"
    assert human["is_bot"] is False and human["ip_prefix"] == "2001:db8:abcd::"
    stored = " ".join(str(v) for row in (bot, human) for v in row.values())
    assert "203.0.113.77" not in stored and "1:2:3:4" not in stored


def _segment(
    client, site, body: bytes, *, gzip_it: bool = False, path: str = "/v1/batch", **headers
):
    auth = base64.b64encode(f"{site.key}:".encode()).decode()
    headers["HTTP_AUTHORIZATION"] = f"Basic {auth}"
    if gzip_it:
        headers["HTTP_CONTENT_ENCODING"] = "gzip"
    return client.post(path, body, content_type="application/json", **headers)


def _track(ts, message_id: str) -> dict:
    return {
        "type": "track",
        "event": "purchase",
        "userId": "gz-user",
        "messageId": message_id,
        "timestamp": ts.isoformat(),
    }


def test_segment_requests_from_a_browser_are_checked_against_the_allowed_origins(
    client, site, live_now
):
    def send(message_id: str, **headers):
        body = json.dumps({"batch": [_track(live_now - minutes(1), message_id)]}).encode()
        return _segment(client, site, body, **headers)

    refused = send("o-1", HTTP_ORIGIN="https://evil.example")
    assert refused.status_code == 403
    assert refused.json()["field"] == "origin"
    assert "Access-Control-Allow-Origin" not in refused
    allowed = send("o-2", HTTP_ORIGIN="https://shop.example")
    assert allowed.status_code == 200 and allowed.json()["accepted"] == 1
    assert allowed["Access-Control-Allow-Origin"] == "https://shop.example"
    server_side = send("o-3")  # no Origin: a server-side SDK
    assert server_side.status_code == 200 and server_side.json()["accepted"] == 1
    [summary] = user_sessions.session_list(site_id=site.id, user_key="gz-user")
    assert summary["event_count"] == 2  # the refused one never stored


def test_segment_gzip_body_is_inflated(client, site, live_now):
    body = json.dumps({"batch": [_track(live_now - minutes(1), "gz-1")]}).encode()
    response = _segment(client, site, gzip.compress(body), gzip_it=True)
    assert response.status_code == 200, response.content
    assert response.json()["accepted"] == 1
    assert [
        s["event_count"] for s in user_sessions.session_list(site_id=site.id, user_key="gz-user")
    ]


@pytest.mark.parametrize(
    ("mangle", "error"),
    [
        # a corrupt deflate stream raises zlib.error, which is not an OSError
        (lambda g: g[:12] + b"\xff\xff\xff" + g[15:], "body: invalid gzip body"),
        (lambda g: g[:-12], "body: invalid gzip body (truncated)"),
        (lambda g: b"not gzip at all", "body: invalid gzip body"),
    ],
)
def test_segment_corrupt_gzip_is_400(client, site, live_now, mangle, error):
    body = json.dumps({"batch": [_track(live_now, "gz-2")] * 20}).encode()
    response = _segment(client, site, mangle(gzip.compress(body)), gzip_it=True)
    assert response.status_code == 400, response.content
    assert response.json()["error"].startswith(error)


def test_segment_gzip_bomb_is_413_without_inflating_it(client, site, settings):
    settings.COLLECT_MAX_BODY_BYTES = 100_000
    bomb = gzip.compress(b" " * 50_000_000)  # ~50 KB that inflates to 50 MB
    assert len(bomb) < settings.COLLECT_MAX_BODY_BYTES
    response = _segment(client, site, bomb, gzip_it=True)
    assert response.status_code == 413
    assert response.json()["error"] == "body: more than 100000 bytes once decompressed"


def test_segment_bad_sent_at_names_the_field(client, site, live_now):
    body = json.dumps({"batch": [_track(live_now, "gz-3")], "sentAt": "soon"}).encode()
    response = _segment(client, site, body)
    assert response.status_code == 400
    assert response.json() == {"error": "sentAt: not an ISO-8601 time: 'soon'", "field": "sentAt"}
