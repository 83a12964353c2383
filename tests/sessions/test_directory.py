"""The users directory (foundation/tables/user_directory.py, domain/sessions/directory.py): recent
users and a search by the prefix of a user id, an anonymous id or an email trait, written at ingest,
equal to a brute force over the keys sent, and erased with the user."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from sessions_app import tasks
from sessions_app.domain.erasure import erasures
from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.domain.sessions import directory
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.models import ErasureRequest
from sessions_app.foundation.tables import user_directory
from tests.support.accounts import member
from tests.support.events import event

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1"
)
ALL_ROWS = "SELECT term, user_key FROM {ks}.user_directory WHERE site_id = ? AND prefix = ? LIMIT ?"


def _visit(site, at, anon: str, user: str | None = None, email: str | None = None, **source):
    raws = [event(at, anon=anon, **({"user_id": user} if user else {}))]
    if email:
        raws.append(
            event(
                at + timedelta(seconds=5),
                kind="custom",
                name="$identify",
                anon=anon,
                user_id=user,
                props={"email": email, "plan": "pro"},
            )
        )
    outcome = events_record(
        source=Source(site=site, received_at=at + timedelta(seconds=30), **source), raw_events=raws
    )
    assert outcome.accepted == len(raws), outcome


@pytest.fixture
def people(site):
    at = timezone.now().replace(microsecond=0) - timedelta(hours=2)
    _visit(
        site,
        at,
        "dev-ABC-1",
        "UX.anna",
        "Anna.Müller@Example.com",
        user_agent=IPHONE,
        ip="85.214.132.7",
    )
    _visit(
        site,
        at + timedelta(hours=1),
        "dev-ABC-1",
        "UX.anna",  # her second session
        user_agent=IPHONE,
        ip="85.214.132.9",
    )
    _visit(site, at + timedelta(minutes=3), "ux.bob-device")
    _visit(site, at + timedelta(minutes=4), "zoë-📱")
    return at


def _keys(users) -> list[str]:
    return [u["user_key"] for u in users]


def test_a_prefix_of_a_user_id_anonymous_id_or_email_finds_the_user_in_any_case(site, people):
    found = directory.directory_search(site_id=site.id, query="ux.")
    assert sorted(_keys(found)) == ["UX.anna", "ux.bob-device"]
    anna = next(u for u in found if u["user_key"] == "UX.anna")
    assert anna["identified"] and anna["sessions"] == 2 and anna["matched_by"] == "user id"
    assert anna["country"] == "DE" and anna["device"] == "mobile"
    assert anna["last_seen_at"] >= people + timedelta(hours=1)
    by_email = directory.directory_search(site_id=site.id, query="ANNA.mü")
    assert _keys(by_email) == ["UX.anna"] and by_email[0]["matched_by"] == "email"
    by_device = directory.directory_search(site_id=site.id, query="Dev-abc")
    assert _keys(by_device) == ["UX.anna"] and by_device[0]["matched_by"] == "anonymous id"
    assert _keys(directory.directory_search(site_id=site.id, query="z")) == ["zoë-📱"]
    assert _keys(directory.directory_search(site_id=site.id, query="zoë-📱")) == ["zoë-📱"]
    assert directory.directory_search(site_id=site.id, query="uxa") == []
    assert directory.directory_search(site_id=site.id, query="  ") == []


def test_recent_users_come_identified_first_then_newest(site, people):
    recent = directory.recent_users(site_id=site.id)
    assert _keys(recent) == ["UX.anna", "zoë-📱", "ux.bob-device"]


def test_search_equals_a_brute_force_over_the_keys_sent(site):
    rng = random.Random(38)
    alphabet = "aAbB.-_@ßéÉ🙂x"
    keys = sorted(
        {"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6))) for _ in range(40)}
    )
    at = timezone.now().replace(microsecond=0) - timedelta(hours=1)
    for n, key in enumerate(keys):
        _visit(site, at + timedelta(seconds=n), key)
    prefixes = {k[:n] for k in keys for n in (1, 2, 3, 4)} | {"Ab", "é", "ÉÉ", "x🙂"}
    for prefix in sorted(prefixes):
        want = {k for k in keys if k.lower().startswith(prefix.lower())}
        got = directory.directory_search(site_id=site.id, query=prefix, limit=50)
        assert set(_keys(got)) == set(sorted(want)[:50]) or len(want) > 50, prefix
        assert len(got) == min(len(want), 50), prefix


def test_a_batch_that_continues_a_session_writes_no_directory_row(site):
    at = timezone.now().replace(microsecond=0) - timedelta(hours=1)
    _visit(site, at, "steady")
    rows = prepare(ALL_ROWS)
    before = list(cassandra_session().execute(rows, (site.id, "st", 100)))
    cassandra_session().execute(
        prepare("DELETE FROM {ks}.user_directory WHERE site_id = ? AND prefix = ?"),
        (site.id, "st"),
    )
    _visit(site, at + timedelta(minutes=1), "steady")  # the same session goes on
    assert before and list(cassandra_session().execute(rows, (site.id, "st", 100))) == []


def test_erasing_a_user_removes_every_directory_row_of_it(site, people, settings):
    settings.SUPPRESSION_CACHE_SECONDS = 0
    settings.ERASURE_SETTLE_SECONDS = 0
    root = User.objects.get_or_create(username="root", defaults={"is_superuser": True})[0]
    request = erasures.erasure_request(
        site=site, key="UX.anna", kind=ErasureRequest.USER_ID, requested_by=root
    )
    tasks.erase_user.apply(args=[str(request.pk)]).get()
    request.refresh_from_db()
    assert request.state == ErasureRequest.DONE, request.error
    assert request.counts["user_directory"] >= 9  # 3 terms, 3 prefixes each
    for query in ("ux", "anna", "dev-", "u", "a", "d"):
        assert "UX.anna" not in _keys(directory.directory_search(site_id=site.id, query=query))
    statement = prepare(ALL_ROWS)
    for prefix in ("u", "ux", "ux.", "a", "an", "ann", "d", "de", "dev", "key:UX.anna"):
        left = [r for r in cassandra_session().execute(statement, (site.id, prefix, 100))]
        assert all(r["user_key"] != "UX.anna" for r in left), prefix
    assert _keys(directory.directory_search(site_id=site.id, query="ux")) == ["ux.bob-device"]


def test_the_users_page_lists_searches_and_renders_any_key(client, site, people):
    viewer = User.objects.create_user("viewer", password="pw-12345-abc")
    member(viewer, site)
    client.force_login(viewer)
    page = client.get(f"/sites/{site.id}/users/")
    html = page.content.decode()
    assert page.status_code == 200 and "Recent users" in html
    assert html.index("UX.anna") < html.index("ux.bob-device")
    assert "zoë-📱" in html
    found = client.get(f"/sites/{site.id}/users/", {"q": "anna.m"}).content.decode()
    assert "email: <code>anna.müller@example.com</code>" in found and "UX.anna" in found
    exact = client.get(f"/sites/{site.id}/users/", {"q": "ux.bob-device"})
    assert exact.status_code == 302
    missing = client.get(f"/sites/{site.id}/users/", {"q": "ghost"}).content.decode()
    assert "No user id, anonymous id or email starts with <code>ghost</code>" in missing


def test_a_term_is_written_under_its_first_one_two_and_three_characters() -> None:
    assert user_directory.prefixes("ux.anna") == ["u", "ux", "ux."]
    assert user_directory.prefixes("é") == ["é"]
    assert user_directory.search_bounds("UX.AN") == ("ux.", "ux.an", "ux.an\U0010ffff")
