"""Every invalid field is rejected with a reason naming it; the rest of the batch is kept."""

from __future__ import annotations

import functools
import json
from datetime import UTC, datetime

import pytest
from django.utils import timezone

from sessions_app.domain.ledger import quality
from sessions_app.foundation.tables import user_sessions
from tests.support.events import ORIGIN, event, post

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

NOW = timezone.now()
GOOD = event(NOW)
INVALID = [
    ({**GOOD, "id": None}, "events[0].id: required"),
    ({**GOOD, "id": "x" * 65}, "events[0].id: 65 characters; at most 64"),
    ({**GOOD, "type": "scroll"}, "events[0].type: expected one of pageview, click, custom"),
    ({**GOOD, "type": "custom"}, "events[0].name: required"),
    ({**GOOD, "ts": "yesterday"}, "events[0].ts: not an ISO-8601 time: 'yesterday'"),
    ({**GOOD, "ts": "2026-03-01T10:00:00"}, "events[0].ts: time zone missing (use Z or an offset)"),
    ({**GOOD, "ts": True}, "events[0].ts: expected an ISO-8601 time or epoch milliseconds"),
    # converting these to UTC overflows: a reason, not a 500 for the whole beacon
    ({**GOOD, "ts": "0001-01-01T00:00:00+01:00"}, "events[0].ts: out of range (1970 to 9000)"),
    ({**GOOD, "ts": "9999-12-31T23:59:59-01:00"}, "events[0].ts: out of range (1970 to 9000)"),
    ({**GOOD, "ts": 253402300799999}, "events[0].ts: epoch milliseconds out of range"),
    ({**GOOD, "ts": "2001-01-01T00:00:00Z"}, "events[0].ts: older than 30 days; not accepted"),
    ({k: v for k, v in GOOD.items() if k != "ts"}, "events[0].ts: required"),
    ({**GOOD, "anonymous_id": ""}, "events[0].anonymous_id: required"),
    ({**GOOD, "anonymous_id": 42}, "events[0].anonymous_id: expected a string, got int"),
    ({**GOOD, "user_id": "u" * 257}, "events[0].user_id: 257 characters; at most 256"),
    ({**GOOD, "url": "javascript:alert(1)"}, "events[0].url: expected an absolute http(s) URL"),
    # urlsplit raises on an unclosed IPv6 host: a reason, not a 500 for the whole beacon
    ({**GOOD, "url": "http://[::1/cart"}, "events[0].url: expected an absolute http(s) URL"),
    ({**GOOD, "referrer": "https://[x"}, "events[0].referrer: expected an absolute http(s) URL"),
    (
        {**GOOD, "url": "https://x.example/" + "a" * 2048},
        "events[0].url: 2066 characters; at most 2048",
    ),
    ({k: v for k, v in GOOD.items() if k != "url"}, "events[0].url: required"),
    (
        {**GOOD, "referrer": "ftp://files.example/"},
        "events[0].referrer: expected an absolute http(s) URL",
    ),
    ({**GOOD, "title": "t\x00itle"}, "events[0].title: control characters are not allowed"),
    ({**GOOD, "element": "button"}, "events[0].element: expected an object"),
    (
        {**GOOD, "element": {"text": "b" * 129}},
        "events[0].element.text: 129 characters; at most 128",
    ),
    (
        {**GOOD, "element": {"classes": ["c"] * 21}},
        "events[0].element.classes: expected a list of at most 20",
    ),
    ({**GOOD, "props": [1, 2]}, "events[0].props: expected an object"),
    ({**GOOD, "props": {f"k{i}": i for i in range(51)}}, "events[0].props: 51 keys; at most 50"),
    (
        {**GOOD, "props": {"a": {"b": {"c": {"d": 1}}}}},
        "events[0].props: nested deeper than 3 levels",
    ),
    ({**GOOD, "props": {"blob": "x" * 5000}}, "events[0].props: 5011 bytes as JSON; at most 4096"),
    # 500 levels: within the JSON decoder's limit, beyond a naive recursive depth check's
    (
        {**GOOD, "props": functools.reduce(lambda v, _: {"k": v}, range(500), 1)},
        "events[0].props: nested deeper than 3 levels",
    ),
    ("not an object", "events[0].event: expected an object"),
]


@pytest.mark.parametrize(("bad", "reason"), INVALID, ids=[r for _, r in INVALID])
def test_invalid_field_is_rejected_with_its_reason(client, site, bad, reason) -> None:
    good = event(NOW)
    response = post(client, site, [bad, good])

    assert response.status_code == 200
    body = response.json()
    assert body["rejected"] == [{"index": 0, "reason": reason}]
    assert body["accepted"] == 1  # the good event beside it is kept
    # Kept under the day it was received: today, which is not NOW's day past midnight.
    [failed] = [
        f
        for day in sorted({NOW.date(), timezone.now().date()})
        for f in quality.failed_events_list(
            site_id=site.id, day=timezone.now().replace(year=day.year, month=day.month, day=day.day)
        )
        if f["reason"] == reason
    ]
    assert failed["source"] == "collect"
    assert json.loads(failed["payload"]) == bad


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        (b"{not json", 400, "body"),
        (b"", 400, "body"),
        (b"[1, 2]", 400, "body"),
        (b'{"events": []}', 400, "site"),
        (b'{"site": "k"}', 400, "events"),
        (b'{"site": "k", "events": {}}', 400, "events"),
        (b'{"site": "k", "events": []}', 400, "events"),
        (b'{"site": "k", "events": [{}], "sent_at": "soon"}', 400, "sent_at"),
        (b"\xff\xfe", 400, "body"),
        (b"[" * 100_000, 400, "body"),  # RecursionError in the decoder
        # Not JSON (RFC 8259), though Python's json module takes them: NaN cannot be read
        # back by the API, a lone surrogate cannot be encoded for Cassandra or Redis.
        (b'{"site": "k", "events": [{"props": {"x": NaN}}]}', 400, "body"),
        (b'{"site": "k", "events": [{"props": {"x": -Infinity}}]}', 400, "body"),
        (b'{"site": "k", "events": [{"title": "\\ud800"}]}', 400, "body"),
        (
            b'{"site": "k", "events": [' + b'{"a": ' * 5_000 + b"1" + b"}" * 5_000 + b"]}",
            400,
            "body",
        ),
    ],
)
def test_unusable_body_is_400_naming_the_field(client, body, status, field) -> None:
    response = client.post("/collect", body, content_type="application/json")
    assert response.status_code == status
    assert response.json()["field"] == field
    assert response.json()["error"].startswith(f"{field}: ")


def test_too_many_events_is_400(client, site, settings) -> None:
    settings.COLLECT_MAX_EVENTS = 3
    response = post(client, site, [event(NOW) for _ in range(4)])
    assert response.status_code == 400
    assert response.json()["error"] == "events: 4 events; at most 3 a request"


def test_sent_at_at_the_other_end_of_the_range_rejects_only_the_event(client, site):
    # ts + (received_at - sent_at) would be before year 1
    bad = {**GOOD, "ts": "1970-01-02T00:00:00Z"}
    response = post(client, site, [bad], sent_at=datetime(8999, 1, 1, tzinfo=UTC))
    assert response.status_code == 200
    assert response.json()["rejected"] == [
        {"index": 0, "reason": "events[0].ts: out of range once corrected by sent_at"}
    ]


def test_a_lone_surrogate_or_nan_is_refused_before_anything_is_stored(client, site):
    # Python's json module accepts both; stored, the first failed every apply of its
    # batch and the second every read of its session.
    for anon, token in [("sur", '"\\ud800"'), ("nan", "NaN")]:
        raw = json.dumps({"site": site.key, "events": [event(NOW, anon=anon, title="T")]})
        response = client.post(
            "/collect", raw.replace('"T"', token), content_type="text/plain", HTTP_ORIGIN=ORIGIN
        )
        assert response.status_code == 400, response.content
        assert response.json()["field"] == "body"
        assert user_sessions.session_list(site_id=site.id, user_key=anon) == []
