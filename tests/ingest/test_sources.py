"""One source is one row (foundation/sources.py): a source's spellings are one name at
ingest, and rows stored before ingest spelt them are added up on the read path."""

from __future__ import annotations

import string
from collections import Counter
from datetime import timedelta

import pytest
from django.utils import timezone
from hypothesis import given
from hypothesis import strategies as st

from sessions_app.domain.aggregates import seal
from sessions_app.domain.ingest import enrich
from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.foundation import sources
from sessions_app.foundation.core import timebuckets
from tests.support.events import event

SHOP = "https://shop.example/"


@pytest.mark.parametrize(
    ("spellings", "name"),
    [
        (["google", "Google", "GOOGLE", " google ", "google.com", "www.google.de"], "Google"),
        (["https://www.google.com/search?q=x", "google.co.uk"], "Google"),
        (["instagram", "Instagram", "l.instagram.com", "ig", "IG"], "Instagram"),
        (["facebook", "fb", "m.facebook.com", "Facebook.com"], "Facebook"),
        (["twitter", "x", "t.co", "X (Twitter)"], "X (Twitter)"),
        (["Newsletter", "newsletter", "NEWSLETTER"], "newsletter"),
        (["News.Example.com", "www.news.example.com", "m.news.example.com"], "news.example.com"),
        (["(direct)"], "(direct)"),
    ],
)
def test_every_spelling_of_a_source_is_one_name(spellings, name):
    assert {sources.source_name(s) for s in spellings} == {name}


def test_an_empty_source_is_none():
    assert sources.source_name("") is None
    assert sources.source_name("   ") is None
    assert sources.source_name(None) is None


printable = st.text(string.ascii_letters + string.digits + " .-_/:()", max_size=40)


@given(value=printable)
def test_a_name_is_its_own_name_and_case_does_not_matter(value):
    name = sources.source_name(value)
    assert sources.source_name(name) == name
    assert sources.source_name(value.upper()) == name == sources.source_name(value.lower())


@pytest.mark.parametrize(
    ("url", "referrer", "source"),
    [
        (SHOP + "?utm_source=google&utm_medium=cpc", None, "Google"),
        (SHOP + "?utm_source=Instagram&utm_medium=social", None, "Instagram"),
        (SHOP + "?utm_source=ig&utm_medium=social", None, "Instagram"),
        (SHOP + "?utm_source=Newsletter&utm_medium=email", None, "newsletter"),
        (SHOP, "https://www.google.com/", "Google"),
    ],
)
def test_ingest_stores_the_name(url, referrer, source):
    assert enrich.acquisition(url, referrer).source == source


def _visit(site, at, anon: str, utm: str | None = None, referrer: str | None = None) -> None:
    url = SHOP + (f"?utm_source={utm}&utm_medium=social" if utm else "")
    raw = event(at, anon=anon, url=url, **({"referrer": referrer} if referrer else {}))
    outcome = events_record(source=Source(site=site, received_at=at), raw_events=[raw])
    assert outcome.accepted == 1, outcome


@pytest.mark.django_db(databases=["default", "cassandra"])
def test_rows_stored_before_the_names_add_up_to_one_row(client, analyst, site, monkeypatch):
    """Sessions stored, and an hour sealed, as ingest stored them before (its utm_source
    as given): the report shows one row per source, its sessions those of every
    spelling (brute force: the sessions sent, by name)."""
    now = timezone.now().replace(microsecond=0)
    sealed = timebuckets.floor(now - timedelta(hours=3), "hour")
    if sealed.hour >= 22:
        sealed -= timedelta(hours=3)  # keep the sealed hour in the report's days
    live = now - timedelta(minutes=10)
    old = [(sealed, "google"), (sealed, "Google"), (sealed, "instagram")]
    old += [(sealed, "Instagram"), (sealed, "instagram"), (live, "google"), (live, "IG")]
    new = [(live, "GOOGLE"), (live, "ig"), (live, "Newsletter"), (live, "newsletter")]
    with monkeypatch.context() as before:
        before.setattr(sources, "source_name", lambda value: value)
        for n, (at, utm) in enumerate(old):
            _visit(site, at + timedelta(minutes=n), f"old-{n}", utm)
        assert seal.bucket_seal(site_id=site.id, hour=sealed, now=now)
    for n, (at, utm) in enumerate(new):
        _visit(site, at + timedelta(minutes=n), f"new-{n}", utm)
    _visit(site, live, "referred", referrer="https://www.google.com/")

    body = client.get(
        f"/api/sites/{site.id}/report",
        {"start": timebuckets.floor(sealed, "day").isoformat(), "end": now.isoformat()},
    ).json()
    rows = Counter({r["value"]: r["sessions"] for r in body["breakdowns"]["source"]})
    spelt = [sources.source_name(utm) for _, utm in old + new] + ["Google"]
    assert rows == Counter(spelt) == Counter(Google=5, Instagram=5, newsletter=2)
    assert {b["state"] for b in body["buckets"]} >= {"sealed", "live"}

    # The session list shows the old rows' sources as the report counts them.
    page = client.get(f"/sites/{site.id}/sessions/", {"period": "7d"}).content.decode()
    assert page.count("<span>Google / ") == 5 and page.count("<span>Instagram / ") == 5, page
    assert "<td>google / " not in page and "<td>IG / " not in page
