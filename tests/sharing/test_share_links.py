"""Share links (features/sharing): made and revoked by a site's admins, opened without a
login; read-only, no sessions or user ids; locked to a segment's filters the viewer cannot
remove (checked against the sessions posted); password, expiry, revocation, framing,
the per-link rate; the API; bad input named, never a 500."""

from __future__ import annotations

import html
import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessions_app.domain.ledger import sites
from sessions_app.features.sharing import defs
from sessions_app.foundation.models import Segment, ShareLink
from tests.support.accounts import auth, member
from tests.support.events import event, post
from tests.support.hypothesis import examples

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

SHOP = "https://shop.example"
HUMAN = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36"  # noqa: E501


def _visits(client, site, source: str, count: int, tag: str) -> None:
    start = timezone.now().replace(microsecond=0) - timedelta(minutes=40)
    for i in range(count):
        anon = f"{tag}-{source}-{i}"
        events = [
            event(start, anon=anon, url=f"{SHOP}/?utm_source={source}"),
            event(start + timedelta(seconds=20), anon=anon, url=f"{SHOP}/pricing"),
        ]
        response = post(client, site, events, HTTP_USER_AGENT=HUMAN, REMOTE_ADDR="81.2.69.142")
        assert response.status_code == 200, response.content


def _admin(site, name: str = "sharer") -> Client:
    client = Client()
    client.force_login(member(User.objects.create_user(name, password="pw-123456"), site, "admin"))
    return client


def _kpi(page: str, metric: str) -> str:
    found = re.search(
        rf'data-metric="{metric}".*?<strong class="kpi-value">([^<]*)</strong>', page, re.S
    )
    assert found, metric
    return found.group(1)


def _make(client, site, **form) -> ShareLink:
    response = client.post(f"/sites/{site.id}/share/", {"name": "For the board", **form})
    assert response.status_code == 302, response.content.decode()[-2000:]
    return ShareLink.objects.filter(site=site).first()


def test_a_link_shows_the_dashboard_read_only_without_sessions_or_user_ids(site):
    _visits(Client(), site, "news", 2, "open")
    admin = _admin(site)
    link = _make(admin, site)
    listed = admin.get(f"/sites/{site.id}/share/").content.decode()
    assert f"/share/{link.slug}/" in listed and "For the board" in listed
    viewer = Client()  # nobody logged in
    response = viewer.get(f"/share/{link.slug}/", {"period": "24h"})
    assert response.status_code == 200
    page = response.content.decode()
    assert _kpi(page, "visits") == "2"
    assert "Shared view · read-only" in page
    # Nothing that reaches a session, a user or a page of the site's own.
    assert "open-news-0" not in page and "user-key" not in page
    assert f"/sites/{site.id}/" not in page and "/api/" not in page
    assert response["X-Frame-Options"] == "DENY"
    assert response["Referrer-Policy"] == "no-referrer"
    assert "noindex" in response["X-Robots-Tag"]
    # The link's viewer is nobody to the site itself or its API.
    assert viewer.get(f"/sites/{site.id}/").status_code == 302  # to the login page
    assert viewer.get(f"/api/sites/{site.id}/report").status_code in (401, 403)
    # A report the link does not open is 404, as is any other slug.
    assert viewer.get(f"/share/{link.slug}/performance/").status_code == 404
    assert viewer.get(f"/share/{link.slug[:-1]}x/").status_code == 404
    link.refresh_from_db()
    assert link.last_used_at is not None


def test_a_link_locked_to_a_segment_counts_only_its_sessions_whatever_the_viewer_asks(site):
    _visits(Client(), site, "news", 2, "lock")
    _visits(Client(), site, "ads", 3, "lock")
    admin = _admin(site)
    segment = Segment.objects.create(
        site=site, name="News readers", filters={"source": "news"}, shared=True
    )
    link = _make(admin, site, segment=str(segment.pk))
    assert (link.filters, link.segment_name) == ({"source": "news"}, "News readers")
    viewer = Client()
    page = viewer.get(f"/share/{link.slug}/", {"period": "24h"}).content.decode()
    assert _kpi(page, "visits") == "2"  # the 2 news sessions of the 5 posted
    assert "Source is news" in page and "chip-lock" in page
    chip = page.split('data-filter="source"', 1)[1].split("</li>", 1)[0]
    assert "chip-remove" not in chip
    # Asking for the other source, or for none, does not lift the lock.
    for asked in ({"source": "ads"}, {"source": ""}):
        other = viewer.get(f"/share/{link.slug}/", {"period": "24h", **asked}).content.decode()
        assert _kpi(other, "visits") == "2", asked
    # A bad filter of the viewer's is dropped with a message; the lock stays.
    bad = viewer.get(f"/share/{link.slug}/", {"period": "24h", "duration_min": "x"})
    assert bad.status_code == 200 and _kpi(bad.content.decode(), "visits") == "2"
    assert "your filters are not applied" in html.unescape(bad.content.decode())
    # A filter of the viewer's own narrows within the lock, and can be removed.
    narrowed = viewer.get(f"/share/{link.slug}/", {"period": "24h", "page": "/nowhere"})
    assert _kpi(narrowed.content.decode(), "visits") == "0"
    # Deleting the segment later does not widen the link.
    segment.delete()
    again = viewer.get(f"/share/{link.slug}/", {"period": "24h"}).content.decode()
    assert _kpi(again, "visits") == "2"
    # A lock that no longer reads as filters opens nothing, never the whole site.
    ShareLink.objects.filter(pk=link.pk).update(filters={"duration_min": "x"})
    assert viewer.get(f"/share/{link.slug}/").status_code == 404
    # The same as the site's own dashboard with the same filters.
    own = admin.get(f"/sites/{site.id}/", {"period": "24h", "source": "news"}).content.decode()
    assert _kpi(own, "visits") == "2"


def test_password_expiry_and_revocation(site):
    admin = _admin(site)
    link = _make(admin, site, password="correct horse")
    viewer = Client()
    url = f"/share/{link.slug}/"
    asked = viewer.get(url).content.decode()
    assert 'type="password"' in asked and "kpi-value" not in asked
    wrong = viewer.post(url, {"password": "wrong horse"})
    assert wrong.status_code == 403
    assert "not this link's password" in html.unescape(wrong.content.decode())
    assert viewer.post(url, {"password": "correct horse"}).status_code == 302
    assert "kpi-value" in viewer.get(url).content.decode()
    assert 'type="password"' in Client().get(url).content.decode()  # another viewer
    # Expired: 404.
    ShareLink.objects.filter(pk=link.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert viewer.get(url).status_code == 404
    ShareLink.objects.filter(pk=link.pk).update(expires_at=None)
    assert viewer.get(url).status_code == 200
    # Revoked, one link alone: 404 from then on; the other link still opens.
    other = _make(admin, site, name="Agency")
    assert admin.post(f"/sites/{site.id}/share/{link.pk}/revoke").status_code == 302
    assert viewer.get(url).status_code == 404
    assert Client().get(f"/share/{other.slug}/").status_code == 200
    listed = admin.get(f"/sites/{site.id}/share/").content.decode()
    assert "revoked" in listed


def test_framing_only_on_the_listed_origins(site):
    admin = _admin(site)
    link = _make(admin, site, embed_origins="https://intranet.example.com, https://a.example")
    response = Client().get(f"/share/{link.slug}/")
    policy = response["Content-Security-Policy"]
    assert "frame-ancestors 'self' https://intranet.example.com https://a.example" in policy
    assert "X-Frame-Options" not in response


def test_each_link_has_its_own_rate(site, settings):
    settings.SHARE_LINK_RATE = 2
    admin = _admin(site)
    first, second = _make(admin, site), _make(admin, site, name="second")
    viewer = Client()
    assert [viewer.get(f"/share/{first.slug}/").status_code for _ in range(2)] == [200, 200]
    limited = viewer.get(f"/share/{first.slug}/")
    assert limited.status_code == 429 and 1 <= int(limited["Retry-After"]) <= 60
    assert viewer.get(f"/share/{second.slug}/").status_code == 200


def test_performance_is_chosen_per_link_and_not_with_a_lock(site):
    admin = _admin(site)
    link = _make(admin, site, reports=["performance"])
    assert link.reports == ["dashboard", "performance"]
    page = Client().get(f"/share/{link.slug}/performance/")
    assert page.status_code == 200 and "Performance" in page.content.decode()
    assert f"/sites/{site.id}/" not in page.content.decode()
    segment = Segment.objects.create(site=site, name="S", filters={"source": "news"}, shared=True)
    refused = admin.post(
        f"/sites/{site.id}/share/",
        {"name": "x", "reports": ["performance"], "segment": str(segment.pk)},
    )
    assert refused.status_code == 400
    assert "reports: Performance cannot" in html.unescape(refused.content.decode())


def test_only_the_sites_admins_manage_links_and_only_their_sites(site):
    analyst = Client()
    analyst.force_login(member(User.objects.create_user("only-analyst", password="x"), site))
    assert analyst.get(f"/sites/{site.id}/share/").status_code == 403
    other = sites.site_create(name="Other", origins=[SHOP])
    admin = _admin(site)
    assert admin.get(f"/sites/{other.id}/share/").status_code == 404
    other_link = defs.link_create(site=other, user=None, name="theirs")
    # An admin of one site cannot revoke another site's link by its id.
    assert admin.post(f"/sites/{site.id}/share/{other_link.pk}/revoke").status_code == 404
    assert admin.post(f"/sites/{other.id}/share/{other_link.pk}/revoke").status_code == 404
    other_link.refresh_from_db()
    assert other_link.revoked_at is None


@pytest.mark.parametrize(
    ("form", "field"),
    [
        ({"name": " "}, "name"),
        ({"reports": ["replays"]}, "reports"),
        ({"segment": "999999"}, "segment"),
        ({"password": "short"}, "password"),
        ({"embed_origins": "javascript:alert(1)"}, "embed_origins"),
        ({"embed_origins": "https://a.example/path"}, "embed_origins"),
        ({"embed_origins": "https://a.example 'unsafe-inline'"}, "embed_origins"),
        ({"password": "long enough", "embed_origins": "https://a.example"}, "embed_origins"),
        ({"expires_days": "0"}, "expires_days"),
    ],
)
def test_bad_input_is_named_and_makes_nothing(site, form, field):
    admin = _admin(site)
    response = admin.post(f"/sites/{site.id}/share/", {"name": "n", **form})
    assert response.status_code == 400
    assert f"{field}: " in html.unescape(response.content.decode())
    assert not ShareLink.objects.filter(site=site).exists()


def test_the_api_lists_makes_and_revokes_links(site, token):
    user = User.objects.get(username="api-user")
    member(user, site, "admin")
    made = Client().post(
        f"/api/sites/{site.id}/share-links",
        {"name": "Board", "embed_origins": ["https://a.example"], "expires_days": 30},
        content_type="application/json",
        **auth(token),
    )
    assert made.status_code == 201, made.content
    body = made.json()
    assert body["url"].endswith(f"/share/{ShareLink.objects.get().slug}/")
    assert (body["state"], body["embed_origins"], body["password"]) == (
        "active",
        ["https://a.example"],
        False,
    )
    listed = Client().get(f"/api/sites/{site.id}/share-links", **auth(token)).json()
    assert [link["name"] for link in listed["share_links"]] == ["Board"]
    bad = Client().post(
        f"/api/sites/{site.id}/share-links",
        {"name": "x", "expires_days": "soon"},
        content_type="application/json",
        **auth(token),
    )
    assert bad.status_code == 400 and "expires_days" in bad.content.decode()
    gone = Client().delete(f"/api/sites/{site.id}/share-links/{body['id']}", **auth(token))
    assert gone.status_code == 204
    assert Client().get(body["url"].split("testserver", 1)[-1]).status_code == 404
    # An analyst's token may not manage links.
    member(user, site, "analyst")
    assert Client().get(f"/api/sites/{site.id}/share-links", **auth(token)).status_code == 403


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    name=st.text(max_size=120),
    reports=st.lists(st.sampled_from(["performance", "dashboard", "x", ""]), max_size=3),
    password=st.text(max_size=140),
    origins=st.text(max_size=200),
    days=st.text(max_size=6),
)
def test_any_form_makes_a_link_or_names_a_field(site, name, reports, password, origins, days):
    user = User.objects.filter(username="fuzz-admin").first()
    user = user or member(User.objects.create_user("fuzz-admin"), site, "admin")
    client = Client()
    client.force_login(user)
    before = ShareLink.objects.filter(site=site).count()
    form = {"name": name, "reports": reports, "password": password}
    form |= {"embed_origins": origins, "expires_days": days}
    response = client.post(f"/sites/{site.id}/share/", form)
    after = ShareLink.objects.filter(site=site).count()
    if response.status_code == 302:
        assert after == before + 1
        link = ShareLink.objects.filter(site=site).first()
        opened = Client().get(f"/share/{link.slug}/")
        assert (
            opened.status_code == 200
            if not link.password
            else 'type="password"' in opened.content.decode()
        )
    else:
        assert response.status_code == 400, response.status_code
        assert re.search(r'class="error" role="alert">\w+: ', response.content.decode())
        assert after == before


@settings(
    max_examples=examples(30),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(slug=st.text(max_size=60))
def test_any_slug_is_404_unless_it_is_a_link(db, slug):
    cleaned = slug.replace("/", "").replace("\x00", "").replace("?", "").replace("#", "")
    response = Client().get(f"/share/{cleaned}/")
    assert response.status_code == 404


def test_a_link_shows_the_public_notes_alone_even_to_a_signed_in_admin(site):
    from sessions_app.features.annotations import notes

    admin = _admin(site, "noter")
    user = User.objects.get(username="noter")
    today = notes.today(site)
    notes.annotation_save(site=site, user=user, day=today, note="Launch day", public=True)
    notes.annotation_save(site=site, user=user, day=today, note="Internal: pricing test")
    link = _make(admin, site, reports=["performance"])
    own = admin.get(f"/sites/{site.id}/", {"period": "7d"}).content.decode()
    assert "Launch day" in own and "Internal: pricing test" in own
    for viewer in (Client(), admin):
        for path in ("", "performance/"):
            page = viewer.get(f"/share/{link.slug}/{path}", {"period": "7d"}).content.decode()
            assert "Launch day" in page, path
            assert "Internal: pricing test" not in page and "noter" not in page, path
            assert "Add note" not in page, path


PARAMS = ["period", "from", "to", "compare", "metric", "source", "country", "page", "goal"]


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(asked=st.dictionaries(st.sampled_from([*PARAMS, "duration_min", "x"]), st.text(max_size=40)))
def test_any_parameters_of_a_viewer_are_answered_and_keep_the_lock(site, asked):
    link = ShareLink.objects.filter(site=site).first() or defs.link_create(
        site=site, user=None, name="fuzzed", reports=[], segment=None
    )
    ShareLink.objects.filter(pk=link.pk).update(filters={"source": "news"})
    response = Client().get(f"/share/{link.slug}/", asked)
    assert response.status_code == 200, (asked, response.status_code)
    page = html.unescape(response.content.decode())
    assert "Source is news" in page and "chip-lock" in page
