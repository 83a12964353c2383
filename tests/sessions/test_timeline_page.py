"""The timeline page shows the product's own events where they mean something: a page
view's `$vitals` as its page's speeds, a `$pageleave` as how far it was scrolled, an
`$identify` as who; none of them is a row of raw key=value text, a replay mark or a
funnel builder's suggestion."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessions_app.domain.goals.kinds import STEP_KINDS
from sessions_app.features.replays.player import player_island
from sessions_app.foundation.core import eventnames
from sessions_app.foundation.tables import user_sessions
from tests.support.events import event, minutes, post

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

SHOP = "https://shop.example"


def _visit(client, site, start):
    """One identified visit: home (a signup, an identify, its vitals and leave), pricing."""
    pricing = SHOP + "/pricing"
    events = [
        event(start, anon="ada", user_id="u-42", url=SHOP + "/"),
        event(
            start + timedelta(seconds=5), kind="custom", anon="ada", user_id="u-42", name="signup"
        ),
        event(
            start + timedelta(seconds=9),
            kind="custom",
            anon="ada",
            user_id="u-42",
            name="$identify",
            props={"email": "ada@example.com", "name": "Ada"},
        ),
        event(
            start + timedelta(seconds=20),
            kind="custom",
            anon="ada",
            user_id="u-42",
            name="$vitals",
            props={"pageview": "v1", "lcp": 2100, "inp": 180, "cls": 0.05},
        ),
        event(
            start + timedelta(seconds=21),
            kind="custom",
            anon="ada",
            user_id="u-42",
            name="$pageleave",
            props={"pageview": "v1", "scroll": 80},
        ),
        event(start + timedelta(seconds=22), anon="ada", user_id="u-42", url=pricing),
    ]
    assert post(client, site, events).status_code == 200
    [summary] = user_sessions.session_list(site_id=site.id, user_key="u-42")
    return summary["session_id"]


def test_vitals_scroll_and_identify_are_shown_as_what_they_mean(client, analyst, site, live_now):
    session_id = _visit(client, site, live_now - minutes(10))
    html = client.get(f"/sites/{site.id}/sessions/{session_id}/").content.decode()
    rows = re.findall(r'<tr class="event [^"]*"', html)
    assert len(rows) == 4  # two page views, signup, identify: no vitals nor leave row
    assert "$vitals" not in html and "$pageleave" not in html and "$identify" not in html
    assert "lcp=" not in html and "scroll=" not in html  # no raw key=value text
    heading = html.split('<tr class="page-heading">', 2)[1]
    assert "LCP 2.10 s · INP 180 ms · CLS 0.050" in heading and "scrolled 80%" in heading
    assert f"/sites/{site.id}/performance/page?page=/" in heading
    assert "identified as <strong>u-42 · Ada · ada@example.com</strong>" in html
    assert ">signup</strong>" in html  # the site's own custom event is a row as before


def _mark_events(names: list[tuple[str, str | None]]) -> list[dict]:
    from django.utils import timezone

    at = timezone.now().replace(microsecond=0)
    return [
        {"event_id": uuid.uuid4(), "type": kind, "name": name, "ts": at, "layout": None}
        for kind, name in names
    ]


def test_replay_marks_leave_out_internal_events_and_draw_clicks_last(site):
    events = _mark_events(
        [
            ("click", None),
            ("custom", "signup"),
            ("custom", "$vitals"),
            ("custom", "$pageleave"),
            ("custom", "$identify"),
            ("pageview", None),
        ]
    )
    marks = player_island(site, uuid.uuid4(), events)["marks"]
    # one moment: the custom event drawn first, the click last (on top)
    assert [m["tag"] for m in marks] == ["custom", "pageview", "click"]
    assert all("ms" in e for e in events)  # every row can still seek the player


@settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck))
@given(name=st.one_of(st.sampled_from(sorted(eventnames.INTERNAL)), st.text(max_size=20)))
def test_the_funnel_builder_never_suggests_an_internal_event(name):
    suggested = STEP_KINDS["event"].suggestion({"type": "custom", "name": name})
    if name in eventnames.INTERNAL or not name:
        assert suggested is None
    else:
        assert suggested == name
