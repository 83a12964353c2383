"""The Goals pages, the goals API and the dashboard's goal table: access, plain-word
errors naming the field, any visitor text rendered, numbers equal to the sealed counts."""

from __future__ import annotations

import csv
import io
import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from sessions_app.domain.jobs.goal_backfill import goal_backfill, goal_save
from sessions_app.foundation.models import Goal
from tests.support.accounts import member
from tests.support.clock import recent_fixed
from tests.support.dataset import AGENTS
from tests.support.events import event
from tests.support.paths import send
from tests.support.sealing import seal_everything

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

SHOP = "https://shop.example"
ODD = "Ünï ✓ <b>&amp;</b> 👀 \u202e"


@pytest.fixture
def admin(client, site):
    user = member(User.objects.create_user("adm", password="pw-adm-123"), site, "admin")
    client.force_login(user)
    return user


def test_an_admin_defines_a_goal_on_the_page_and_sees_it_with_its_backfill(client, admin, site):
    url = f"/sites/{site.id}/goals/"
    response = client.post(
        url, {"name": ODD, "kind": "pageview", "value": "/thänks/👀", "match": "prefix"}
    )
    assert response.status_code == 302
    goal = Goal.objects.get(site=site)
    assert goal.definition == {
        "kind": "pageview",
        "path": "/thänks/👀",
        "match": "prefix",
        "properties": [],
    }
    assert goal.backfill_state == Goal.QUEUED and goal.exact_from is not None
    page = client.get(url).content.decode()
    assert "queued" in page and 'http-equiv="refresh"' in page
    assert "Ünï ✓ &lt;b&gt;&amp;amp;&lt;/b&gt; 👀" in page and "<b>&amp;</b>" not in page
    goal_backfill(goal_id=goal.pk, now=timezone.now())
    page = client.get(url).content.decode()
    assert "done" in page and 'http-equiv="refresh"' not in page


@pytest.mark.parametrize(
    ("posted", "message"),
    [
        ({"name": "x", "kind": "pageview", "value": ""}, "Path: required for a page view step"),
        ({"name": "x", "kind": "click", "value": ""}, "Selector or text: a click step needs"),
        ({"name": "x", "kind": "event", "value": ""}, "Event name: required for an event step"),
        ({"name": "", "kind": "event", "value": "signup"}, "Name: give the goal a name"),
        ({"name": "x", "kind": "nope", "value": "a"}, "Kind: "),
    ],
)
def test_a_bad_goal_says_what_to_fix_in_plain_words_and_keeps_the_form(
    client, admin, site, posted, message
):
    response = client.post(f"/sites/{site.id}/goals/", posted)
    page = response.content.decode()
    assert response.status_code == 400 and message in page, page[:3000]
    assert "definition." not in page and not Goal.objects.exists()


def test_two_goals_of_one_name_are_refused_on_the_field(client, admin, site):
    goal_save(
        site=site, name="Signup", definition={"kind": "event", "name": "a"}, now=timezone.now()
    )
    response = client.post(
        f"/sites/{site.id}/goals/", {"name": "Signup", "kind": "event", "value": "b"}
    )
    assert response.status_code == 400 and "Name: the site has a goal named" in (
        response.content.decode()
    )


def test_analysts_read_goals_but_only_admins_change_them(client, analyst, site):
    goal = goal_save(
        site=site, name="g", definition={"kind": "event", "name": "a"}, now=timezone.now()
    )
    listed = client.get(f"/sites/{site.id}/goals/")
    assert listed.status_code == 200 and "defined by this site's admins" in listed.content.decode()
    posted = {"name": "h", "kind": "event", "value": "b"}
    assert client.post(f"/sites/{site.id}/goals/", posted).status_code == 403
    assert client.post(f"/sites/{site.id}/goals/{goal.pk}/", posted).status_code == 403
    deleted = client.post(f"/sites/{site.id}/goals/{goal.pk}/delete", {"confirm": "yes"})
    assert deleted.status_code == 403
    assert Goal.objects.get().name == "g"


def test_a_change_backfills_again_and_a_delete_needs_its_confirmation(client, admin, site):
    goal = goal_save(
        site=site, name="g", definition={"kind": "event", "name": "a"}, now=timezone.now()
    )
    Goal.objects.filter(pk=goal.pk).update(backfill_state=Goal.DONE)
    client.post(f"/sites/{site.id}/goals/{goal.pk}/", {"name": "g2", "kind": "event", "value": "a"})
    goal.refresh_from_db()
    assert goal.name == "g2" and goal.backfill_state == Goal.DONE  # same definition
    client.post(f"/sites/{site.id}/goals/{goal.pk}/", {"name": "g2", "kind": "event", "value": "b"})
    goal.refresh_from_db()
    assert goal.definition["name"] == "b" and goal.backfill_state == Goal.QUEUED
    refused = client.post(f"/sites/{site.id}/goals/{goal.pk}/delete", {})
    assert refused.status_code == 400 and "Tick the box" in refused.content.decode()
    client.post(f"/sites/{site.id}/goals/{goal.pk}/delete", {"confirm": "yes"})
    assert not Goal.objects.exists()


def test_the_api_creates_changes_and_deletes_goals_and_names_the_bad_field(client, admin, site):
    base = f"/api/sites/{site.id}/goals"
    bad = client.post(
        base, {"name": "x", "definition": {"kind": "pageview"}}, content_type="application/json"
    )
    assert bad.status_code == 400 and bad.json()["field"] == "definition.path"
    bad = client.post(
        base, {"definition": {"kind": "event", "name": "a"}}, content_type="application/json"
    )
    assert bad.status_code == 400 and bad.json()["field"] == "name"
    made = client.post(
        base,
        {
            "name": ODD,
            "definition": {
                "kind": "event",
                "name": "signup",
                "properties": [{"key": "plan", "value": "pro"}],
            },
        },
        content_type="application/json",
    )
    assert made.status_code == 201, made.content
    body = made.json()
    assert body["name"] == ODD and body["backfill"]["state"] == "queued"
    assert body["definition"]["properties"] == [{"key": "plan", "op": "eq", "value": "pro"}]
    one = f"{base}/{body['id']}"
    changed = client.put(
        one, {"definition": {"kind": "click", "selector": "#buy"}}, content_type="application/json"
    )
    assert changed.status_code == 200 and changed.json()["label"] == "clicked #buy"
    assert [g["name"] for g in client.get(base).json()["goals"]] == [ODD]
    assert client.delete(one).status_code == 204
    assert client.get(one).status_code == 404


def test_the_schema_lists_the_goal_routes(client, admin):
    schema = client.get("/api/schema").content.decode()
    for route in (
        "/api/sites/{site_id}/goals",
        "/api/sites/{site_id}/goals/table",
        "/api/sites/{site_id}/goals/{goal_id}",
    ):
        assert route + ":" in schema, route


@pytest.fixture
def converted(client, site):
    """Six visitors viewed /pricing and clicked buy yesterday (one by a bot); sealed."""
    start = recent_fixed(days_ago=1, at=timedelta(hours=5, minutes=7))
    for n in range(6):
        ts = start + timedelta(hours=n % 3, minutes=n)
        send(
            client,
            site,
            [
                event(
                    ts, anon=f"u{n}", url=SHOP + "/pricing?utm_source=" + ("ads" if n < 2 else "")
                ),
                event(
                    ts + timedelta(seconds=5),
                    kind="click",
                    anon=f"u{n}",
                    url=SHOP + "/pricing",
                    element={"tag": "button", "selector": "button#buy", "text": "Buy now"},
                ),
            ],
            AGENTS[n],
        )
    seal_everything(site, timezone.now())
    for name, definition in (
        ("Buy", {"kind": "click", "selector": "button#buy"}),
        ("Pricing", {"kind": "pageview", "path": "/pricing"}),
        ("Never", {"kind": "event", "name": "refund"}),
    ):
        goal = goal_save(site=site, name=name, definition=definition, now=timezone.now())
        goal_backfill(goal_id=goal.pk, now=timezone.now())
    return site


def test_the_dashboard_shows_each_goal_with_its_numbers_and_a_filter_link(
    client, analyst, converted
):
    page = client.get(f"/sites/{converted.id}/", {"period": "7d"}).content.decode()
    table = page.split('<section class="goals"', 1)[1].split("</section>", 1)[0]
    assert table.index("Buy") < table.index("Never")  # most conversions first
    assert 'href="?period=7d&amp;page=%2Fpricing"' in table  # an exact page filters
    rows = client.get(f"/api/sites/{converted.id}/goals/table", {"period": "7d"}).json()["goals"]
    by_name = {row["goal"]: row for row in rows}
    assert by_name["Buy"]["conversions"] == by_name["Pricing"]["conversions"] == 5  # no bot
    assert by_name["Buy"]["visitors"] == 5 and by_name["Never"]["conversions"] == 0
    assert by_name["Buy"]["conversion_rate"] == 1.0


def test_one_breakdown_filter_filters_the_goal_table_and_others_say_they_do_not(
    client, analyst, converted
):
    api = f"/api/sites/{converted.id}/goals/table"
    found = client.get(api, {"period": "7d", "source": "ads"}).json()
    assert {r["goal"]: r["conversions"] for r in found["goals"]}["Buy"] == 2
    assert found["note"] == ""
    found = client.get(api, {"period": "7d", "source": "ads", "device": "mobile"}).json()
    assert {r["goal"]: r["conversions"] for r in found["goals"]}["Buy"] == 5
    assert "not filtered" in found["note"]
    page = client.get(
        f"/sites/{converted.id}/", {"period": "7d", "page": "/pricing"}
    ).content.decode()
    assert "Goal numbers are not filtered" in page


def test_the_goal_table_exports_as_csv(client, analyst, converted):
    response = client.get(
        f"/api/sites/{converted.id}/goals/table", {"period": "7d", "format": "csv"}
    )
    assert response["Content-Type"] == "text/csv"
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert {r["goal"]: r["conversions"] for r in rows} == {"Buy": "5", "Pricing": "5", "Never": "0"}
    bad = client.get(f"/api/sites/{converted.id}/goals/table", {"format": "xml"})
    assert bad.status_code == 400 and bad.json()["field"] == "format"


def test_outsiders_get_404_from_every_goal_route(site):
    goal = goal_save(
        site=site, name="g", definition={"kind": "event", "name": "a"}, now=timezone.now()
    )
    outsider = Client()
    outsider.force_login(User.objects.create_user("out", password="pw-out-123"))
    for url in (
        f"/sites/{site.id}/goals/",
        f"/sites/{site.id}/goals/{goal.pk}/",
        f"/api/sites/{site.id}/goals",
        f"/api/sites/{site.id}/goals/{goal.pk}",
        f"/api/sites/{site.id}/goals/table",
    ):
        assert outsider.get(url).status_code == 404, url


def test_the_goals_list_and_a_goals_page_show_its_conversions_rate_and_days(
    client, analyst, converted
):
    """Five human buyers yesterday (the bot left out): the list and the goal's page say so,
    and the goal's days add up to it, yesterday's bar the only one."""
    page = client.get(f"/sites/{converted.id}/goals/").content.decode()
    rows = {row.split('">', 1)[0]: row for row in page.split('<tr data-goal="')[1:]}
    buy = Goal.objects.get(site=converted, name="Buy")
    never = Goal.objects.get(site=converted, name="Never")
    assert '<td class="num conversions">5</td>' in rows[str(buy.pk)]
    assert '<td class="num conversions">0</td>' in rows[str(never.pk)]
    assert "100.0%" in rows[str(buy.pk)]  # five converting visitors of five
    detail = client.get(f"/sites/{converted.id}/goals/{buy.pk}/").content.decode()
    assert '<strong class="kpi-value" id="goal-conversions">5</strong>' in detail
    days = detail.split('id="goal-days"', 1)[1].split("</table>", 1)[0]
    counts = [int(c) for c in re.findall(r'<td class="num">(\d+)</td>', days)]
    assert len(counts) == 7 and sum(counts) == 5 and sorted(counts)[-1] == 5  # every page's 7 days
    yesterday = (timezone.now() - timedelta(days=1)).strftime("%a %-d %b")
    assert f'<td>{yesterday}</td><td class="num">5</td>' in days
    # The range control's period, as on every page; kept on the link to the dashboard.
    month = client.get(f"/sites/{converted.id}/goals/{buy.pk}/", {"period": "30d"})
    days = month.content.decode().split('id="goal-days"', 1)[1].split("</table>", 1)[0]
    assert len(re.findall(r'<td class="num">(\d+)</td>', days)) == 30
    assert f'/sites/{converted.id}/?period=30d#goals"' in month.content.decode()
    listed = client.get(f"/sites/{converted.id}/goals/", {"period": "yesterday"}).content.decode()
    assert 'id="range-picker"' in listed
    assert '<td class="num conversions">5</td>' in listed  # yesterday's five
    bad = client.get(f"/sites/{converted.id}/goals/", {"period": "fortnight"}).content.decode()
    assert "period: one of" in bad and "showing last 7 days instead" in bad
