"""Secret-looking URL parameters never reach storage, whatever sent them (domain/ingest/redact.py).

The collector applies the tracker's rules (and the site's own list) to every URL field of
every source before anything is validated, logged or written: the stored rows of every
table — event documents, bucket rows, summaries, failed_events payloads, the transaction
log's plans — are scanned for the secret values.
"""

from __future__ import annotations

import base64
import functools
import json
import random
import shutil
import string
import subprocess
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessions_app.domain.ingest.redact import TIDY, TOO_DEEP, redactor
from sessions_app.domain.ingest.validation import validate_event
from sessions_app.foundation.models import Site
from sessions_app.foundation.tables import user_sessions
from tests.support.anywhere import rows_mentioning
from tests.support.events import event, minutes, post
from tests.support.hypothesis import examples
from tests.support.sessions import stored_events

ROOT = Path(__file__).resolve().parents[2]
NODE_SCRIPT = Path(__file__).with_name("redact_node.mjs")


def _secret(label: str) -> str:
    return f"{label}{uuid.uuid4().hex[:12]}"


# ---- the rules (tracker.js `redact`, tests/tracker/helpers.test.mjs) ----

TRACKER_CASES = [
    ("https://a.example/p", "https://a.example/p"),
    (
        "https://a.example/p?q=red%20shoes&page=2#reviews",
        "https://a.example/p?q=red%20shoes&page=2#reviews",
    ),
    ("https://a.example/#/cart", "https://a.example/#/cart"),
    (
        "https://a.example/?author=me&keyword=x&design=1",
        "https://a.example/?author=me&keyword=x&design=1",
    ),
    ("https://a.example/reset?token=abc", "https://a.example/reset"),
    ("https://a.example/p?a=1&api_key=k&b=2", "https://a.example/p?a=1&b=2"),
    ("https://a.example/p?Password=x&b=2#top", "https://a.example/p?b=2#top"),
    ("https://a.example/p?b=2&SESSIONID=s", "https://a.example/p?b=2"),
    ("https://a.example/cb?code=c&state=s&sig=x", "https://a.example/cb?state=s"),
    (
        "https://a.example/cb#access_token=t&token_type=bearer&state=s",
        "https://a.example/cb#token_type=bearer&state=s",
    ),
    ("https://a.example/#/reset?token=t", "https://a.example/#/reset"),
    ("not a url ?token=1", "not a url "),
    ("", ""),
]


@pytest.mark.parametrize(("url", "expected"), TRACKER_CASES)
def test_the_default_names_are_dropped_as_the_tracker_drops_them(url, expected):
    assert redactor().url(url) == expected


def test_every_default_name_is_dropped():
    names = ["access_token", "apikey", "secret", "passwd", "pwd", "auth", "session_id"]
    names += ["PHPSESSID", "jwt", "otp", "signature"]
    for name in names:
        assert redactor().url(f"https://a.example/p?x=1&{name}=v") == "https://a.example/p?x=1"


def test_a_site_adds_names_and_keeps_one_the_defaults_drop():
    url = "https://a.example/p?ref=x&code=SUMMER&email=a@b"
    assert redactor(("email", "-code")).url(url) == "https://a.example/p?ref=x&code=SUMMER"
    assert redactor(("EMAIL",)).url(url) == "https://a.example/p?ref=x"


def test_every_url_field_at_any_depth_is_cleaned_and_a_clean_event_is_left_as_it_is():
    clean = event(
        datetime(2026, 1, 1, tzinfo=UTC), url="https://a.example/p?page=2", props={"n": "a?b=1"}
    )
    assert redactor().payload(clean) is clean
    assert redactor().valid(valid := validate_event(clean)) is valid
    raw = {
        "url": "https://a.example/?token=1&a=2",
        "title": "Reset?token=kept",  # not a URL field, not a URL
        "element": {"href": "/relative?sid=1"},
        "context": {"search": "?q=x&jwt=1", "path": "/p"},
        "props": {"target": "https://b.example/#otp=1", "list": ["https://c.example/?pwd=1"]},
        "extra": {"deep": {"page_url": "x?auth=1"}},
    }
    cleaned = redactor().payload(raw)
    assert cleaned == {
        "url": "https://a.example/?a=2",
        "title": "Reset?token=kept",
        "element": {"href": "/relative"},
        "context": {"search": "?q=x", "path": "/p"},
        "props": {"target": "https://b.example/", "list": ["https://c.example/"]},
        "extra": {"deep": {"page_url": "x"}},
    }
    assert raw["url"] == "https://a.example/?token=1&a=2"  # the caller's dict is not changed
    valid = redactor().valid(validate_event({**clean, **raw, "title": "https://t.example/?sid=1"}))
    assert (valid.url, valid.title) == ("https://a.example/?a=2", "https://t.example/")
    assert valid.element == {"href": "/relative"} and valid.props == cleaned["props"]


def test_containers_nested_deeper_than_any_valid_event_are_cut():
    deep: object = "https://a.example/?token=1"
    for _ in range(40):
        deep = {"x": deep}
    text = json.dumps(redactor().payload({"props": deep}))
    assert "token" not in text and TOO_DEEP in text
    harmless = {"props": functools.reduce(lambda v, _: {"k": v}, range(500), "a b")}
    assert redactor().payload(harmless) is harmless


NAME_CHARS = string.ascii_letters + string.digits + "_-.[]%"
names = st.text(NAME_CHARS, min_size=1, max_size=12)
values = st.text(st.characters(codec="utf-8", exclude_characters="&#"), max_size=16)
SECRET_ENDINGS = ["token", "KEY", "secret", "pass", "Password", "pwd", "auth", "code", "sess"]
SECRET_ENDINGS += ["SESSIONID", "sid", "sig", "signature", "jwt", "otp"]


@given(
    prefix=st.text(NAME_CHARS, max_size=8),
    ending=st.sampled_from(SECRET_ENDINGS),
    own=names,
    kept=st.lists(st.tuples(names, values), max_size=4),
    secret=values,
    where=st.sampled_from("?#"),
)
@settings(max_examples=examples(300), deadline=None)
def test_generated_secret_parameters_go_and_the_others_stay(
    prefix, ending, own, kept, secret, where
):
    site = redactor((own, "-keepme"))
    kept = [(n, v) for n, v in kept if not site.dropped(n)]
    hidden = f"S{uuid.uuid4().hex}{secret}"
    params = [f"{n}={v}" for n, v in kept]
    params.insert(len(params) // 2, f"{prefix}{ending}={hidden}")
    params.append(f"{own}={hidden}")
    url = "https://a.example/p" + where + "&".join(params)
    got = site.url(url)
    assert hidden not in got
    for n, v in kept:
        # A value ending the URL loses its trailing "?" to the tidying, as in tracker.js.
        assert f"{n}={v}".rstrip("?") in got
    assert site.url("https://a.example/p?keepme=1&token=2") == "https://a.example/p?keepme=1"


def test_the_server_and_the_tracker_drop_the_same_parameters():
    """A seeded corpus of URLs through tracker.js's own `redact` (node) and ingest/redact."""
    node = shutil.which("node")
    assert node, "Node.js runs the tracker's redact"
    rnd = random.Random(35_6)
    pieces = ["token", "api_key", "Code", "sess", "sid", "q", "page", "email", "x", "é", "-code"]
    seps = ["?", "&", "#", "=", "/", "%20", "", "&&", "?#"]
    cases = []
    for _ in range(400):
        parts = [rnd.choice(pieces + seps) for _ in range(rnd.randint(1, 12))]
        names_list = rnd.choice([[], ["email"], ["email", "-code"], ["-token", "x"]])
        cases.append(["https://a.example/p" + "".join(parts), names_list])
    result = subprocess.run(
        [node, str(NODE_SCRIPT)],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=ROOT,
    )
    tracker = json.loads(result.stdout)
    server = [redactor(tuple(n)).url(url) for url, n in cases]
    for (url, _), ours, theirs in zip(cases, server, tracker, strict=True):
        if ours != url:
            assert ours == theirs, url
        else:  # nothing dropped: stored as sent, where the tracker also tidies separators
            assert TIDY.sub(r"\1", url) == theirs, url


# ---- through the real collector and Segment endpoints, every table scanned ----

pytestmark_db = pytest.mark.django_db(databases=["default", "cassandra"])


def _segment(client, site: Site, body: dict):
    auth = base64.b64encode(f"{site.key}:".encode()).decode()
    return client.post(
        "/v1/batch",
        json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Basic {auth}",
    )


@pytest.mark.empty_tables  # brute force over every table of the keyspace
@pytestmark_db
def test_collect_stores_no_secret_of_any_url_field_in_any_table(client, site, live_now):
    site.redact_params = ["email", "-code"]
    site.save()
    s = {k: _secret(k) for k in ("token", "sess", "frag", "key", "email", "jwt", "otp", "pwd")}
    t0 = live_now - minutes(5)
    page = (
        f"https://shop.example/reset?token={s['token']}&sessionid={s['sess']}&page=2"
        f"#access_token={s['frag']}&state=ok"
    )
    events = [
        event(t0, url=page, referrer=f"https://idp.example/cb?code=KEEPCODE&api_key={s['key']}"),
        event(
            t0 + minutes(1),
            kind="click",
            url=page,
            element={"tag": "a", "href": f"https://shop.example/x?email={s['email']}&ok=1"},
        ),
        event(t0 + minutes(2), kind="custom", props={"url": f"https://a.example/?jwt={s['jwt']}"}),
        {**event(t0, id="rejected"), "type": "bogus", "url": f"https://x.example/?otp={s['otp']}"},
        {**event(t0, id="bad-url"), "url": f"ftp://x.example/?password={s['pwd']}"},
    ]
    body = post(client, site, events).json()
    assert body["accepted"] == 3 and [r["index"] for r in body["rejected"]] == [3, 4]

    assert rows_mentioning(*s.values()) == {}
    [summary] = user_sessions.session_list(site_id=site.id, user_key="anon-1")
    assert summary["entry_url"] == "https://shop.example/reset?page=2#state=ok"
    stored = stored_events(session_id=summary["session_id"])
    assert stored[0]["referrer"] == "https://idp.example/cb?code=KEEPCODE"  # the site keeps code
    assert stored[1]["element"]["href"] == "https://shop.example/x?ok=1"
    assert stored[2]["props"] == {"url": "https://a.example/"}
    failed = rows_mentioning("x.example")
    assert failed["failed_events"] == 2, failed


@pytest.mark.empty_tables  # brute force over every table of the keyspace
@pytestmark_db
def test_segment_stores_no_secret_of_any_url_field_in_any_table(client, site, live_now):
    s = {k: _secret(k) for k in ("url", "ref", "search", "path", "purl", "pref", "trait", "frag")}
    ts = (live_now - minutes(3)).isoformat()
    context = {
        "page": {
            "url": f"https://shop.example/p?token={s['url']}&a=1#id_token={s['frag']}",
            "referrer": f"https://ref.example/?sessionid={s['ref']}",
            "path": f"/p?sid={s['path']}",
            "search": f"?a=1&auth={s['search']}",
        }
    }
    batch = [
        {
            "type": "page",
            "messageId": "m-1",
            "anonymousId": "seg-1",
            "timestamp": ts,
            "context": context,
            "properties": {"title": "P"},
        },
        {
            "type": "page",
            "messageId": "m-2",
            "anonymousId": "seg-1",
            "timestamp": ts,
            "properties": {
                "url": f"https://shop.example/q?api_key={s['purl']}",
                "referrer": f"https://r.example/?pwd={s['pref']}",
            },
        },
        {
            "type": "identify",
            "messageId": "m-3",
            "userId": "seg-u",
            "timestamp": ts,
            "traits": {"website": f"https://me.example/?secret={s['trait']}"},
        },
        {
            "type": "track",
            "messageId": "m-4",
            "anonymousId": "seg-1",
            "timestamp": ts,
            "event": "Viewed",
            "properties": {"url": f"https://shop.example/?jwt={s['purl']}"},
        },
    ]
    response = _segment(client, site, {"batch": batch})
    assert response.status_code == 200 and response.json()["accepted"] == 4, response.json()

    assert rows_mentioning(*s.values()) == {}
    [summary] = user_sessions.session_list(site_id=site.id, user_key="seg-1")
    stored = stored_events(session_id=summary["session_id"])
    urls = sorted(e["url"] for e in stored if e["url"])
    assert urls == ["https://shop.example/p?a=1", "https://shop.example/q"]
    viewed = next(e for e in stored if e["name"] == "Viewed")
    assert viewed["props"] == {"url": "https://shop.example/"}
    first = next(e for e in stored if e["url"] == "https://shop.example/p?a=1")
    assert first["context"]["search"] == "?a=1" and first["context"]["path"] == "/p"


@pytestmark_db
@pytest.mark.empty_tables  # brute force over every table of the keyspace
@given(
    ending=st.sampled_from([*SECRET_ENDINGS, "own"]),
    prefix=st.text(string.ascii_letters + "_", max_size=6),
    value=st.text(string.ascii_letters + string.digits + "-._~%+/", min_size=1, max_size=20),
    where=st.sampled_from(["url", "referrer", "href", "props"]),
)
@settings(
    max_examples=examples(12),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_generated_secrets_sent_to_the_collector_are_stored_nowhere(
    client, site, live_now, ending, prefix, value, where
):
    site.redact_params = ["own"]
    site.save()
    hidden = _secret("gen") + value
    name = ending if ending == "own" else prefix + ending
    url = f"https://shop.example/p?keep=yes&{name}={hidden}"
    extra: dict = {"referrer": url} if where == "referrer" else {}
    if where == "href":
        extra = {"kind": "click", "element": {"tag": "a", "href": url}}
    if where == "props":
        extra = {"kind": "custom", "props": {"next_url": url}}
    sent = event(
        live_now - minutes(1), url=url if where == "url" else "https://shop.example/", **extra
    )
    assert post(client, site, [sent]).json()["accepted"] == 1
    assert rows_mentioning(hidden) == {}
