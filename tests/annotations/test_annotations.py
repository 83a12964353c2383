"""Annotations (features/annotations): a note on a day or a range, added from a chart's
form or the API by any member, shown on every time chart of the period it falls in,
changed or deleted by its author or a site admin; public ones alone (without authors)
for a share link; bad input named; another site's notes are 404."""

from __future__ import annotations

import html
import json
import re
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser, User
from django.template.loader import render_to_string
from django.test import Client, RequestFactory
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessions_app.domain.accounts import tokens
from sessions_app.domain.jobs.goal_backfill import goal_save
from sessions_app.domain.ledger import sites
from sessions_app.features.annotations import notes
from sessions_app.features.web import periods
from sessions_app.foundation.models import Annotation
from tests.support.accounts import auth, member
from tests.support.hypothesis import examples

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])


def _client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _today() -> date:
    return timezone.now().astimezone(UTC).date()


def _island(page: str) -> dict[str, Any]:
    found = re.search(r'<script id="chart-notes-data" type="application/json">(.*?)</script>', page)
    assert found, "no chart-notes-data island on the page"
    return json.loads(found.group(1))


def _period(first: date, last: date, zone: str = "UTC") -> periods.Period:
    params = {"period": "custom", "from": first.isoformat(), "to": last.isoformat()}
    return periods.period_param(params, zone=periods.site_zone(zone), now=timezone.now())


def test_a_note_added_from_the_dashboards_chart_is_on_its_chart(client, site, analyst):
    today = _today()
    dashboard = f"/sites/{site.id}/?period=30d&compare=off"
    saved = client.post(
        f"/sites/{site.id}/annotations/",
        {"day": today.isoformat(), "note": "  Spring   campaign\nstarted ", "next": dashboard},
    )
    assert saved.status_code == 302 and saved["Location"] == dashboard
    note = Annotation.objects.get(site=site)
    assert (note.day, note.end_day, note.note, note.public, note.created_by) == (
        today,
        None,
        "Spring campaign started",
        False,
        analyst,
    )
    page = client.get(dashboard).content.decode()
    [shown] = _island(page)["notes"]
    assert shown["note"] == "Spring campaign started" and shown["author"] == "ana"
    assert shown["start"] == f"{today.isoformat()}T00:00:00Z"  # the site's day (UTC here)
    assert 'id="note-add"' in page and f'id="note-{note.pk}"' in page
    # A period without the day has no note on its chart.
    gone = client.get(f"/sites/{site.id}/?period=custom&from=2025-01-01&to=2025-01-31")
    assert _island(gone.content.decode())["notes"] == []


def test_every_time_chart_shows_the_periods_notes(client, site, analyst):
    day = _today() - timedelta(days=2)
    note = notes.annotation_save(site=site, user=analyst, day=day, note="Release 4.2")
    goal = goal_save(
        site=site, name="Buy", definition={"kind": "pageview", "path": "/buy"}, now=timezone.now()
    )
    site.vitals = True
    site.save()
    pages = {
        "dashboard": f"/sites/{site.id}/",
        "performance": f"/sites/{site.id}/performance/",
        "goal": f"/sites/{site.id}/goals/{goal.pk}/",
        "cohorts": f"/sites/{site.id}/cohorts/?unit=day",
    }
    for name, url in pages.items():
        response = client.get(url, {"period": "7d"})
        page = response.content.decode()
        assert response.status_code == 200, name
        assert f'id="note-{note.pk}"' in page and "Release 4.2" in page, name
        assert [n["id"] for n in _island(page)["notes"]] == [note.pk], name
    goal_page = client.get(pages["goal"], {"period": "7d"}).content.decode()
    # The goal's bars are drawn on the server: the note is a column behind its day's bar.
    assert '<g class="note-mark"><rect x="12" y="0" width="3" height="48"/>' in goal_page


def test_a_range_is_checked_and_stored_inclusive(client, site, analyst):
    first = _today() - timedelta(days=10)
    client.post(
        f"/sites/{site.id}/annotations/",
        {
            "day": first.isoformat(),
            "end_day": (first + timedelta(days=3)).isoformat(),
            "note": "Sale week",
            "public": "on",
        },
    )
    note = Annotation.objects.get(site=site)
    assert (note.day, note.end_day, note.public) == (first, first + timedelta(days=3), True)
    same = notes.annotation_save(site=site, user=analyst, day=first, end_day=first, note="One")
    assert same.end_day is None  # a range of one day is that day


BAD = [
    ({"note": "x"}, "day"),
    ({"day": "2026-13-01", "note": "x"}, "day"),
    ({"day": "yesterday", "note": "x"}, "day"),
    ({"day": "1969-12-31", "note": "x"}, "day"),
    ({"day": "{future}", "note": "x"}, "day"),
    ({"day": "{today}", "note": ""}, "note"),
    ({"day": "{today}", "note": "   "}, "note"),
    ({"day": "{today}", "note": "x" * 201}, "note"),
    ({"day": "{today}", "end_day": "{yesterday}", "note": "x"}, "end_day"),
    ({"day": "2024-01-01", "end_day": "2025-01-01", "note": "x"}, "end_day"),
    ({"day": "{today}", "end_day": "soon", "note": "x"}, "end_day"),
    ({"day": "20261203", "note": "x"}, "day"),  # ISO's basic form: not what the form says
]


def _filled(posted: dict[str, str]) -> dict[str, str]:
    today = _today()
    words = {
        "{today}": today.isoformat(),
        "{yesterday}": (today - timedelta(days=1)).isoformat(),
        "{future}": (today + timedelta(days=400)).isoformat(),
    }
    return {k: words.get(v, v) for k, v in posted.items()}


@pytest.mark.parametrize(("posted", "field"), BAD)
def test_bad_input_is_named_and_saves_nothing(client, site, analyst, posted, field):
    posted = _filled(posted)
    page = client.post(f"/sites/{site.id}/annotations/", posted)
    text = html.unescape(page.content.decode())
    assert page.status_code == 400 and f"{field}: " in text, text[:300]
    api = client.post(f"/api/sites/{site.id}/annotations", posted, content_type="application/json")
    assert api.status_code == 400 and api.json()["field"] == field, api.content
    assert not Annotation.objects.exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (["not", "an", "object"], "body"),
        ({"day": "{today}", "note": "x", "public": "yes"}, "public"),
        ({"day": "{today}", "note": 42}, "note"),
        ({"day": 20260101, "note": "x"}, "day"),
        ({"day": "{today}", "note": "\ud800 lone"}, "note"),
        ({"day": "{today}", "note": "\x00\x07"}, "note"),
    ],
)
def test_the_api_names_a_bad_body(client, site, analyst, body, field):
    body = _filled(body) if isinstance(body, dict) else body
    answer = client.post(f"/api/sites/{site.id}/annotations", body, content_type="application/json")
    assert answer.status_code == 400 and answer.json()["field"] == field, answer.content
    assert not Annotation.objects.exists()


def test_the_page_goes_back_only_to_a_page_of_the_same_site(client, site, analyst):
    other = sites.site_create(name="Else", origins=["https://else.example"])
    made = f"/sites/{site.id}/annotations/"
    for unsafe in ("https://evil.example/", "//evil.example/x", f"/sites/{other.id}/", "/admin/"):
        back = client.post(made, {"day": _today().isoformat(), "note": "n", "next": unsafe})
        assert back.status_code == 302 and back["Location"] == made, unsafe


def test_another_sites_member_gets_404_for_every_annotation_route(client, site, analyst):
    note = notes.annotation_save(site=site, user=analyst, day=_today(), note="Ours")
    theirs = sites.site_create(name="Theirs", origins=["https://theirs.example"])
    outsider = member(User.objects.create_user("out", password="pw-out-123"), theirs, "admin")
    stranger = _client(outsider)
    own = f"/sites/{site.id}/annotations/"
    body = {"day": _today().isoformat(), "note": "sneaky"}
    assert stranger.post(own, body).status_code == 404
    assert stranger.post(f"{own}{note.pk}/", body).status_code == 404
    assert stranger.post(f"{own}{note.pk}/delete", {"confirm": "yes"}).status_code == 404
    api = f"/api/sites/{site.id}/annotations"
    assert stranger.post(api, body, content_type="application/json").status_code == 404
    assert stranger.delete(f"{api}/{note.pk}").status_code == 404
    # Their own site's URLs with our note's id: no such note there.
    assert stranger.get(f"/sites/{theirs.id}/annotations/{note.pk}/").status_code == 404
    assert stranger.delete(f"/api/sites/{theirs.id}/annotations/{note.pk}").status_code == 404
    assert Annotation.objects.filter(site=site).count() == 1
    assert not Annotation.objects.filter(note="sneaky").exists()


def test_its_author_or_a_site_admin_changes_or_deletes_a_note(client, site, analyst):
    colleague = _client(member(User.objects.create_user("col", password="pw-col-123"), site))
    admin = _client(member(User.objects.create_user("adm", password="pw-adm-123"), site, "admin"))
    mine = notes.annotation_save(site=site, user=analyst, day=_today(), note="Mine")
    base = f"/sites/{site.id}/annotations/{mine.pk}"
    page = colleague.get(f"{base}/").content.decode()
    assert "Mine" in page and 'id="annotation-form"' not in page  # read, not changed
    changed = {"day": _today().isoformat(), "note": "Theirs now"}
    assert colleague.post(f"{base}/", changed).status_code == 403
    assert colleague.post(f"{base}/delete", {"confirm": "yes"}).status_code == 403
    refused = colleague.delete(f"/api/sites/{site.id}/annotations/{mine.pk}")
    assert refused.status_code == 403 and refused.json()["field"] == "auth"
    mine.refresh_from_db()
    assert mine.note == "Mine"
    # Its author changes it; deleting asks for the tick first.
    assert client.post(f"{base}/", {**changed, "note": "Mine, later"}).status_code == 302
    mine.refresh_from_db()
    assert mine.note == "Mine, later"
    assert client.post(f"{base}/delete").status_code == 400
    assert client.post(f"{base}/delete", {"confirm": "yes"}).status_code == 302
    assert not Annotation.objects.filter(pk=mine.pk).exists()
    # A site admin deletes anyone's, by page or API.
    for how in ("page", "api"):
        theirs = notes.annotation_save(site=site, user=analyst, day=_today(), note=how)
        if how == "page":
            page = f"/sites/{site.id}/annotations/{theirs.pk}/delete"
            assert admin.post(page, {"confirm": "yes"}).status_code == 302
        else:
            assert admin.delete(f"/api/sites/{site.id}/annotations/{theirs.pk}").status_code == 204
        assert not Annotation.objects.filter(pk=theirs.pk).exists()


def test_a_notes_control_characters_are_dropped(site, analyst):
    note = notes.annotation_save(site=site, user=analyst, day=_today(), note="a\x00b\tc\u200dd")
    assert note.note == "ab c\u200dd"  # a zero-width joiner is text (emoji), not control


def test_a_note_outlives_its_author(site, analyst):
    note = notes.annotation_save(site=site, user=analyst, day=_today(), note="Kept")
    analyst.delete()
    note.refresh_from_db()
    assert note.created_by is None
    assert notes.annotation_json(note, site=site)["author"] is None


def test_a_read_only_token_reads_notes_and_may_not_write_them(site, analyst):
    note = notes.annotation_save(site=site, user=analyst, day=_today(), note="Read me")
    reader = tokens.token_create(user=analyst, name="reader", read_only=True).key
    api = f"/api/sites/{site.id}/annotations"
    listed = Client().get(api, **auth(reader))
    assert listed.status_code == 200 and [a["note"] for a in listed.json()["annotations"]] == [
        "Read me"
    ]
    body = {"day": _today().isoformat(), "note": "Written"}
    refused = Client().post(api, body, content_type="application/json", **auth(reader))
    assert refused.status_code == 403 and refused.json()["field"] == "token"
    assert Client().delete(f"{api}/{note.pk}", **auth(reader)).status_code == 403
    writer = tokens.token_create(user=analyst, name="writer").key
    made = Client().post(api, body, content_type="application/json", **auth(writer))
    assert made.status_code == 201 and made.json()["author"] == "ana"
    assert Annotation.objects.filter(site=site).count() == 2


def test_the_api_lists_a_periods_notes_or_the_latest(client, site, analyst):
    today = _today()
    for back, words in ((1, "recent"), (60, "older"), (400, "oldest")):
        notes.annotation_save(site=site, user=analyst, day=today - timedelta(days=back), note=words)
    api = f"/api/sites/{site.id}/annotations"
    latest = client.get(api).json()
    assert [a["note"] for a in latest["annotations"]] == ["recent", "older", "oldest"]
    assert latest["truncated"] is False
    week = client.get(api, {"period": "7d"}).json()["annotations"]
    assert [a["note"] for a in week] == ["recent"]
    assert client.get(api, {"period": "fortnight"}).json()["field"] == "period"
    one = client.get(f"{api}/{week[0]['id']}").json()
    assert one["note"] == "recent" and one["day"] == (today - timedelta(days=1)).isoformat()


def test_a_chart_shows_at_most_its_cap(client, site, analyst, monkeypatch):
    monkeypatch.setattr(notes, "MAX_ON_CHART", 3)
    for n in range(5):
        notes.annotation_save(site=site, user=analyst, day=_today(), note=f"n{n}")
    assert len(notes.for_chart(site, _period(_today(), _today()))) == 3
    answer = client.get(f"/api/sites/{site.id}/annotations").json()
    assert len(answer["annotations"]) == 3 and answer["truncated"] is True


def test_a_share_link_sees_the_public_notes_without_authors(site, analyst):
    notes.annotation_save(site=site, user=analyst, day=_today(), note="Private")
    notes.annotation_save(site=site, user=analyst, day=_today(), note="Launch", public=True)
    period = _period(_today() - timedelta(days=6), _today())
    assert [n["note"] for n in notes.for_chart(site, period)] == ["Private", "Launch"]
    [public] = notes.for_chart(site, period, public_only=True)
    assert public["note"] == "Launch" and "author" not in public


def test_a_share_links_page_draws_the_public_notes_without_the_form(site, analyst):
    notes.annotation_save(site=site, user=analyst, day=_today(), note="Private")
    public = notes.annotation_save(
        site=site, user=analyst, day=_today(), note="Launch", public=True
    )
    request = RequestFactory().get("/share/some-link/")
    request.user = AnonymousUser()
    context = {"site": site, "period": _period(_today(), _today()), "public_only": True}
    page = render_to_string("sessions_app/_annotations.html", context, request=request)
    assert [n["note"] for n in _island(page)["notes"]] == ["Launch"]
    assert "author" not in _island(page)["notes"][0] and "Private" not in page
    assert f'id="note-{public.pk}"' in page and 'id="note-add"' not in page
    assert "Edit" not in page and "ana" not in page
    # Without public_only, a visitor who is not signed in is shown nothing.
    context["public_only"] = False
    hidden = render_to_string("sessions_app/_annotations.html", context, request=request)
    assert "Launch" not in hidden


def test_a_periods_notes_are_those_overlapping_its_days(site, analyst):
    first, last = date(2026, 3, 10), date(2026, 3, 16)
    cases = {
        "day before": (first - timedelta(days=1), None, False),
        "first day": (first, None, True),
        "last day": (last, None, True),
        "day after": (last + timedelta(days=1), None, False),
        "ends on the first": (first - timedelta(days=5), first, True),
        "starts on the last": (last, last + timedelta(days=3), True),
        "ends the day before": (first - timedelta(days=5), first - timedelta(days=1), False),
        "starts the day after": (last + timedelta(days=1), last + timedelta(days=4), False),
        "around it": (first - timedelta(days=30), last + timedelta(days=30), True),
    }
    for words, (day, end, _) in cases.items():
        notes.annotation_save(site=site, user=analyst, day=day, end_day=end, note=words)
    shown = {n["note"] for n in notes.for_chart(site, _period(first, last))}
    assert shown == {words for words, (_, _, inside) in cases.items() if inside}


def test_a_note_is_on_the_sites_day_in_its_zone(analyst):
    """A site in New York: its day 10 March starts at 04:00 UTC (daylight saving from the
    8th), and a period of the site's days reads the notes of those days."""
    site = sites.site_create(name="NY", origins=["https://ny.example"])
    site.time_zone = "America/New_York"
    site.save()
    note = notes.annotation_save(site=site, user=analyst, day=date(2026, 3, 10), note="NY")
    shown = notes.annotation_json(note, site=site)
    assert (shown["start"], shown["end"]) == ("2026-03-10T04:00:00Z", "2026-03-11T04:00:00Z")
    day = _period(date(2026, 3, 10), date(2026, 3, 10), "America/New_York")
    assert [n["note"] for n in notes.for_chart(site, day)] == ["NY"]
    before = _period(date(2026, 3, 9), date(2026, 3, 9), "America/New_York")
    assert notes.for_chart(site, before) == []


def test_notes_sit_on_the_bars_of_their_buckets():
    starts = [datetime(2026, 3, d, tzinfo=UTC) for d in range(10, 17)]
    marks = [
        {"start": "2026-03-12T00:00:00Z", "end": "2026-03-13T00:00:00Z", "end_day": None},
        {"start": "2026-03-15T00:00:00Z", "end": "2026-03-20T00:00:00Z", "end_day": "2026-03-19"},
        {"start": "2026-03-01T00:00:00Z", "end": "2026-03-11T00:00:00Z", "end_day": "2026-03-10"},
    ]
    placed = [(p["x"], p["width"]) for p in notes.on_bars(marks, starts, step=3)]
    assert placed == [(6, 0), (15, 6), (0, 3)]


def test_days_are_labelled_as_people_read_them():
    assert notes.days_label(date(2026, 12, 3), date(2026, 12, 3)) == "3 Dec 2026"
    assert notes.days_label(date(2026, 12, 3), date(2026, 12, 5)) == "3 \u2013 5 Dec 2026"
    assert notes.days_label(date(2026, 11, 28), date(2026, 12, 2)) == "28 Nov \u2013 2 Dec 2026"
    assert notes.days_label(date(2026, 12, 30), date(2027, 1, 2)) == (
        "30 Dec 2026 \u2013 2 Jan 2027"
    )


def test_the_list_page_pages_the_sites_notes_latest_first(client, site, analyst, monkeypatch):
    from sessions_app.features.annotations import views

    monkeypatch.setattr(views, "PAGE", 2)
    for back in range(3):
        notes.annotation_save(
            site=site, user=analyst, day=_today() - timedelta(days=back), note=f"back {back}"
        )
    first = client.get(f"/sites/{site.id}/annotations/").content.decode()
    assert "3 notes" in first and first.index("back 0") < first.index("back 1")
    assert "back 2" not in first and "?page=2" in first
    assert "back 2" in client.get(f"/sites/{site.id}/annotations/", {"page": "2"}).content.decode()
    assert client.get(f"/sites/{site.id}/annotations/", {"page": "x"}).status_code == 200


near = st.dates(min_value=date(2024, 1, 1), max_value=date(2027, 6, 30)).map(date.isoformat)
bodies = st.fixed_dictionaries(
    {},
    optional={
        "day": near | st.dates().map(date.isoformat) | st.text(max_size=12) | st.integers(),
        "end_day": near | st.dates().map(date.isoformat) | st.text(max_size=12) | st.none(),
        "note": st.text(max_size=220) | st.integers() | st.none() | st.lists(st.text(), max_size=2),
        "public": st.booleans() | st.text(max_size=3) | st.none(),
        "extra": st.text(max_size=5),
    },
)


@settings(
    max_examples=examples(80),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(body=bodies | st.lists(st.integers(), max_size=2) | st.text(max_size=10))
def test_any_body_gets_a_note_or_a_named_reason(client, site, analyst, body: Any):
    before = Annotation.objects.filter(site=site).count()
    response = client.post(
        f"/api/sites/{site.id}/annotations", body, content_type="application/json"
    )
    assert response.status_code in (201, 400), response.content
    after = Annotation.objects.filter(site=site).count()
    if response.status_code == 400:
        assert response.json()["field"] and response.json()["error"]
        assert after == before
    else:
        assert after == before + 1
        made = Annotation.objects.get(pk=response.json()["id"])
        assert 1 <= len(made.note) <= notes.MAX_NOTE and made.note == made.note.strip()
        assert made.end_day is None or made.day < made.end_day


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    form=st.fixed_dictionaries(
        {},
        optional={
            "day": near | st.dates().map(date.isoformat) | st.text(max_size=12),
            "end_day": near | st.text(max_size=12),
            "note": st.text(max_size=220),
            "public": st.sampled_from(["on", "off", ""]),
            "next": st.text(max_size=40),
        },
    )
)
def test_any_form_gets_a_note_or_the_page_naming_the_field(client, site, analyst, form: Any):
    before = Annotation.objects.filter(site=site).count()
    response = client.post(f"/sites/{site.id}/annotations/", form)
    after = Annotation.objects.filter(site=site).count()
    assert response.status_code in (302, 400), response.status_code
    if response.status_code == 400:
        assert after == before and re.search(r"(day|end_day|note): ", response.content.decode())
    else:
        assert after == before + 1 and response["Location"].startswith(f"/sites/{site.id}/")


def test_the_schema_says_which_token_scope_each_annotation_route_needs(admin_client):
    schema = admin_client.get("/api/schema", HTTP_ACCEPT="application/json").json()
    listed = schema["paths"]["/api/sites/{site_id}/annotations"]
    one = schema["paths"]["/api/sites/{site_id}/annotations/{annotation_id}"]
    assert (listed["get"]["x-token-scope"], listed["post"]["x-token-scope"]) == ("read", "write")
    assert (one["get"]["x-token-scope"], one["delete"]["x-token-scope"]) == ("read", "write")
    assert {"day", "note"} <= set(schema["components"]["schemas"]["AnnotationWrite"]["required"])
