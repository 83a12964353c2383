"""Where replays show up: the explorer's "has replay" filter against a
brute force over sessions with and without chunks sent through the real collector (alone,
with another filter, on the API, the page and the dashboard), its bad values, the mark
written once with its TTL, erasure; rage/dead click samples and funnel drop-offs linking
to the replay at their moment; the timeline's ?t=."""

from __future__ import annotations

import json
import random
import re
import uuid
from datetime import datetime, timedelta
from html import unescape
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from sessions_app import tasks
from sessions_app.domain.erasure import erasures
from sessions_app.domain.ledger import policies
from sessions_app.features.analysis import explorer
from sessions_app.features.funnels import defs
from sessions_app.features.replays import marks
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.core.ids import time_uuid
from sessions_app.foundation.core.redis_client import redis_client
from sessions_app.foundation.models import ErasureRequest
from sessions_app.foundation.tables import retention_specs, site_sessions, user_sessions
from tests.support.accounts import auth, member
from tests.support.events import ORIGIN, event, minutes, post
from tests.support.replays import chunk, send

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

VISITORS = 15
MARK = (
    "SELECT replay, WRITETIME(replay) AS written, TTL(replay) AS left FROM {ks}.site_sessions"
    " WHERE site_id = ? AND day = ? AND shard = ? AND session_id = ?"
)


def _ms(ts: datetime) -> int:
    return round(ts.timestamp() * 1000)


def _session(site, anon: str) -> uuid.UUID:
    [session] = user_sessions.session_list(site_id=site.id, user_key=anon)
    return session["session_id"]


@pytest.fixture
def recorded(client, replay_site, live_now) -> dict[uuid.UUID, dict[str, bool]]:
    """Visitors' sessions through /collect, some on /pricing, a random few with 1-3 replay
    chunks through POST /replay: what each session is, by its id (the brute force's truth)."""
    rng = random.Random(41)
    truth: dict[uuid.UUID, dict[str, bool]] = {}
    for i in range(VISITORS):
        anon, at = f"v{i}", live_now - minutes(40) + timedelta(seconds=97 * i)
        pricing = rng.random() < 0.5
        url = ORIGIN + ("/pricing" if pricing else "/")
        response = post(client, replay_site, [event(at, anon=anon, url=url)])
        assert response.status_code == 200, response.content
        chunks = rng.choice([0, 0, 1, 3])
        for seq in range(chunks):
            body = chunk(replay_site, at + timedelta(seconds=seq), seq=seq, page=at, anon=anon)
            assert send(client, replay_site, body).status_code == 200
        truth[_session(replay_site, anon)] = {"pricing": pricing, "replay": chunks > 0}
    both = [t for t in truth.values() if t["replay"] and t["pricing"]]
    assert 0 < len(both) < sum(t["replay"] for t in truth.values()) < VISITORS
    return truth


def _explored(site, **params: str) -> list[uuid.UUID]:
    query = explorer.explorer_query_parse({"period": "24h", **params}, now=timezone.now())
    page = explorer.sessions_explore(site_id=site.id, query=query, limit=200)
    return [s["session_id"] for s in page.sessions]


def test_the_replay_filter_finds_exactly_the_recorded_sessions(replay_site, recorded):
    with_replay = {s for s, t in recorded.items() if t["replay"]}
    assert set(_explored(replay_site, replay="true")) == with_replay
    assert set(_explored(replay_site, replay="1", page="/pricing")) == {
        s for s in with_replay if recorded[s]["pricing"]
    }
    assert set(_explored(replay_site, replay="any")) == set(recorded)
    assert set(_explored(replay_site)) == set(recorded)


def test_the_api_page_and_dashboard_take_the_filter(client, replay_site, recorded, token):
    with_replay = {s for s, t in recorded.items() if t["replay"]}
    params = {"period": "24h", "replay": "true"}
    body = client.get(f"/api/sites/{replay_site.id}/sessions", params, **auth(token)).json()
    assert {uuid.UUID(s["session_id"]) for s in body["sessions"]} == with_replay
    assert body["filters"]["replay"] == "true"
    member(User.objects.create_user("ana", password="pw-ana-123"), replay_site)
    client.login(username="ana", password="pw-ana-123")
    page = client.get(f"/sites/{replay_site.id}/sessions/", params)
    html = page.content.decode()
    assert page.status_code == 200 and '<option value="true" selected>' in html
    assert html.count('class="tag replay"') == len(with_replay)  # each listed: ▶ replay
    for session_id in with_replay:
        assert f"/sessions/{session_id}/#replay" in html
    assert "replay=true" in html  # the share link carries it
    dashboard = client.get(f"/sites/{replay_site.id}/", params)
    assert dashboard.status_code == 200 and "Has a replay" in dashboard.content.decode()


@pytest.mark.parametrize("value", ["false", "no", "0", "maybe"])
def test_a_bad_replay_value_is_refused_naming_it(client, site, token, value):
    response = client.get(f"/api/sites/{site.id}/sessions", {"replay": value}, **auth(token))
    assert response.status_code == 400 and response.json()["field"] == "replay"
    assert "true (sessions with a replay) or any" in response.json()["error"]
    member(User.objects.create_user("ana", password="pw-ana-123"), site)
    client.login(username="ana", password="pw-ana-123")
    page = client.get(f"/sites/{site.id}/sessions/", {"replay": value})
    assert page.status_code == 400 and "replay: true (sessions with a replay)" in page.text


def test_a_session_is_marked_once_with_the_recordings_ttl(client, replay_site, live_now):
    replay_site.replay_retention_days = 7
    replay_site.save()
    at = live_now - minutes(3)
    assert post(client, replay_site, [event(at)]).status_code == 200
    session_id = _session(replay_site, "anon-1")
    key = site_sessions.row_key(replay_site.id, session_id)
    read = prepare(MARK)
    assert cassandra_session().execute(read, key).one()["replay"] is None
    assert send(client, replay_site, chunk(replay_site, at)).status_code == 200
    first = cassandra_session().execute(read, key).one()
    assert first["replay"] is True and 7 * 86_400 - 60 < first["left"] <= 7 * 86_400
    assert send(client, replay_site, chunk(replay_site, at, seq=1)).status_code == 200
    assert cassandra_session().execute(read, key).one()["written"] == first["written"]
    redis_client().delete(marks.marked_key(replay_site.id, session_id))  # no Redis memory
    assert send(client, replay_site, chunk(replay_site, at, seq=2)).status_code == 200
    assert cassandra_session().execute(read, key).one()["written"] > first["written"]


def test_the_mark_never_outlives_the_session_row(site):
    keep = policies.ttl_seconds(retention_specs.SESSIONS)
    now = timezone.now()
    old = time_uuid(now - timedelta(seconds=keep - 500), "old")
    assert 400 < marks.mark_ttl(site, old, now=now) <= 500
    gone = time_uuid(now - timedelta(seconds=keep + 10), "gone")
    assert marks.mark_ttl(site, gone, now=now) < 0
    assert marks.replay_mark(site, gone, now=now) is False
    assert (
        marks.mark_ttl(site, time_uuid(now, "new"), now=now) == site.replay_retention_days * 86_400
    )


def test_erasing_a_visitor_takes_their_session_off_the_filter(
    client, replay_site, recorded, settings
):
    settings.SUPPRESSION_CACHE_SECONDS = 0
    settings.ERASURE_SETTLE_SECONDS = 0
    with_replay = {s for s, t in recorded.items() if t["replay"]}
    erased = sorted(with_replay)[0]
    anon = next(f"v{i}" for i in range(VISITORS) if _session(replay_site, f"v{i}") == erased)
    root = User.objects.create_superuser("root", password="pw-root-123")
    request = erasures.erasure_request(
        site=replay_site, key=anon, kind=ErasureRequest.ANONYMOUS_ID, requested_by=root
    )
    tasks.erase_user.apply(args=[str(request.pk)]).get()
    assert set(_explored(replay_site, replay="true")) == with_replay - {erased}
    key = site_sessions.row_key(replay_site.id, erased)
    assert cassandra_session().execute(prepare(MARK), key).one() is None


# ---- links to the replay at a moment ---------------------------------------------------


def _island(client, html: str) -> dict[str, Any]:
    """The player's data, read from the frame the timeline page embeds."""
    frame = re.search(r'<iframe class="replay-frame" src="([^"]+)"', html)
    assert frame, "no player on the page"
    player = client.get(unescape(frame.group(1))).text
    found = re.search(r'<script id="replay-data" type="application/json">(.*?)</script>', player)
    assert found, "no player in the frame"
    return json.loads(found.group(1))


def test_rage_and_dead_click_samples_link_to_the_replay_at_their_moment(
    client, replay_site, live_now, analyst
):
    t0 = live_now - minutes(10)
    clicks = {}
    for anon, flag in (("watched", "rage"), ("unwatched", "dead")):
        view = event(t0, anon=anon, viewport=1440)
        click = event(
            t0 + timedelta(seconds=20),
            kind="click",
            anon=anon,
            viewport=1440,
            element={"tag": "button", "selector": "button#buy"},
            pos={"x": 0.5, "y": 100},
            **{flag: True},
        )
        assert post(client, replay_site, [view, click]).status_code == 200
        clicks[anon] = _ms(t0 + timedelta(seconds=20))
    body = chunk(replay_site, t0, anon="watched", n=30)
    assert send(client, replay_site, body).status_code == 200
    watched, unwatched = _session(replay_site, "watched"), _session(replay_site, "unwatched")
    html = client.get(
        f"/sites/{replay_site.id}/heatmaps/", {"page": "/", "vp": ">1024", "period": "24h"}
    ).content.decode()
    # The rage and dead clicks table's row of the button (Top clicks names it too).
    row = re.search(r'<tr class="element"><td [^>]*title="button#buy">.*?</tr>', html, re.S)
    assert row, "no rage or dead clicks row for button#buy"
    row = row.group(0)
    samples = re.findall(r'class="sample" href="/sites/[^/]+/sessions/([^/]+)/#event-', row)
    assert sorted(samples) == sorted([str(watched), str(unwatched)])
    links = re.findall(
        r'class="tag replay" href="(/sites/[^/]+/sessions/([^/]+)/\?t=(\d+)#replay)"', row
    )
    assert [(s, int(t)) for _, s, t in links] == [(str(watched), clicks["watched"])]
    timeline = client.get(links[0][0].split("#")[0])
    assert (
        timeline.status_code == 200 and _island(client, timeline.text)["seek"] == clicks["watched"]
    )
    plain = client.get(f"/sites/{replay_site.id}/sessions/{watched}/")
    assert _island(client, plain.text)["seek"] is None


def test_funnel_drop_offs_link_to_the_replay_at_their_last_step(
    client, replay_site, live_now, analyst, settings, token
):
    settings.FUNNEL_INLINE_DAYS = 100
    t0 = live_now - minutes(20)
    for anon, done in (("left", False), ("left-unwatched", False), ("bought", True)):
        events = [event(t0, anon=anon, url=ORIGIN + "/")]
        if done:
            events.append(event(t0 + minutes(1), kind="custom", anon=anon, name="checkout"))
        assert post(client, replay_site, events).status_code == 200
    for anon in ("left", "bought"):
        assert send(client, replay_site, chunk(replay_site, t0, anon=anon)).status_code == 200
    steps = [
        {"kind": "pageview", "path": "/", "match": "exact"},
        {"kind": "event", "name": "checkout"},
    ]
    funnel = defs.funnel_create(site=replay_site, name="buy", definition={"steps": steps})
    url = f"/sites/{replay_site.id}/funnels/{funnel.pk}/units/"
    dropped = client.get(url, {"period": "24h", "step": 1, "outcome": "dropped"})
    html = dropped.content.decode().replace("&amp;", "&")
    assert dropped.status_code == 200 and html.count('class="timeline-link"') == 2
    left = _session(replay_site, "left")
    links = re.findall(r'class="tag replay" href="([^"]+)"', html)
    assert links == [
        f"/sites/{replay_site.id}/sessions/{left}/?funnel={funnel.pk}&chain={_ms(t0)}"
        f"&t={_ms(t0)}#replay"
    ]
    timeline = client.get(links[0].split("#")[0])
    assert _island(client, timeline.text)["seek"] == _ms(t0)
    assert timeline.text.count("funnel-chain") == 1  # the steps still marked
    reached = client.get(url, {"period": "24h", "step": 2, "outcome": "reached"}).text
    bought, last = _session(replay_site, "bought"), _ms(t0 + minutes(1))
    opened = f"/sessions/{bought}/?funnel={funnel.pk}&amp;chain={_ms(t0)},{last}&amp;t={last}"
    assert f'class="tag replay" href="/sites/{replay_site.id}{opened}#replay"' in reached
    # The API says the same of each unit.
    api = f"/api/sites/{replay_site.id}/funnels/{funnel.pk}/units"
    units = client.get(api, {"period": "24h", "step": 1, "outcome": "dropped"}, **auth(token))
    assert {u["session_id"]: u["replay"] for u in units.json()["units"]} == {
        str(left): True,
        str(_session(replay_site, "left-unwatched")): False,
    }


@pytest.mark.parametrize("value", ["soon", "-5", "\uff11\uff12", "9" * 16])
def test_a_bad_moment_is_named_and_the_replay_opens_at_its_start(
    client, replay_site, live_now, analyst, value
):
    at = live_now - minutes(2)
    assert post(client, replay_site, [event(at)]).status_code == 200
    assert send(client, replay_site, chunk(replay_site, at)).status_code == 200
    page = client.get(
        f"/sites/{replay_site.id}/sessions/{_session(replay_site, 'anon-1')}/", {"t": value}
    )
    assert page.status_code == 200
    assert "t: the moment to play from, in milliseconds since 1970" in page.text
    assert 'role="alert"' in page.text and _island(client, page.text)["seek"] is None
