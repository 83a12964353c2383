"""Annotations in headless Chromium (1366x900 and 390x844): an analyst opens "Add note"
under the dashboard's chart, picks a day by clicking the chart, writes the note and saves
it; back on the same dashboard its marker stands on the chart, and hovering it, focusing
it from the keyboard or tapping it shows the note; the period's notes are listed under
the chart. A range shows as a band."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from sessions_app.domain.ledger import sites
from sessions_app.domain.system import demo
from sessions_app.features.annotations import notes
from sessions_app.foundation.models import Annotation
from tests.support.accounts import member
from tests.support.browser import screenshot

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True, databases=["default", "cassandra"]),
]

SIZES = {"desktop": {"width": 1366, "height": 900}, "phone": {"width": 390, "height": 844}}


@pytest.mark.parametrize("size", sorted(SIZES))
def test_add_a_note_from_the_dashboard_chart_and_read_it_on_its_marker(live_server, context, size):
    site = sites.site_create(name="Noted shop", origins=[live_server.url])
    now = timezone.now()
    demo.clicks_generate(site=site, users=30, days=3, now=now, seed=8)
    analyst = member(User.objects.create_user("noter", password="correct-horse-7"), site)
    today = notes.today(site)
    notes.annotation_save(
        site=site,
        user=analyst,
        day=today - timedelta(days=5),
        end_day=today - timedelta(days=4),
        note="Newsletter sent to 4,000 readers",
    )
    page = context.new_page()
    page.set_viewport_size(SIZES[size])
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "noter")
    page.fill("input[name=password]", "correct-horse-7")
    page.click("button[type=submit]")
    dashboard = f"{live_server.url}/sites/{site.id}/?period=7d"
    page.goto(dashboard)
    page.wait_for_selector("#main-chart.drawn .chart-note")
    assert page.locator(".chart-note-band").count() == 1  # the range
    # Open "Add note", then click the chart's first day: the form takes that day.
    page.click("#note-add > summary")
    over = page.locator("#main-chart .u-over").bounding_box()
    assert over
    page.mouse.click(over["x"] + 3, over["y"] + over["height"] / 2)
    first_day = (today - timedelta(days=6)).isoformat()
    assert page.input_value("#note-day") == first_day
    page.fill("#note-day", (today - timedelta(days=1)).isoformat())
    page.fill("#note-text", "Checkout redesign shipped")
    page.check("#note-add input[name=public]")
    screenshot(page, f"annotations-add-{SIZES[size]['width']}")
    with page.expect_navigation():
        page.click("#note-add button[type=submit]")
    assert page.url == dashboard
    saved = Annotation.objects.get(site=site, note="Checkout redesign shipped")
    assert saved.day == today - timedelta(days=1) and saved.public
    assert saved.created_by == analyst
    page.wait_for_selector("#main-chart.drawn .chart-note")
    flag = page.locator(f".chart-note[data-note='{saved.pk}']")
    tip = page.locator("#main-chart .chart-note-tip")
    # Hover (a mouse), focus (the keyboard), tap (a finger: a click) each show the note.
    flag.hover()
    assert tip.is_visible() and "Checkout redesign shipped" in tip.inner_text()
    assert "noter" in tip.inner_text()
    page.mouse.move(0, 0)
    flag.blur()
    assert not tip.is_visible()
    page.keyboard.press("Escape")
    flag.focus()
    assert tip.is_visible() and "Checkout redesign shipped" in tip.inner_text()
    box, frame = flag.bounding_box(), page.locator("#main-chart").bounding_box()
    assert box and frame and box["width"] >= 24 and box["height"] >= 24  # a thumb's target
    assert frame["x"] <= box["x"] and box["x"] + box["width"] <= frame["x"] + frame["width"]
    tip_box = tip.bounding_box()
    assert tip_box and frame["x"] <= tip_box["x"]
    assert tip_box["x"] + tip_box["width"] <= frame["x"] + frame["width"] + 1
    screenshot(page, f"annotations-marker-{SIZES[size]['width']}")
    flag.blur()
    flag.click()
    assert tip.is_visible()
    # The period's notes are also listed under the chart, the earliest first.
    listed = page.locator("#chart-notes .note-item .note-text").all_inner_texts()
    assert listed == ["Newsletter sent to 4,000 readers", "Checkout redesign shipped"]
    # Another metric redraws the chart: one set of markers, not two.
    page.locator("a[data-metric]").nth(1).click()
    page.wait_for_selector("#main-chart .chart-note")
    assert page.locator("#main-chart .chart-note").count() == 2
    wide, room = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert wide <= room
    # A chart by hour (the last 24 hours): today's note at the bucket of its midnight.
    notes.annotation_save(site=site, user=analyst, day=today, note="Hotfix deployed")
    page.goto(f"{live_server.url}/sites/{site.id}/?period=24h")
    page.wait_for_selector("#main-chart.drawn .chart-note")
    hotfix = page.locator(".chart-note[aria-label*='Hotfix deployed']").bounding_box()
    over = page.locator("#main-chart .u-over").bounding_box()
    at = page.evaluate(MIDNIGHT, today.isoformat())
    assert hotfix and over and at is not None
    expected = over["x"] + over["width"] * at
    assert abs(hotfix["x"] + hotfix["width"] / 2 - expected) <= 2, (hotfix, over, at)
    screenshot(page, f"annotations-hourly-{SIZES[size]['width']}")
    assert errors == []


# Where today's midnight (UTC: the site's zone) lies along the hourly chart's buckets, as a
# share of the plot's width.
MIDNIGHT = """day => {
  const buckets = JSON.parse(document.getElementById('dashboard-chart').textContent).buckets
    .map(b => Date.parse(b));
  const i = buckets.indexOf(Date.parse(day + 'T00:00:00Z'));
  return i < 0 ? null : i / (buckets.length - 1);
}"""
