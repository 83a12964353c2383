"""Admin sizing pages: roles, the calculator's answers and errors, the report on real data."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, User
from django.utils import timezone

from sessions_app.domain.ingest.pipeline import Source, events_record
from tests.support.events import event

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

CALCULATOR = "/sizing/"
REPORT = "/sizing/partitions/"


def login(client, name: str, group: str | None) -> User:
    user = User.objects.create_user(name, password=f"pw-{name}-123")
    if group:
        user.groups.add(Group.objects.get_or_create(name=group)[0])
    client.force_login(user)
    return user


@pytest.fixture
def admin(client):
    return login(client, "adm", "admin")


@pytest.fixture
def traffic(site):
    # Half past the previous hour: the 12 events and their receipt share one hour partition
    # whatever the clock says (near :00, "the last 30 seconds" straddled two hours).
    at = timezone.now().replace(minute=30, second=0, microsecond=0) - timedelta(hours=1)
    events_record(
        source=Source(site=site, received_at=at + timedelta(seconds=30)),
        raw_events=[event(at + timedelta(seconds=i), anon="visitor") for i in range(12)],
    )
    return site


URLS = [
    CALCULATOR,
    f"{CALCULATOR}?writes_per_second=10&row_bytes=100",
    REPORT,
    f"{REPORT}?hours=6",
]


@pytest.mark.parametrize("url", URLS)
def test_anonymous_users_are_sent_to_log_in(client, url):
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=/sizing/")


@pytest.mark.parametrize("url", URLS)
@pytest.mark.parametrize("group", ["analyst", None])
def test_analysts_and_users_without_a_role_get_403(client, site, url, group):
    login(client, "ana", group)
    assert client.get(url).status_code == 403


@pytest.mark.parametrize("url", URLS)
def test_admins_see_both_pages_under_the_csp(client, admin, traffic, url):
    response = client.get(url)
    assert response.status_code == 200
    assert "script-src 'self'" in response["Content-Security-Policy"]
    html = response.content.decode()
    assert not re.search(r"<script(?![^>]*src=)", html)  # no inline script
    assert not re.search(r"\son[a-z]+=", html)  # no inline event handlers
    assert "<svg" in html


def test_navigation_links_the_pages_for_admins_only(client, site):
    login(client, "ana", "analyst")
    html = client.get("/").content.decode()
    assert CALCULATOR not in html and REPORT not in html
    client.logout()
    login(client, "adm", "admin")
    html = client.get("/").content.decode()
    assert f'href="{CALCULATOR}"' in html and f'href="{REPORT}"' in html


def test_calculator_shows_every_width_with_the_seeds_verdicts(client, admin):
    response = client.get(CALCULATOR, {"writes_per_second": "100", "row_bytes": "100"})
    assert response.status_code == 200
    rows = {r["label"]: r for r in response.context["result"]["rows"]}
    assert list(rows) == ["10 min", "hour", "day", "week", "month"]
    assert response.context["result"]["recommendation"].width.value == "hour"
    html = response.content.decode()
    body = re.sub(r"\s+", " ", html)
    assert "Recommended width: <strong>hour</strong>" in body
    for size, text in (
        ("6 MB", "Within limits (1MB - 100MB), below the 10MB - 100MB target"),
        ("36 MB", "Target: 10MB - 100MB per partition"),
        ("860 MB", "Above 100MB: Risk of timeout issues"),
        ("6 GB", "Above 1GB: Serious problems guaranteed"),
        ("26 GB", "Above 1GB: Serious problems guaranteed"),
    ):
        assert re.search(rf"<td class=\"num\">{size}</td>.*?<td>{re.escape(text)}</td>", body)


def test_calculator_recomputes_the_seed_matrix(client, admin):
    body = re.sub(r"\s+", " ", client.get(CALCULATOR).content.decode())
    assert (
        '<td>10000/sec</td><td>100 B</td> <td class="num">86 GB ✗</td> '
        '<td class="num">3.6 GB ✗</td> <td class="num">600 MB ✗</td>'
    ) in body
    assert '<td>1/sec</td><td>1 KB</td> <td class="num">86 MB ✓</td>' in body


def test_calculator_shards_when_even_ten_minutes_is_too_big(client, admin):
    response = client.get(CALCULATOR, {"writes_per_second": "10000", "row_bytes": "100"})
    body = re.sub(r"\s+", " ", response.content.decode())
    assert "Recommended width: <strong>10m</strong> with <strong>6 shards</strong>" in body


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"writes_per_second": "abc", "row_bytes": "100"}, "writes per second: a number"),
        ({"writes_per_second": "0", "row_bytes": "100"}, "writes per second: at least 0.001"),
        ({"writes_per_second": "nan", "row_bytes": "100"}, "writes per second: a number"),
        ({"writes_per_second": "inf", "row_bytes": "100"}, "writes per second: a number"),
        ({"writes_per_second": "2e6", "row_bytes": "100"}, "writes per second: at most 1,000,000"),
        ({"writes_per_second": "10", "row_bytes": "1.5"}, "bytes per row: a whole number"),
        ({"writes_per_second": "10", "row_bytes": "0"}, "bytes per row: at least 1"),
        ({"writes_per_second": "10", "row_bytes": "5000000"}, "bytes per row: at most 1,000,000"),
        ({"writes_per_second": "10"}, "bytes per row: required"),
    ],
)
def test_calculator_explains_bad_input_with_400(client, admin, query, message):
    response = client.get(CALCULATOR, query)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert response.context["result"] is None


def test_report_shows_the_sites_tables_with_flags(client, admin, traffic):
    response = client.get(REPORT, {"site": str(traffic.id), "hours": "2"})
    assert response.status_code == 200
    report = response.context["report"]
    assert report.site_id == traffic.id and report.peak.accepted == 12
    html = response.content.decode()
    for table in ("site_events_by_bucket", "user_events_by_bucket", "ingest_stats"):
        assert f"<code>{table}</code>" in html
    assert html.count('class="tag flag-too-small"') >= len(report.tables)  # 12 events: tiny
    assert "12 rows \u00d7 " in html  # the peak hour's partition, counted
    if report.estimates_found:
        assert "(this node)" in html
    else:
        assert "system.size_estimates has no figures for this keyspace yet" in html
    assert "The hour is fixed" in html


def test_report_defaults_to_the_first_site(client, admin, traffic):
    response = client.get(REPORT)
    assert response.status_code == 200
    assert response.context["chosen"] == traffic and response.context["hours"] == 24


def test_report_without_sites_says_how_to_create_one(client, admin):
    response = client.get(REPORT)
    assert response.status_code == 200
    assert "No sites yet" in response.content.decode()


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"hours": "0"}, "hours: at least 1"),
        ({"hours": "169"}, "hours: at most 168 (a week)"),
        ({"hours": "many"}, "hours: a whole number"),
        ({"site": "not-a-uuid"}, "site: not a site id"),
        ({"site": "00000000-0000-0000-0000-000000000000"}, "site: no such site"),
    ],
)
def test_report_explains_bad_input_with_400(client, admin, site, query, message):
    response = client.get(REPORT, query)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert response.context["report"] is None
