"""Any property renders: whatever names and values a visitor sends, every page and export
that shows them answers 200 with the value visible, HTML-escaped.

Events go through the real collector (POST /collect, and /v1/identify for traits), and the
pages are the real ones. Names such as "items" or "keys" once shadowed the dict's methods
in the templates (a purchase's `items` made its timeline a 500).
"""

from __future__ import annotations

import csv
import io
import json
import os
import string
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import orjson
import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from sessions_app.domain.aggregates.labels import click_label, click_text
from sessions_app.domain.ledger import sites
from sessions_app.domain.sessions import lists
from sessions_app.foundation.tables import user_sessions
from tests.support import hypothesis as profiles
from tests.support.events import ORIGIN, event, post

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

SORTED = orjson.OPT_SORT_KEYS
EXAMPLES = int(os.environ.get("ANY_PROPERTY_EXAMPLES", "12"))
SHADOWING = [
    "items",
    "keys",
    "values",
    "get",
    "__class__",
    "count",
    "pop",
    "update",
    "copy",
    "__dict__",
    "0",
    "",
    "<b>x</b>",
    "a.b",
    "k=v, w",
]

# Any Unicode but lone surrogates (not JSON); control characters only where a field
# allows them (props and traits are JSON values, any string goes).
unicode = st.characters(codec="utf-8", exclude_categories=["Cs"])
printable = st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"])
names = st.sampled_from(SHADOWING) | st.text(unicode, max_size=24)
# 3,000 characters that fit the 4 KB a props object may take as JSON.
long_text = st.text(string.ascii_letters + string.digits + " <>&'", min_size=1, max_size=8).map(
    lambda s: (s * 3000)[:3000]
)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(unicode, max_size=40)
)
containers = st.lists(scalars, max_size=3) | st.dictionaries(names, scalars, max_size=3)
values = scalars | long_text | containers | st.lists(containers, max_size=2)
props_objects = st.dictionaries(names, values, min_size=1, max_size=6).filter(
    lambda p: len(orjson.dumps(p)) <= 4096
)
user_ids = st.text(printable, min_size=1, max_size=40).filter(str.strip)
titles = st.text(printable, min_size=1, max_size=80).filter(str.strip)
element_texts = st.text(printable, min_size=1, max_size=128).filter(str.strip)
paths = st.text(printable.filter(lambda c: c not in "#?"), max_size=60)


def examples(n: int = EXAMPLES) -> settings:
    return settings(
        max_examples=profiles.examples(n),
        deadline=None,
        # Each example writes and reads the real stack: shrinking a failure could take
        # many minutes, so the first failing example is reported as found.
        phases=[Phase.explicit, Phase.reuse, Phase.generate],
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


def shown(value: Any) -> str:
    """A value as the pages show it: a string as sent, anything else as compact JSON
    with sorted keys."""
    return value if isinstance(value, str) else orjson.dumps(value, option=SORTED).decode()


def _text(response) -> str:
    assert response.status_code == 200, (response.status_code, response.content[:300])
    if response.streaming:
        return b"".join(response.streaming_content).decode()
    return response.content.decode()


def _csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text, newline="")))


def as_cell(text: str) -> str:
    """Text as a CSV export writes it: a cell a spreadsheet would run as a formula
    starts with an apostrophe."""
    return "'" + text if text.startswith(("=", "+", "-", "@", "\t", "\r")) else text


def from_cell(cell: str) -> Any:
    """A JSON cell of a CSV export: empty for null, an apostrophe before a formula's start."""
    return json.loads(cell.removeprefix("'")) if cell else None


@pytest.fixture
def admin_client() -> Client:
    client = Client()
    client.force_login(User.objects.create_superuser("root", password="pw-root-123"))
    return client


def _site():
    return sites.site_create(name="Shop", origins=[ORIGIN])


def _visit(site, *, user_id: str, path: str, title: str, text: str, props: dict) -> str:
    """A page view, a click and a purchase with these props; the session's id."""
    now = timezone.now()
    url = f"{ORIGIN}/{path}"
    who = {"anon": "anon-any", "user_id": user_id}
    sent = [
        event(now - timedelta(minutes=3), url=url, title=title, **who),
        event(
            now - timedelta(minutes=2),
            kind="click",
            url=url,
            element={"tag": "button", "text": text, "selector": "button.buy"},
            **who,
        ),
        event(
            now - timedelta(minutes=1), kind="custom", name="purchase", url=url, props=props, **who
        ),
    ]
    response = post(Client(), site, sent)
    assert response.status_code == 200 and response.json()["accepted"] == 3, response.content
    [session] = user_sessions.session_list(site_id=site.id, user_key=user_id)
    return str(session["session_id"])


def _props_visible(html: str, props: dict) -> None:
    for name, value in props.items():
        assert escape(f"{name}={shown(value)}") in html, (name, value)


def test_a_purchase_with_items_opens_its_timeline(admin_client):
    """The reported 500: the demo shop's purchase sends its cart's size as `items`."""
    site = _site()
    props = {"value": 42.5, "currency": "EUR", "items": 2}
    session_id = _visit(
        site, user_id="buyer", path="checkout", title="Pay", text="Buy", props=props
    )
    html = _text(admin_client.get(f"/sites/{site.id}/sessions/{session_id}/"))
    assert '<code class="props">currency=EUR, items=2, value=42.5</code>' in html
    activity = _text(admin_client.get(f"/sites/{site.id}/users/buyer/activity"))
    assert "<code>currency=EUR items=2 value=42.5 </code>" in activity


def test_names_of_dict_methods_and_nested_values_render_as_sent(admin_client):
    site = _site()
    props = {
        "keys": [{"sku": "A-1", "qty": 2}],
        "values": None,
        "get": "x",
        "__class__": {"a": [1, 2]},
        "count": 1.5,
        "items": {"b": True},
        "total": "<b>€9</b>",
    }
    session_id = _visit(site, user_id="buyer", path="cart", title="Cart", text="Buy", props=props)
    html = _text(admin_client.get(f"/sites/{site.id}/sessions/{session_id}/"))
    assert "keys=[{&quot;qty&quot;:2,&quot;sku&quot;:&quot;A-1&quot;}]" in html
    assert "values=null" in html and "get=x" in html and "count=1.5" in html
    assert "__class__={&quot;a&quot;:[1,2]}" in html
    assert "items={&quot;b&quot;:true}" in html
    assert "total=&lt;b&gt;€9&lt;/b&gt;" in html


@examples()
@given(user_id=user_ids, path=paths, title=titles, text=element_texts, props=props_objects)
def test_any_event_data_renders_on_every_page_and_export(
    admin_client, user_id, path, title, text, props
):
    site = _site()
    session_id = _visit(site, user_id=user_id, path=path, title=title, text=text, props=props)
    url = f"{ORIGIN}/{path}"
    parts = urlsplit(url)
    page_path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")

    timeline = _text(admin_client.get(f"/sites/{site.id}/sessions/{session_id}/"))
    _props_visible(timeline, props)
    for value in (user_id, title, text, page_path):
        assert escape(value) in timeline, value

    profile_url = reverse("sessions_app:user-profile", args=[site.id, user_id])
    assert f"<h1>{escape(user_id)}</h1>" in _text(admin_client.get(profile_url))
    activity = _text(admin_client.get(reverse("sessions_app:activity", args=[site.id, user_id])))
    _props_visible(activity, props)
    assert escape(text) in activity

    now = datetime.now(UTC)
    range_ = {
        "start": (now - timedelta(hours=1)).isoformat(),
        "end": (now + timedelta(minutes=1)).isoformat(),
    }
    explorer = _text(admin_client.get(f"/sites/{site.id}/sessions/", range_))
    assert f">{escape(user_id)}</a>" in explorer.split('class="explorer"')[1]  # a profile link
    dashboard = _text(admin_client.get(f"/sites/{site.id}/"))
    assert f">{escape(user_id)}</a>" in dashboard
    paths_page = _text(admin_client.get(f"/sites/{site.id}/paths/", range_))
    assert f">{escape(parts.path)}</a>" in paths_page

    session_export = f"/api/sites/{site.id}/sessions/{session_id}/export"
    activity_export = reverse("api-activity-export", args=[site.id, user_id])
    titled = json.loads(_text(admin_client.get(session_export, {"format": "json"})))[0]
    assert titled["title"] == title
    assert _csv_rows(_text(admin_client.get(session_export)))[0]["title"] == as_cell(title)
    for export in (session_export, activity_export):
        rows = json.loads(_text(admin_client.get(export, {"format": "json"})))
        assert [r["props"] for r in rows] == [None, None, props]
        assert rows[0]["url"] == url and rows[1]["element"]["text"] == text
        rows = _csv_rows(_text(admin_client.get(export, {"format": "csv"})))
        assert from_cell(rows[2]["props"]) == props
        assert from_cell(rows[1]["element"])["text"] == text


def _identify(site, *, user_id: str, traits: dict) -> None:
    body = {
        "writeKey": site.key,
        "userId": user_id,
        "traits": traits,
        "messageId": f"m-{datetime.now(UTC).timestamp()}",
        "timestamp": (timezone.now() - timedelta(seconds=5)).isoformat(),
    }
    response = Client().post("/v1/identify", json.dumps(body), content_type="application/json")
    assert response.status_code == 200 and response.json()["accepted"] == 1, response.content


@examples()
@given(user_id=user_ids, traits=props_objects)
def test_any_trait_renders_on_the_profile_and_its_export(admin_client, user_id, traits):
    site = _site()
    _identify(site, user_id=user_id, traits=traits)
    assert {p["name"] for p in lists.user_properties(site_id=site.id, user_key=user_id)} == set(
        traits
    )
    profile = _text(admin_client.get(reverse("sessions_app:user-profile", args=[site.id, user_id])))
    for name, value in traits.items():
        row = (
            f'<tr><th><code>{escape(name)}</code></th><td class="value">{escape(shown(value))}</td>'
        )
        assert row in profile, (name, value)
    export = reverse("api-properties-export", args=[site.id, user_id])
    got = json.loads(_text(admin_client.get(export, {"format": "json"})))
    assert {p["name"]: p["value"] for p in got} == traits
    rows = _csv_rows(_text(admin_client.get(export, {"format": "csv"})))
    assert {r["name"]: from_cell(r["value"]) for r in rows} == {
        as_cell(name): value for name, value in traits.items()
    }
    # The identify event's timeline says who, its traits under it.
    [session] = user_sessions.session_list(site_id=site.id, user_key=user_id)
    timeline = _text(admin_client.get(f"/sites/{site.id}/sessions/{session['session_id']}/"))
    _props_visible(timeline, traits)


@examples()
@given(user_id=user_ids, selector=element_texts, text=element_texts)
def test_any_user_and_element_renders_in_funnel_units_and_heatmap_samples(
    admin_client, settings, user_id, selector, text
):
    settings.FUNNEL_INLINE_DAYS = 100  # no worker here: every day is scanned in the request
    site = _site()
    now = timezone.now()
    who = {"anon": "anon-any", "user_id": user_id, "viewport": 1366}
    url = f"{ORIGIN}/cart"
    clicked = {"tag": "button", "text": text, "selector": selector}
    sent = [
        event(now - timedelta(minutes=2), url=url, **who),
        event(
            now - timedelta(minutes=1),
            kind="click",
            url=url,
            element=clicked,
            pos={"x": 0.5, "y": 200},
            rage=True,
            **who,
        ),
    ]
    assert post(Client(), site, sent).json()["accepted"] == 2

    heat = _text(admin_client.get(f"/sites/{site.id}/heatmaps/", {"page": "/cart", "vp": ">1024"}))
    # The element by what it said, else (nothing, or its selector again) by its selector.
    said = click_text(clicked)
    said = said if said != click_label(clicked) else None
    name = (
        f'<span class="said">{escape(said)}</span>'
        if said
        else (f'<code class="selector">{escape(selector)}</code>')
    )
    assert f'<td data-label="Element" title="{escape(selector)}">{name}</td>' in heat
    assert heat.count('class="sample" href=') == 1

    form = {
        "name": "Cart to pay",
        "step-1-kind": "pageview",
        "step-1-value": "/cart",
        "step-1-match": "exact",
        "step-2-kind": "event",
        "step-2-value": "pay",
        "count_by": "user",
        "window_unit": "days",
        "window_value": "1",
    }
    assert admin_client.post(f"/sites/{site.id}/funnels/", form).status_code == 302
    funnel = site.funnels.get()
    range_ = {"start": (now - timedelta(hours=1)).isoformat(), "end": now.isoformat()}
    units = _text(
        admin_client.get(
            f"/sites/{site.id}/funnels/{funnel.pk}/units/",
            {**range_, "step": 1, "outcome": "dropped"},
        )
    )
    assert f">{escape(user_id)}</a></td>" in units
