"""Per-site access: every route of a site answers 404 to everyone who may not see that site.

The routes are not listed here: every URL pattern whose route names `site_id` is
found by walking the URL resolver, so a new site route without the check
(permissions.site_for, through site_page or permissions.SiteView) fails this test.
Each is opened with the other site's id (and a user and session recorded there) by
an outsider (an admin of a different site), by that outsider's API token and by an
installation admin without membership: all 404, as for a site that does not exist.
The same URLs answer 200 to a member of that site, by login and by token, so the
check is per site, not a blanket refusal.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from django.urls.converters import get_converters
from django.urls.resolvers import RoutePattern
from django.utils import timezone

from sessions_app.domain.accounts import tokens
from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.domain.jobs.goal_backfill import goal_save
from sessions_app.domain.ledger import sites
from sessions_app.features.funnels import defs
from sessions_app.features.sharing.defs import link_create
from sessions_app.foundation.models import (
    AdminAction,
    Annotation,
    Funnel,
    Goal,
    Segment,
    ShareLink,
)
from sessions_app.foundation.tables import user_sessions
from tests.support.accounts import member
from tests.support.events import event

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

USER_KEY = "org/7"  # a slash, so the key goes through the userkey converter
FUNNEL_STEPS = [{"kind": "pageview", "path": "/"}, {"kind": "click", "selector": "a"}]
QUERY = {"event": "pageview", "page": "/", "cohort": "0", "offset": "0"}  # counters,
# transitions and a cohort's users need theirs; other routes ignore them
_PARAM = re.compile(r"<(?:(?P<converter>[^>:]+):)?(?P<name>[^>]+)>")


def _routes(resolver: URLResolver | None = None, prefix: str = "") -> Iterator[str]:
    """Every route of the URL configuration, as a path with its <converter:name> parts."""
    for entry in (resolver or get_resolver()).url_patterns:
        if isinstance(entry, URLResolver):
            yield from _routes(entry, prefix + str(entry.pattern))
        else:
            assert isinstance(entry, URLPattern)
            if "site_id" in str(entry.pattern):
                assert isinstance(entry.pattern, RoutePattern), (
                    f"{entry.pattern}: a site route is a path() this test can fill in"
                )
            yield prefix + str(entry.pattern)


def site_routes() -> list[str]:
    return [route for route in _routes() if "<uuid:site_id>" in route]


def _url(route: str, values: dict[str, object]) -> str:
    def fill(match: re.Match[str]) -> str:
        name, converter = match["name"], match["converter"] or "str"
        if name not in values:
            pytest.fail(f"/{route}: no test value for <{name}>; add one to _url's values")
        return str(get_converters()[converter].to_url(values[name]))

    return "/" + _PARAM.sub(fill, route)


@pytest.fixture
def other(db):
    """Another site, with a recorded visit of USER_KEY: the site outsiders must not see."""
    other = sites.site_create(name="Other shop", origins=["https://other.example"])
    now = timezone.now().replace(microsecond=0)
    events_record(
        source=Source(site=other, received_at=now),
        raw_events=[
            event(now - timedelta(minutes=5), user_id=USER_KEY, anon="o-anon"),
            event(now - timedelta(minutes=4), kind="click", user_id=USER_KEY, anon="o-anon"),
            event(now - timedelta(minutes=3), kind="custom", name="$identify", user_id=USER_KEY),
        ],
    )
    [summary] = user_sessions.session_list(site_id=other.id, user_key=USER_KEY)
    defs.funnel_create(site=other, name="o", definition={"steps": FUNNEL_STEPS})
    goal_save(site=other, name="o", definition=FUNNEL_STEPS[0], now=now)
    Segment.objects.create(site=other, name="o", filters={"country": "DE"}, shared=True)
    link_create(site=other, user=None, name="o")
    Annotation.objects.create(site=other, day=now.date(), note="o")
    return other, summary["session_id"]


def _login(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _token_client(user: User) -> Client:
    key = tokens.token_create(user=user, name="test").key
    return Client(HTTP_AUTHORIZATION=f"Token {key}")


def _urls(site_id: uuid.UUID, session_id: uuid.UUID) -> list[str]:
    funnel = Funnel.objects.filter(site_id=site_id).first()
    goal = Goal.objects.filter(site_id=site_id).first()
    segment = Segment.objects.filter(site_id=site_id).first()
    link = ShareLink.objects.filter(site_id=site_id).first()
    annotation = Annotation.objects.filter(site_id=site_id).first()
    values = {
        "site_id": site_id,
        "user_key": USER_KEY,
        "session_id": session_id,
        "funnel_id": funnel.pk if funnel else 1,
        "goal_id": goal.pk if goal else 1,
        "segment_id": segment.pk if segment else 1,
        "link_id": link.pk if link else 1,
        "annotation_id": annotation.pk if annotation else 1,
    }
    return [_url(route, values) for route in site_routes()]


def test_the_walk_finds_every_page_and_api_route_of_a_site():
    routes = site_routes()
    pages = [r for r in routes if not r.startswith("api/")]
    assert len(pages) >= 6 and len(routes) - len(pages) >= 9, routes


def test_no_site_route_answers_anyone_who_may_not_see_the_site(site, other):
    other_site, session_id = other
    outsider = member(User.objects.create_user("outsider", password="pw-out-123"), site, "admin")
    operator = User.objects.create_user("operator", password="pw-op-123")
    operator.groups.add(Group.objects.get_or_create(name="admin")[0])
    clients = {
        "outsider, signed in": _login(outsider),
        "outsider's API token": _token_client(outsider),
        "installation admin without membership": _login(operator),
    }
    token_only = clients["outsider's API token"]
    for url in _urls(other_site.id, session_id):
        api = url.startswith("/api/")
        for who, client in clients.items():
            response = client.get(url, QUERY)
            if client is token_only and not api:
                # Pages take no tokens: the login page, which says nothing of the site.
                assert response.status_code == 302, (who, url)
                assert response["Location"].startswith("/accounts/login/"), (who, url)
                continue
            assert response.status_code == 404, (who, url, response.status_code)
            if api:  # the same answer as for a site that does not exist
                missing = client.get(url.replace(str(other_site.id), str(uuid.uuid4())), QUERY)
                assert (missing.status_code, missing.json()) == (404, response.json()), url


def test_every_site_route_answers_a_member_of_that_site(site, other):
    other_site, session_id = other
    insider = member(User.objects.create_user("insider", password="pw-in-123"), other_site, "admin")
    by_login, by_token = _login(insider), _token_client(insider)
    for url in _urls(other_site.id, session_id):
        response = by_login.get(url, QUERY)
        assert response.status_code == 200, (url, response.status_code)
        if url.startswith("/api/"):
            response = by_token.get(url, QUERY)
            assert response.status_code == 200, (url, response.status_code)


def test_a_superuser_sees_every_site(site, other):
    other_site, session_id = other
    root = _login(User.objects.create_superuser("root", password="pw-root-123"))
    home = root.get("/").content.decode()
    assert site.name in home and other_site.name in home
    for url in _urls(other_site.id, session_id)[:3]:
        assert root.get(url, QUERY).status_code == 200, url


def test_the_home_page_lists_only_the_users_sites(client, analyst, site, other):
    page = client.get("/").content.decode()
    assert site.name in page and other[0].name not in page
    client.force_login(User.objects.create_user("new", password="pw-new-123"))
    assert "not a member of any site" in client.get("/").content.decode()


def test_site_settings_are_for_the_sites_admins(client, analyst, site):
    settings_url = f"/sites/{site.id}/site"
    dashboard = client.get(f"/sites/{site.id}/").content.decode()
    assert settings_url not in dashboard  # no link for an analyst
    assert client.get(settings_url).status_code == 403  # a member: the site is no secret
    member(analyst, site, "admin")
    page = client.get(settings_url)
    assert page.status_code == 200 and site.key in page.content.decode()
    assert "ana" in page.content.decode()  # the members list
    assert settings_url in client.get(f"/sites/{site.id}/").content.decode()


def test_anonymous_requests_learn_nothing_about_a_site(client, site, other):
    other_site, session_id = other
    for url in _urls(other_site.id, session_id):
        response = client.get(url, QUERY)
        if url.startswith("/api/"):
            assert response.status_code == 401 and response["WWW-Authenticate"] == "Token", url
        else:
            assert response.status_code == 302, url
            assert response["Location"].startswith("/accounts/login/"), url


def test_an_installation_admin_grants_a_membership_in_the_django_admin(site):
    operator = User.objects.create_user("operator", password="pw-op-123")
    operator.groups.add(Group.objects.get_or_create(name="admin")[0])
    newcomer = User.objects.create_user("newcomer", password="pw-new-123")
    as_newcomer = _login(newcomer)
    assert as_newcomer.get(f"/sites/{site.id}/").status_code == 404
    response = _login(operator).post(
        "/admin/sessions_app/sitemembership/add/",
        {"user": newcomer.pk, "site": site.pk, "role": "analyst"},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert as_newcomer.get(f"/sites/{site.id}/").status_code == 200
    [entry] = AdminAction.objects.filter(action="site.grant")
    assert entry.actor == operator and "newcomer" in entry.target


def test_every_site_route_goes_through_the_one_check(site):
    """Besides the answers above: each view is a site_page or a SiteView (permissions.site_for)."""
    from django.urls import resolve

    from sessions_app.domain.permissions import SiteView

    for url in _urls(site.id, uuid.uuid1()):
        view = resolve(url).func
        view_class = getattr(view, "view_class", object)
        assert hasattr(view, "site_role") or issubclass(view_class, SiteView), url


def test_funnels_are_defined_by_the_sites_admins(client, analyst, site):
    """Analysts read funnels; creating, changing and deleting them is for site admins
    (and superusers), by API and by page, and the pages show analysts no form."""
    api = f"/api/sites/{site.id}/funnels"
    definition = {"steps": FUNNEL_STEPS}
    funnel = defs.funnel_create(site=site, name="kept", definition=definition)
    form = {
        "name": "x",
        "step-1-kind": "pageview",
        "step-1-value": "/",
        "step-2-kind": "click",
        "step-2-value": "a",
        "count_by": "user",
    }
    refused = [
        client.post(api, {"name": "new", "definition": definition}, "application/json"),
        client.put(f"{api}/{funnel.pk}", {"name": "renamed"}, "application/json"),
        client.delete(f"{api}/{funnel.pk}"),
    ]
    for response in refused:
        assert response.status_code == 403, response.content
        assert response.json()["field"] == "auth" and "admin" in response.json()["error"]
    assert client.post(f"/sites/{site.id}/funnels/", form).status_code == 403
    assert client.post(f"/sites/{site.id}/funnels/{funnel.pk}/", form).status_code == 403
    funnel.refresh_from_db()
    assert (funnel.name, Funnel.objects.filter(site=site).count()) == ("kept", 1)
    # An analyst still reads them, without the form.
    assert client.get(f"{api}/{funnel.pk}").status_code == 200
    for url in (f"/sites/{site.id}/funnels/", f"/sites/{site.id}/funnels/{funnel.pk}/"):
        page = client.get(url)
        assert page.status_code == 200 and 'id="funnel-form"' not in page.content.decode()
        assert "site's admins" in page.content.decode()
    member(analyst, site, "admin")
    made = client.post(api, {"name": "new", "definition": definition}, "application/json")
    assert made.status_code == 201
    renamed = client.put(f"{api}/{funnel.pk}", {"name": "renamed"}, "application/json")
    assert renamed.json()["name"] == "renamed"
    assert client.delete(f"{api}/{made.json()['id']}").status_code == 204
    assert client.post(f"/sites/{site.id}/funnels/", form).status_code == 302
    for url in (f"/sites/{site.id}/funnels/", f"/sites/{site.id}/funnels/{funnel.pk}/"):
        assert 'id="funnel-form"' in client.get(url).content.decode()
    root = _login(User.objects.create_superuser("root", password="pw-root-123"))
    assert root.delete(f"{api}/{funnel.pk}").status_code == 204
