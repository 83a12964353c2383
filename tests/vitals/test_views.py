"""The Performance page, a page's detail, the CSV and the API: the numbers of the reads
(features/vitals/reads.py), any page path a visitor sent renders, bad parameters answer 400
naming the field, and the site's access is checked (tests/views/test_site_access.py
walks these routes too)."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from sessions_app.domain.aggregates import vitals
from tests.support.events import event, post
from tests.support.sealing import seal_everything

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

ODD = "/produits/été/<script>alert(1)</script>/🛒?"  # the query string is cut at "?"
RANGE = {"period": "7d"}


def test_the_page_shows_cards_trend_and_pages_worst_first(client, site, analyst, measured):
    url = reverse("sessions_app:performance", args=[site.id])
    response = client.get(url, RANGE)
    assert response.status_code == 200
    body = response.content.decode()
    for metric in vitals.METRICS:
        assert f'data-metric="{metric.name}"' in body
    assert 'id="vitals-trend-data"' in body and 'id="vitals-pages"' in body
    api = client.get(reverse("api-site-vitals", args=[site.id]), RANGE).json()
    lcp = next(m for m in api["metrics"] if m["name"] == "lcp")
    assert lcp["n"] > 0 and lcp["p75"] is not None
    assert abs(lcp["good"] + lcp["ni"] + lcp["poor"] - 1) < 1e-9
    shown = [p["metrics"]["lcp"]["p75"] for p in api["pages"] if p["metrics"]["lcp"]["p75"]]
    assert shown == sorted(shown, reverse=True)
    assert set(api["trend"]["series"]) == {m.name for m in vitals.METRICS}
    rows = list(
        csv.DictReader(
            io.StringIO(
                client.get(
                    reverse("sessions_app:performance-csv", args=[site.id]), RANGE
                ).content.decode()
            )
        )
    )
    assert [r["page"] for r in rows] == [p["page"] for p in api["pages"]]


def test_any_page_path_renders_with_its_elements(client, site, analyst, live_now):
    view = event(live_now, url="https://shop.example" + ODD)
    weird = '<img src=x onerror="alert(1)"> “§” 🛒'
    props = {"pageview": view["id"], "lcp": 5200, "lcp_el": weird, "cls": 0.3, "cls_el": weird}
    vitals_event = event(live_now, kind="custom", name="$vitals", url=view["url"], props=props)
    assert post(client, site, [view, vitals_event]).json()["accepted"] == 2
    seal_everything(site, timezone.now() + timedelta(hours=2))
    page = ODD.split("?")[0]
    response = client.get(reverse("sessions_app:performance", args=[site.id]), {"period": "24h"})
    assert response.status_code == 200
    assert "<script>alert(1)</script>" not in response.content.decode()
    detail = client.get(
        reverse("sessions_app:performance-page", args=[site.id]), {"period": "24h", "page": page}
    )
    body = detail.content.decode()
    assert detail.status_code == 200 and "&lt;img src=x" in body and "<img src=x" not in body
    api = client.get(
        reverse("api-site-page-vitals", args=[site.id]), {"period": "24h", "page": page}
    ).json()
    assert api["elements"]["lcp"] == [{"element": weird, "times": 1, "poor": 1, "mean": 5200.0}]
    assert api["elements"]["cls"][0]["element"] == weird


@pytest.mark.parametrize(
    ("route", "params", "field"),
    [
        ("sessions_app:performance", {"period": "1y"}, "period"),
        ("sessions_app:performance", {"sort": "speed"}, "sort"),
        ("sessions_app:performance", {"country": "x" * 65}, "country"),
        ("sessions_app:performance-page", {"page": "nope"}, "page"),
        ("sessions_app:performance-csv", {"compare": "never"}, "compare"),
        ("api-site-vitals", {"browser": " "}, "browser"),
        ("api-site-page-vitals", {}, "page"),
    ],
)
def test_bad_parameters_answer_400_naming_the_field(client, site, analyst, route, params, field):
    response = client.get(reverse(route, args=[site.id]), params)
    assert response.status_code == 400
    if route.startswith("api-"):
        assert response.json()["field"] == field
    else:
        assert f"{field}: " in response.content.decode()


def test_a_stranger_gets_404(client, site):
    from django.contrib.auth.models import User

    client.force_login(User.objects.create_user("stranger", password="pw-stranger-1"))
    for route in ("sessions_app:performance", "sessions_app:performance-csv", "api-site-vitals"):
        assert client.get(reverse(route, args=[site.id])).status_code == 404
