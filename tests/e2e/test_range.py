"""The range picker, the nav that carries it and the main chart, in headless Chromium.

The chart is driven on /chart-fixture/ (tests/e2e/chart_urls.py: a chart dict of the data
contract, KPI-card links) so it is tested apart from the dashboard's numbers; the picker
and the nav on the real pages. Screenshots at 1366x900 and 390x844 go to artifacts/."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlsplit
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth.models import User

from sessions_app.domain.ledger import sites
from tests.support.accounts import member
from tests.support.browser import screenshot

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True, databases=["default", "cassandra"]),
]
SIZES = {"wide": {"width": 1366, "height": 900}, "narrow": {"width": 390, "height": 844}}


@pytest.fixture
def chart_urls(settings) -> None:
    settings.ROOT_URLCONF = "tests.e2e.chart_urls"


def _query(page) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.url).query)


def _open(context, live_server, path: str, errors: list[str]):
    page = context.new_page()
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{live_server.url}{path}")
    return page


@pytest.mark.parametrize("size", SIZES)
def test_the_chart_draws_hovers_switches_metric_and_says_when_empty(
    live_server, browser, chart_urls, size
):
    context = browser.new_context(viewport=SIZES[size])
    errors: list[str] = []
    page = _open(context, live_server, "/chart-fixture/", errors)
    page.wait_for_selector("#main-chart.drawn")
    assert page.locator("#main-chart canvas").count() == 1
    assert page.locator("#chart-title").inner_text() == "Unique visitors"
    assert page.locator("#main-chart .u-axis").count() == 2  # a time axis and a value axis
    assert page.locator("#main-chart .chart-table tbody tr").count() == 30  # the text version
    first_row = page.locator("#main-chart .chart-table tbody tr").first.inner_text()
    assert first_row.startswith("Sun, 1 Nov 2026\t1,200\t960\t+25.0%"), first_row
    box = page.locator("#main-chart .u-over").bounding_box()
    page.mouse.move(box["x"] + 2, box["y"] + box["height"] / 2)
    tip = page.locator("#main-chart .chart-tip")
    tip.wait_for(state="visible")
    text = tip.inner_text()
    assert "Sun, 1 Nov 2026" in text and "Unique visitors: 1,200" in text, text
    assert "Fri, 2 Oct 2026: 960" in text and "+25.0%" in text, text
    screenshot(page, f"chart-fixture-hover-{size}")
    page.click("a[data-metric=bounce_rate]")
    assert page.locator("#chart-title").inner_text() == "Bounce rate"
    assert _query(page) == {"metric": ["bounce_rate"]}  # replaceState: no reload
    assert page.locator("a[data-metric=bounce_rate]").get_attribute("aria-current") == "true"
    assert page.locator("a[data-metric=visitors]").get_attribute("aria-current") is None
    assert "50.0%" in page.locator("#main-chart .chart-table").inner_text()
    page.goto(f"{live_server.url}/chart-fixture/?empty=1")
    page.wait_for_selector("#main-chart.drawn")
    assert page.locator("#main-chart .chart-empty").inner_text() == "No data in this range"
    assert page.locator("#main-chart canvas").count() == 0
    screenshot(page, f"chart-fixture-empty-{size}")
    assert errors == []  # and nothing the CSP refused
    context.close()


def test_a_month_of_hours_draws_every_hour(live_server, context, chart_urls):
    """744 points draw, each in the table. (How fast is not asserted: a test's clock
    measures the machine's neighbours too; CI saw 5.6 s with 56 % of the CPU stolen.)"""
    errors: list[str] = []
    page = _open(context, live_server, "/chart-fixture/?points=744&grain=hour", errors)
    page.wait_for_selector("#main-chart.drawn")
    assert page.locator("#main-chart .chart-table tbody tr").count() == 744
    assert errors == []


def _login(context, live_server, site) -> tuple[object, list[str]]:
    user = User.objects.create_user("range-ana", password="pw-range-1234")
    member(user, site)
    errors: list[str] = []
    page = _open(context, live_server, "/accounts/login/", errors)
    page.fill("input[name=username]", "range-ana")
    page.fill("input[name=password]", "pw-range-1234")
    with page.expect_navigation():
        page.click("button[type=submit]")
    return page, errors


def test_pick_presets_custom_days_and_compare_and_the_nav_keeps_them(live_server, browser):
    site = sites.site_create(name="Range shop", origins=[live_server.url])
    site.time_zone = "Europe/Berlin"
    site.save()
    context = browser.new_context(viewport=SIZES["wide"])
    page, errors = _login(context, live_server, site)
    page.goto(f"{live_server.url}/sites/{site.id}/?country=DE")
    assert page.locator("#range-period").input_value() == "7d"
    assert "Europe/Berlin" in page.locator("#range-shown").inner_text()
    assert page.locator("#range-custom").is_hidden()  # the date inputs only for Custom
    with page.expect_navigation():
        page.select_option("#range-period", "30d")  # applies at once
    # The previous period is compared by default; "No comparison" is kept as one goes on.
    assert _query(page) == {"period": ["30d"], "compare": ["previous"], "country": ["DE"]}
    assert "compared with" in page.locator("#range-shown").inner_text()
    with page.expect_navigation():
        page.select_option("#range-compare", "off")
    assert _query(page)["compare"] == ["off"]
    assert "compared with" not in page.locator("#range-shown").inner_text()
    page.select_option("#range-period", "custom")
    assert page.locator("#range-custom").is_visible()
    # The days as the app writes them (YYYY-MM-DD), not the browser's locale's mm/dd/yyyy.
    assert page.locator("#range-from").get_attribute("placeholder") == "YYYY-MM-DD"
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", page.locator("#range-to").input_value())
    today = datetime.now(UTC).astimezone(ZoneInfo(site.time_zone)).date()
    first, last = today - timedelta(days=20), today - timedelta(days=10)
    page.fill("#range-from", first.isoformat())
    page.fill("#range-to", last.isoformat())
    with page.expect_navigation():
        page.click("#range-apply")
    wanted = {
        "period": ["custom"],
        "from": [first.isoformat()],
        "to": [last.isoformat()],
        "compare": ["off"],
        "country": ["DE"],
    }
    assert _query(page) == wanted
    screenshot(page, "range-dashboard-custom-wide")
    for name in ("Sessions", "Funnels", "Paths", "Heatmaps", "Dashboard"):
        with page.expect_navigation():
            page.click(f"nav.main-nav a:text-is('{name}')")
        assert _query(page) == wanted, name
        assert page.locator("#range-period").input_value() == "custom", name
        assert page.locator("#range-from").input_value() == first.isoformat(), name
        if name == "Dashboard":  # the only one of these whose numbers it changes
            assert page.locator("#range-compare").input_value() == "off", name
        else:
            assert page.locator("#range-compare").count() == 0, name
            assert page.locator("#range-picker input[name=compare]").input_value() == "off"
    page.set_viewport_size(SIZES["narrow"])
    for name in ("Sessions", "Dashboard"):
        page.click("#menu-button")  # below 900 px the nav opens from the menu button
        with page.expect_navigation():
            page.click(f"nav.main-nav a:text-is('{name}')")
        assert page.evaluate("document.documentElement.scrollWidth") <= 390 + 1, name
        screenshot(page, f"range-{name.lower()}-narrow")
    assert errors == []
    context.close()


def test_without_javascript_the_picker_applies_with_its_button(live_server, browser):
    site = sites.site_create(name="No JS shop", origins=[live_server.url])
    context = browser.new_context(java_script_enabled=False, viewport=SIZES["narrow"])
    page, _ = _login(context, live_server, site)
    page.goto(f"{live_server.url}/sites/{site.id}/sessions/")
    page.select_option("#range-period", "yesterday")
    with page.expect_navigation():
        page.click("#range-apply")
    assert _query(page)["period"] == ["yesterday"]
    assert "Yesterday" in page.locator("#range-shown").inner_text()
    screenshot(page, "range-sessions-nojs-narrow")
    context.close()
