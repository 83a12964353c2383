"""The session timeline page keeps the analyst pages' policy (style-src 'self', no
'unsafe-inline') with a recording: the player runs in a frame of its own
(.../sessions/<session>/player), whose policy alone allows the recorded page's inline
styles and the site's origins, which only this origin may frame, and which answers 404
to whoever may not see the site (docs/replay.md)."""

from __future__ import annotations

import gzip
import json
import re
import uuid
from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.auth.models import User

from sessions_app.domain.ledger import sites
from sessions_app.foundation.tables import user_sessions
from tests.support.accounts import member
from tests.support.events import ORIGIN

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])


def _record(client, site, start) -> uuid.UUID:
    """One recorder chunk of the visit's session; its id."""
    ms = round(start.timestamp() * 1000)
    events = [{"type": 3, "timestamp": ms + i * 1000, "data": {"source": 1}} for i in range(3)]
    body = {
        "site": site.key,
        "chunk": str(uuid.uuid4()),
        "seq": 0,
        "page": ms,
        "start": ms,
        "end": events[-1]["timestamp"],
        "anonymous_id": "anon-1",
        "events": events,
    }
    response = client.post(
        f"/replay?site={site.key}",
        gzip.compress(json.dumps(body).encode()),
        content_type="text/plain",
        HTTP_ORIGIN=ORIGIN,
    )
    assert response.status_code == 200, response.content
    [session] = user_sessions.session_list(site_id=site.id, user_key="anon-1")
    return session["session_id"]


def test_the_timeline_keeps_style_src_self_and_frames_the_player(client, replay_site, visit):
    session_id = _record(client, replay_site, visit)
    client.force_login(member(User.objects.create_user("ana", password="pw-ana-1"), replay_site))
    moment = round((visit + timedelta(seconds=30)).timestamp() * 1000)
    page = client.get(f"/sites/{replay_site.id}/sessions/{session_id}/?t={moment}")
    assert page.status_code == 200
    policy = page["Content-Security-Policy"]
    assert policy == settings.CONTENT_SECURITY_POLICY
    assert "style-src 'self';" in policy and "'unsafe-inline'" not in policy
    assert page["X-Frame-Options"] == "DENY" and "frame-ancestors 'none'" in policy
    [src] = re.findall(r'<iframe class="replay-frame" src="([^"]+)"', page.text)
    assert src == f"/sites/{replay_site.id}/sessions/{session_id}/player?t={moment}"
    assert 'sandbox="allow-scripts allow-same-origin"' in page.text

    player = client.get(src)
    assert player.status_code == 200
    frame_policy = player["Content-Security-Policy"]
    assert f"style-src 'self' 'unsafe-inline' {ORIGIN};" in frame_policy
    assert (
        "script-src 'self';" in frame_policy
        and f"img-src 'self' data: blob: {ORIGIN}" in frame_policy
    )
    assert "frame-ancestors 'self'" in frame_policy and player["X-Frame-Options"] == "SAMEORIGIN"
    island = json.loads(re.search(r'id="replay-data"[^>]*>(.*?)</script>', player.text)[1])
    assert island["api"] == f"/api/sites/{replay_site.id}/sessions/{session_id}/replay"
    assert island["seek"] == moment and len(island["marks"]) == 2


def test_the_player_frame_is_the_sites_only(client, replay_site, visit):
    session_id = _record(client, replay_site, visit)
    url = f"/sites/{replay_site.id}/sessions/{session_id}/player"
    assert client.get(url)["Location"].startswith("/accounts/login/")  # signed out
    other = sites.site_create(name="Other shop", origins=["https://other.example"])
    outsider = member(User.objects.create_user("out", password="pw-out-1"), other, "admin")
    client.force_login(outsider)
    assert client.get(url).status_code == 404
    insider = member(User.objects.create_user("ana", password="pw-ana-1"), replay_site)
    client.force_login(insider)
    assert client.get(url).status_code == 200
    assert client.get(url.replace(str(session_id), str(uuid.uuid4()))).status_code == 404
