"""Enrichment at ingest (sessions_app/domain/ingest/enrich.py): tables of real user agents, IPs,
referrers and landing URLs, then the dimensions a session gets through /collect and a
Segment batch, read back through the API."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from sessions_app.domain.ingest import enrich
from sessions_app.domain.ingest.enrich import is_bot_agent
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.tables import user_sessions
from tests.support.accounts import auth
from tests.support.events import event, post

# (user agent, browser, major, os, os version, device type)
AGENTS = [
    (
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/131.0.0.0 Safari/537.36",
        "Chrome", "131", "Mac OS X", "10.15", "desktop",
    ),
    (
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0",
        "Firefox", "133", "Windows", "10", "desktop",
    ),
    (
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0",
        "Edge", "131", "Windows", "10", "desktop",
    ),
    (
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like "
        "Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
        "Mobile Safari", "17", "iOS", "17.5", "mobile",
    ),
    (
        "Mozilla/5.0 (iPad; CPU OS 16_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
        "Version/16.6 Mobile/15E148 Safari/604.1",
        "Mobile Safari", "16", "iOS", "16.6", "tablet",
    ),
    (
        "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/131.0.0.0 Mobile Safari/537.36",
        "Chrome Mobile", "131", "Android", "14", "mobile",
    ),
    (
        "Mozilla/5.0 (Linux; Android 13; SM-X700) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/120.0.0.0 Safari/537.36",
        "Chrome", "120", "Android", "13", "tablet",
    ),
    (
        "Mozilla/5.0 (Linux; Android 13; SAMSUNG SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) "
        "SamsungBrowser/23.0 Chrome/115.0.0.0 Mobile Safari/537.36",
        "Samsung Internet", "23", "Android", "13", "mobile",
    ),
    (
        "Mozilla/5.0 (Linux; Android 9; KFMAWI) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Silk/108.4.6 like Chrome/108.0.5359.220 Safari/537.36",
        "Amazon Silk", "108", "Android", "9", "tablet",
    ),
    (
        "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
        "Googlebot", "2", None, None, "bot",
    ),
    (
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; "
        "+http://www.bing.com/bingbot.htm) Chrome/116.0.1938.76 Safari/537.36",
        "bingbot", "2", None, None, "bot",
    ),
    (
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
        "HeadlessChrome/120.0.0.0 Safari/537.36",
        "HeadlessChrome", "120", "Linux", None, "bot",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("ua", "browser", "major", "os", "os_version", "device"), AGENTS)
def test_user_agents(ua, browser, major, os, os_version, device):
    assert enrich.agent(ua) == enrich.Agent(browser, major, os, os_version, device)


def test_bots_come_from_the_maintained_crawler_list_too():
    # Not caught by our own patterns; listed by crawler-user-agents.
    for listed in ("Mozilla/5.0 (compatible; Yeti/1.1; +http://naver.me/spd)", "ia_archiver"):
        assert not is_bot_agent(listed)
        assert enrich.agent(listed).device == "bot"
    assert enrich.agent(None) == enrich.NO_AGENT and enrich.agent("").device is None


@pytest.mark.parametrize(
    ("ip", "country"),
    [
        ("8.8.8.8", "US"),
        ("81.2.69.142", "GB"),
        ("2a02:8108::1", "DE"),
        ("::ffff:81.2.69.142", "GB"),  # IPv4-mapped
        ("10.0.0.1", None),  # private
        ("127.0.0.1", None),
        ("fe80::1", None),
        ("not an ip", None),
        (None, None),
    ],
)
def test_countries(ip, country):
    assert enrich.country(ip) == country


@pytest.mark.parametrize(
    ("header", "language"),
    [
        ("de-DE,de;q=0.9,en;q=0.8", "de-DE"),
        ("en", "en"),
        ("fr_ca", "fr-CA"),
        ("zh-Hant-TW,zh;q=0.8", "zh-Hant"),
        ("*", None),
        ("", None),
    ],
)
def test_languages(header, language):
    assert enrich.language(header) == language


SHOP = "https://shop.example/"


@pytest.mark.parametrize(
    ("url", "referrer", "expected"),
    [
        (SHOP, None, ("(direct)", "direct", None)),
        (SHOP + "b", SHOP + "a", ("(internal)", "internal", None)),
        (SHOP, "https://www.google.co.uk/search?q=grinder", ("Google", "search", None)),
        (SHOP, "https://www.google.com/", ("Google", "search", None)),
        (SHOP, "https://duckduckgo.com/", ("DuckDuckGo", "search", None)),
        (SHOP, "https://www.bing.com/search?q=x", ("Bing", "search", None)),
        (SHOP, "https://t.co/abc", ("X (Twitter)", "social", None)),
        (SHOP, "https://l.facebook.com/l.php?u=x", ("Facebook", "social", None)),
        (SHOP, "https://news.ycombinator.com/item?id=1", ("Hacker News", "social", None)),
        (SHOP, "https://www.reddit.com/r/coffee", ("Reddit", "social", None)),
        (SHOP, "https://mail.google.com/mail/u/0/", ("Gmail", "email", None)),
        (SHOP, "https://outlook.live.com/mail/0/", ("Outlook", "email", None)),
        (SHOP, "https://blog.example.org/post", ("blog.example.org", "referral", None)),
        (
            SHOP + "?utm_source=newsletter&utm_medium=Email&utm_campaign=spring",
            "https://mail.google.com/",
            ("newsletter", "email", "spring"),
        ),
        (SHOP + "?gclid=abc", "https://www.google.com/", ("Google", "cpc", None)),
        (SHOP + "?msclkid=abc", None, ("Bing", "cpc", None)),
        (SHOP + "?fbclid=abc", "https://m.facebook.com/", ("Facebook", "social", None)),
        (SHOP + "?utm_campaign=only", None, ("(direct)", "direct", "only")),
    ],
)
def test_acquisition(url, referrer, expected):
    found = enrich.acquisition(url, referrer)
    assert (found.source, found.medium, found.campaign) == expected


def test_segment_campaign_fills_what_the_url_lacks():
    found = enrich.acquisition(
        SHOP + "?utm_campaign=url", None, {"utm_source": "seg", "utm_campaign": "ctx"}
    )
    assert (found.source, found.medium, found.campaign) == ("seg", None, "url")


# --- on the real stack -------------------------------------------------------------


def client_rows(site, user_key: str) -> list[dict]:
    """Every column of a user's user_sessions rows."""
    statement = prepare("SELECT * FROM {ks}.user_sessions WHERE site_id = ? AND user_key = ?")
    return list(cassandra_session().execute(statement, (site.id, user_key)))


IPHONE = AGENTS[3][0]
pytestmark_db = pytest.mark.django_db(databases=["default", "cassandra"])


@pytestmark_db
def test_a_session_through_collect_gets_its_dimensions(client, site, token, analyst):
    now = timezone.now().replace(microsecond=0)
    landing = event(
        now - timedelta(minutes=3),
        anon="enrich-1",
        url=SHOP + "?utm_source=newsletter&utm_medium=email&utm_campaign=spring&utm_term=beans",
        referrer="https://mail.google.com/",
        viewport=390,
    )
    later = event(now - timedelta(minutes=2), anon="enrich-1", url=SHOP + "cart", referrer=SHOP)
    response = post(
        client,
        site,
        [landing, later],
        HTTP_USER_AGENT=IPHONE,
        REMOTE_ADDR="81.2.69.142",
        HTTP_ACCEPT_LANGUAGE="en-GB,en;q=0.9",
    )
    assert response.status_code == 200 and response.json()["accepted"] == 2
    [summary] = user_sessions.session_list(site_id=site.id, user_key="enrich-1")
    dims = {k: summary[k] for k in user_sessions.columns_of()}
    assert dims == {
        "browser": "Mobile Safari",
        "browser_version": "17",
        "os": "iOS",
        "os_version": "17.5",
        "device": "mobile",
        "country": "GB",
        "language": "en-GB",
        "source": "newsletter",
        "medium": "email",
        "campaign": "spring",
        "term": "beans",
        "content": None,
        "viewport": "<640",
    }
    # Only the country and the /24 are kept of the address; of the agent, what it derives.
    stored = json.dumps(
        user_sessions.session_list(site_id=site.id, user_key="enrich-1"), default=str
    )
    assert "81.2.69.142" not in stored and "15E148" not in stored
    [raw] = client_rows(site, "enrich-1")
    assert raw["user_agent"] is None and raw["ip_prefix"] == "81.2.69.0"
    api = client.get(f"/api/sites/{site.id}/users/enrich-1/sessions", **auth(token)).json()
    assert {k: api["sessions"][0][k] for k in user_sessions.columns_of()} == dims
    page = client.get(reverse("sessions_app:session", args=[site.id, summary["session_id"]]))
    html = " ".join(page.content.decode().split())
    assert "newsletter / email · campaign spring" in html
    assert "mobile · Mobile Safari 17 · iOS 17.5 · GB · en-GB" in html
    profile = client.get(reverse("sessions_app:user-profile", args=[site.id, "enrich-1"]))
    assert "mobile · Mobile Safari · GB" in " ".join(profile.content.decode().split())


@pytestmark_db
def test_an_earlier_landing_that_arrives_late_moves_the_acquisition(client, site):
    now = timezone.now().replace(microsecond=0)
    second = event(now - timedelta(minutes=5), anon="enrich-2", url=SHOP + "b", referrer=SHOP)
    assert post(client, site, [second]).json()["accepted"] == 1
    [summary] = user_sessions.session_list(site_id=site.id, user_key="enrich-2")
    assert (summary["source"], summary["medium"]) == ("(internal)", "internal")
    first = event(
        now - timedelta(minutes=8),
        anon="enrich-2",
        url=SHOP,
        referrer="https://duckduckgo.com/",
    )
    assert post(client, site, [first]).json()["accepted"] == 1
    [summary] = user_sessions.session_list(site_id=site.id, user_key="enrich-2")
    assert (summary["source"], summary["medium"]) == ("DuckDuckGo", "search")
    assert summary["entry_url"] == SHOP


@pytestmark_db
def test_a_session_begun_server_side_takes_the_browsers_dimensions(client, site):
    now = timezone.now().replace(microsecond=0)
    identify = event(now - timedelta(minutes=4), anon="enrich-3", kind="custom", name="signup")
    del identify["url"]
    assert post(client, site, [identify], HTTP_USER_AGENT="server-sdk/1.0").json()["accepted"]
    view = event(now - timedelta(minutes=3), anon="enrich-3", url=SHOP, referrer="https://t.co/x")
    assert post(client, site, [view], HTTP_USER_AGENT=IPHONE).json()["accepted"] == 1
    [summary] = user_sessions.session_list(site_id=site.id, user_key="enrich-3")
    assert (summary["device"], summary["browser"]) == ("mobile", "Mobile Safari")
    assert (summary["source"], summary["medium"]) == ("X (Twitter)", "social")


@pytestmark_db
def test_a_segment_events_own_context_beats_the_sdk_servers(client, site, token):
    import base64

    now = timezone.now().replace(microsecond=0)
    body = {
        "batch": [
            {
                "type": "page",
                "messageId": "enrich-seg-1",
                "anonymousId": "enrich-seg",
                "timestamp": (now - timedelta(minutes=2)).isoformat(),
                "properties": {"url": SHOP + "pricing", "referrer": "https://www.bing.com/"},
                "context": {
                    "userAgent": IPHONE,
                    "ip": "2a02:8108::1",
                    "locale": "de-DE",
                    "campaign": {"name": "launch", "source": "partner", "medium": "referral"},
                },
            }
        ]
    }
    key = base64.b64encode(f"{site.key}:".encode()).decode()
    response = client.post(
        "/v1/batch",
        json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Basic {key}",
        HTTP_USER_AGENT="analytics-python/2.3.3",
        REMOTE_ADDR="8.8.8.8",
    )
    assert response.status_code == 200 and response.json()["accepted"] == 1, response.content
    [summary] = user_sessions.session_list(site_id=site.id, user_key="enrich-seg")
    assert (summary["device"], summary["os"], summary["country"], summary["language"]) == (
        "mobile",
        "iOS",
        "DE",
        "de-DE",
    )
    assert (summary["source"], summary["medium"], summary["campaign"]) == (
        "partner",
        "referral",
        "launch",
    )
    events = client.get(
        f"/api/sites/{site.id}/sessions/{summary['session_id']}/events", **auth(token)
    ).json()["events"]
    assert events[0]["context"]["country"] == "DE" and "2a02:8108::1" not in json.dumps(events)


@pytestmark_db
def test_with_enrichment_off_the_collector_is_as_before(client, site, settings):
    """INGEST_ENRICHMENT=false (the bench's baseline): no dimensions, bots as before."""
    settings.INGEST_ENRICHMENT = False
    now = timezone.now().replace(microsecond=0)
    view = event(now - timedelta(minutes=1), anon="enrich-off", url=SHOP + "?utm_source=x")
    assert post(client, site, [view], HTTP_USER_AGENT=IPHONE).json()["accepted"] == 1
    [summary] = user_sessions.session_list(site_id=site.id, user_key="enrich-off")
    assert {k: summary[k] for k in user_sessions.columns_of()} == dict.fromkeys(
        user_sessions.columns_of()
    )
    bot = event(now - timedelta(minutes=1), anon="enrich-off-bot")
    post(client, site, [bot], HTTP_USER_AGENT="Mozilla/5.0 (compatible; Googlebot/2.1)")
    [crawler] = user_sessions.session_list(site_id=site.id, user_key="enrich-off-bot")
    assert crawler["is_bot"] is True


VIEWPORTS = [(320, "<640"), (639, "<640"), (640, "640-1024"), (1024, "640-1024"), (1025, ">1024")]


@pytest.mark.parametrize(("width", "label"), [*VIEWPORTS, (None, None)])
def test_viewport_classes(width, label):
    assert enrich.viewport_class(width) == label


@pytestmark_db
@pytest.mark.parametrize("bad", ["wide", 0, -5, 20_001, 12.5, True])
def test_a_bad_viewport_is_rejected_with_its_field(client, site, bad):
    now = timezone.now().replace(microsecond=0)
    good = event(now - timedelta(minutes=1), anon="enrich-vp")
    wrong = event(now - timedelta(minutes=1), anon="enrich-vp", viewport=bad)
    answer = post(client, site, [good, wrong]).json()
    assert answer["accepted"] == 1
    [rejected] = answer["rejected"]
    assert rejected["index"] == 1 and rejected["reason"].startswith("events[1].viewport:")


@pytestmark_db
@pytest.mark.parametrize(("origin", "country"), [(None, None), ("https://shop.example", "US")])
def test_a_server_side_sdks_own_address_is_not_the_visitors(client, site, origin, country):
    """Without an Origin the Segment request comes from the customer's server: its address
    says nothing about the visitor. From a browser (analytics.js) it does."""
    import base64

    key = base64.b64encode(f"{site.key}:".encode()).decode()
    user = f"enrich-server-{bool(origin)}"
    at = timezone.now().isoformat()
    message = {
        "type": "track",
        "event": "signup",
        "userId": user,
        "messageId": user,
        "timestamp": at,
    }
    headers = {"HTTP_AUTHORIZATION": f"Basic {key}", "REMOTE_ADDR": "8.8.8.8"}
    if origin:
        headers["HTTP_ORIGIN"] = origin
    response = client.post(
        "/v1/batch", json.dumps({"batch": [message]}), content_type="application/json", **headers
    )
    assert response.status_code == 200 and response.json()["accepted"] == 1, response.content
    [summary] = user_sessions.session_list(site_id=site.id, user_key=user)
    assert summary["country"] == country
    [row] = client_rows(site, user)
    assert row["ip_prefix"] == ("8.8.8.0" if origin else None)
