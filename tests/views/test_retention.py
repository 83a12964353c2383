"""Admin pages and actions: retention, purge, sites in the Django admin; roles and audit."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from sessions_app.domain.ledger import policies, sites
from sessions_app.foundation.models import AdminAction, PurgeRun, RetentionPolicy, Site
from sessions_app.foundation.tables import retention_specs
from tests.support.events import event, post

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

PAGE = "/retention/"
POLICY = "/retention/policies/raw_events"
PURGE = "/retention/purge"


@pytest.fixture(autouse=True)
def _fresh_policies() -> Iterator[None]:
    policies.invalidate()
    yield
    policies.invalidate()


def login(client: Client, name: str, group: str | None) -> User:
    user = User.objects.create_user(name, password=f"pw-{name}-123")
    if group:
        user.groups.add(Group.objects.get_or_create(name=group)[0])
    client.force_login(user)
    return user


@pytest.fixture
def admin(client) -> User:
    """A member of the admin group: neither staff nor superuser."""
    return login(client, "adm", "admin")


def _admin_requests(site: Site) -> list[tuple[str, str, dict]]:
    changelist = "/admin/sessions_app/site/"
    return [
        ("get", PAGE, {}),
        ("post", POLICY, {"days": "60"}),
        ("post", PURGE, {}),
        ("get", "/admin/", {}),
        ("get", "/admin/login/", {}),
        ("get", changelist, {}),
        ("get", f"/admin/sessions_app/site/{site.pk}/change/", {}),
        ("get", "/admin/sessions_app/site/add/", {}),
        ("post", "/admin/sessions_app/site/add/", {"name": "Evil", "event_shards": "1"}),
        ("post", changelist, {"action": "rotate_key", "_selected_action": [str(site.pk)]}),
        ("post", changelist, {"action": "disable", "_selected_action": [str(site.pk)]}),
        ("get", "/admin/sessions_app/adminaction/", {}),
        ("get", "/admin/sessions_app/purgerun/", {}),
        ("get", "/admin/auth/user/", {}),
    ]


@pytest.mark.parametrize("group", ["analyst", None])
def test_analysts_and_users_without_a_role_get_403_on_every_admin_page_and_action(
    client, site, group
):
    login(client, "ana", group)
    key = site.key
    for method, url, data in _admin_requests(site):
        response = getattr(client, method)(url, data)
        assert response.status_code == 403, (method, url, response.status_code)
    site.refresh_from_db()
    assert site.key == key and site.enabled
    assert not AdminAction.objects.exists()
    assert not RetentionPolicy.objects.exists()
    assert not PurgeRun.objects.exists()
    assert not Site.objects.filter(name="Evil").exists()


def test_anonymous_users_are_sent_to_log_in(client, site):
    for method, url, data in _admin_requests(site):
        response = getattr(client, method)(url, data)
        if url == "/admin/login/":
            assert response.status_code == 200  # the login form itself
            continue
        assert response.status_code == 302, (method, url)
        login_url = "/admin/login/" if url.startswith("/admin/") else "/accounts/login/"
        assert response["Location"].startswith(login_url), (url, response["Location"])
    assert not AdminAction.objects.exists()


def test_admins_see_the_retention_page_with_policies_and_table_options(client, admin):
    response = client.get(PAGE)
    assert response.status_code == 200
    html = re.sub(r"\s+", " ", response.content.decode())
    assert "rows already written keep the TTL they were written with" in html
    for spec in retention_specs.SPECS.values():
        assert spec.label in html
    assert "TimeWindowCompactionStrategy" in html and "1 HOURS" in html
    assert 'name="csrfmiddlewaretoken"' in html
    assert not re.search(r"<script(?![^>]*src=)", html)
    assert f'href="{PAGE}"' in client.get("/").content.decode()
    # Reasons and limits in words and figures, not the settings' names.
    text = re.sub(r"<[^>]+>", " ", html)
    names = set(re.findall(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b", text)) - {"USING_TTL"}
    assert not names, names
    assert "events up to 30 days old" in text and "20,000 keys a run" in text


def test_saving_a_policy_applies_it_and_is_audited(client, admin):
    response = client.post(POLICY, {"days": "60"}, follow=True)
    assert response.status_code == 200
    assert "60 days for new writes; rows already written keep their TTL" in (
        response.content.decode()
    )
    assert RetentionPolicy.objects.get(key="raw_events").days == 60
    assert policies.ttl_seconds(retention_specs.RAW_EVENTS) == 60 * 86_400
    action = AdminAction.objects.get()
    assert (action.actor, action.actor_name, action.action) == (admin, "adm", "retention.set")
    assert action.details == {"days": 60, "previous": 400}


@pytest.mark.parametrize(
    ("days", "message"),
    [
        ("5", "at least 32 days: events up to 30 days old are still accepted"),
        ("5000", "at most 1098 days"),
        ("abc", "days: a whole number"),
    ],
)
def test_a_policy_outside_its_bounds_is_refused_with_400_and_the_reason(
    client, admin, days, message
):
    response = client.post(POLICY, {"days": days})
    assert response.status_code == 400
    assert message in response.content.decode().replace("&#x27;", "'")
    assert not RetentionPolicy.objects.exists() and not AdminAction.objects.exists()


def test_purge_needs_post_and_csrf(admin):
    csrf_client = Client(enforce_csrf_checks=True)
    csrf_client.force_login(admin)
    assert csrf_client.get(PURGE).status_code == 405
    assert csrf_client.post(PURGE).status_code == 403  # no CSRF token
    assert not AdminAction.objects.exists()


# --- sites in the Django admin --------------------------------------------------------


def test_admins_reach_the_django_admin_without_being_staff(client, admin, site):
    assert not admin.is_staff and not admin.is_superuser
    assert client.get("/admin/").status_code == 200
    response = client.get("/admin/sessions_app/site/")
    assert response.status_code == 200 and site.name in response.content.decode()
    assert client.get("/admin/sessions_app/adminaction/").status_code == 200


def test_rotating_a_key_stops_the_old_one_and_is_audited(client, admin, site):
    old = site.key
    collector = Client()
    assert post(collector, site, [event(_now())]).status_code == 200  # caches the key
    response = client.post(
        "/admin/sessions_app/site/", {"action": "rotate_key", "_selected_action": [str(site.pk)]}
    )
    assert response.status_code == 302
    site.refresh_from_db()
    assert site.key != old and site.key.startswith("cs_")
    assert post(collector, Site(key=old), [event(_now())]).status_code == 401
    assert post(collector, site, [event(_now())]).status_code == 200
    action = AdminAction.objects.get(action="site.rotate_key")
    assert action.actor == admin and str(site.id) in action.target
    assert action.details == {"old_key": old, "new_key": site.key}


def test_disabling_a_site_refuses_its_events_and_is_audited(client, admin, site):
    collector = Client()
    assert post(collector, site, [event(_now())]).status_code == 200
    client.post(
        "/admin/sessions_app/site/", {"action": "disable", "_selected_action": [str(site.pk)]}
    )
    site.refresh_from_db()
    assert not site.enabled
    assert post(collector, site, [event(_now())]).status_code == 401
    assert AdminAction.objects.get(action="site.disable").actor == admin


def test_creating_and_editing_a_site_in_the_admin_is_audited(client, admin):
    response = client.post(
        "/admin/sessions_app/site/add/",
        {
            "name": "Blog",
            "allowed_origins": json.dumps(["https://blog.example"]),
            "enabled": "on",
            "event_shards": "2",
            "time_zone": "Europe/Berlin",
            "replay_sample": "100",  # the admin form shows the defaults
            "replay_retention_days": "30",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    site = Site.objects.get(name="Blog")
    assert site.allowed_origins == ["https://blog.example"]
    assert site.time_zone == "Europe/Berlin"
    created = AdminAction.objects.get(action="site.create")
    assert created.actor == admin and created.details["allowed_origins"] == site.allowed_origins
    client.post(
        f"/admin/sessions_app/site/{site.pk}/change/",
        {
            "name": "Blog",
            "allowed_origins": json.dumps(["https://blog.example", "https://www.blog.example"]),
            "enabled": "on",
            "event_shards": "2",
            "time_zone": "Europe/Berlin",
            "replay_sample": "100",  # the admin form shows the defaults
            "replay_retention_days": "30",
        },
    )
    changed = AdminAction.objects.get(action="site.change")
    assert changed.details["changed"] == ["allowed_origins"]
    assert client.get("/admin/sessions_app/site/").status_code == 200
    assert 'value="delete_selected"' not in client.get("/admin/sessions_app/site/").content.decode()


def test_the_audit_log_is_read_only(client, admin):
    AdminAction.objects.create(actor=admin, actor_name="adm", action="x", target="y")
    action = AdminAction.objects.get()
    assert client.get(f"/admin/sessions_app/adminaction/{action.pk}/change/").status_code == 200
    client.post(
        f"/admin/sessions_app/adminaction/{action.pk}/change/",
        {"actor_name": "someone else", "action": "x", "target": "y"},
    )
    client.post(f"/admin/sessions_app/adminaction/{action.pk}/delete/", {"post": "yes"})
    action.refresh_from_db()
    assert action.actor_name == "adm"


def _now():
    from django.utils import timezone

    return timezone.now().replace(microsecond=0)


@pytest.mark.django_db(transaction=True, databases=["default", "cassandra"])
def test_the_purge_button_queues_a_run_that_a_worker_records(celery_worker_process):
    client = Client()
    user = login(client, "adm2", "admin")
    response = client.post(PURGE, follow=True)
    assert response.status_code == 200
    assert "Purge queued" in response.content.decode()
    assert response.redirect_chain[-1][0].startswith(f"{PAGE}?task=")
    assert AdminAction.objects.get(action="purge.request").actor == user
    queued = response.redirect_chain[-1][0]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # the page reads the task's result from Redis
        page = re.sub(r"\s+", " ", client.get(queued).content.decode())
        if "finished:" in page:
            break
        assert "is queued or running" in page
        time.sleep(0.5)
    else:
        pytest.fail("the purge task did not finish within 60 s")
    run = PurgeRun.objects.get()
    assert run.trigger == "admin" and run.requested_by == user and run.error == ""
    assert f"Purge run {run.pk} finished: <strong>0 partitions deleted</strong> of 0" in page
    assert "adm2" in page and "done" in page


def test_sessions_are_never_kept_shorter_than_raw_events(client, admin):
    sessions = POLICY.replace("raw_events", "sessions")
    response = client.post(sessions, {"days": "100"})  # raw events keep 400 days
    assert response.status_code == 400
    assert "sessions: at least 400 days: no shorter than raw events" in response.content.decode()
    response = client.post(POLICY, {"days": "700"})  # raw events past the sessions' 400
    assert response.status_code == 400
    assert "at most 400 days: no longer than sessions" in response.content.decode()
    assert not RetentionPolicy.objects.exists()
    # Lower raw events first, then sessions down to them: both allowed.
    assert client.post(POLICY, {"days": "90"}).status_code == 302
    assert client.post(sessions, {"days": "90"}).status_code == 302
    assert dict(RetentionPolicy.objects.values_list("key", "days")) == {
        "raw_events": 90,
        "sessions": 90,
    }


def test_the_retention_page_lists_replays_with_each_sites_retention(client, admin, site):
    """Replays are kept per site, not by a policy: the page names their tables and each
    recording site's days (any name renders, escaped); a site without replay is not listed."""
    site.replay, site.replay_retention_days = True, 10
    site.save()
    other = sites.site_create(name='Café <b>"Zoë"</b> 🛒', origins=["https://cafe.example"])
    other.replay = True
    other.save()
    sites.site_create(name="Quiet shop", origins=["https://quiet.example"])
    page = client.get(PAGE)
    assert page.status_code == 200
    section = page.text.split('id="replay-retention"')[1].split("</section>")[0]
    assert "<code>replay_chunks</code>" in section and "<code>replay_assets</code>" in section
    rows = re.findall(
        r"<tr><td><a href=\"/sites/([^/]+)/site#id_replay_retention_days\">(.*?)</a>"
        r"(.*?)</td><td class=\"num\">(\d+)</td></tr>",
        section,
    )
    assert [(r[0], r[1], r[3]) for r in rows] == [
        (str(other.id), "Café &lt;b&gt;&quot;Zoë&quot;&lt;/b&gt; 🛒", "30"),
        (str(site.id), "Shop", "10"),
    ]
    assert "default" in rows[0][2] and "default" not in rows[1][2]
    assert "Quiet shop" not in section
