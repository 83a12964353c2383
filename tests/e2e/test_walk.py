"""Every page of the app in Chromium, on a desktop (1366x900) and a phone (390x844): it
answers, logs no console error, never scrolls sideways, and axe-core finds no serious or
critical violation. On the desktop each page is then switched to dark colours (CSS alone
reads the scheme) and axe's colour rules run again. Screenshots go to
artifacts/walk-<viewport>-<page>.png (walk-dark-<page>.png for the dark colours)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connections
from django.test import override_settings
from django.utils import timezone
from playwright.sync_api import Error as PlaywrightError

from sessions_app.domain.accounts import tokens
from sessions_app.domain.erasure import erasures
from sessions_app.domain.jobs import goal_backfill
from sessions_app.domain.ledger import sites
from sessions_app.domain.system import demo
from sessions_app.features.annotations import notes
from sessions_app.features.funnels import defs
from sessions_app.features.sharing import defs as sharing
from sessions_app.features.system.views import PRODUCTS
from sessions_app.foundation.models import Segment
from tests.support.browser import HUMAN_AGENT, screenshot
from tests.support.sealing import seal_everything
from tests.support.shared import sql_snapshot

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True, databases=["default", "cassandra"]),
    # One worker walks the three viewports: the shop's data is built once a module.
    pytest.mark.xdist_group("walk"),
]

FRAME = "() => new Promise(done => requestAnimationFrame(() => setTimeout(done)))"
# After a frame (the switched colours' styles computed), until the CSS transitions it
# started have ended.
TRANSITIONS = (
    "() => new Promise(done => requestAnimationFrame(() => setTimeout(done)))"
    ".then(() => Promise.allSettled(document.getAnimations()"
    ".filter(a => a instanceof CSSTransition).map(a => a.finished)))"
)
# The page's server time: from its request sent to the answer's first byte (Navigation Timing).
SERVER_TIME = (
    "(() => { const n = performance.getEntriesByType('navigation')[0];"
    " return n ? n.responseStart - n.requestStart : 0; })()"
)
AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"
VIEWPORTS = {"desktop": {"width": 1366, "height": 900}, "phone": {"width": 390, "height": 844}}
# The desktop's pages in dark colours: only the rules that read colours can find what the
# light page's full run did not.
DARK_RULES = ["color-contrast", "link-in-text-block"]
FUNNEL = {
    "steps": [
        {"kind": "pageview", "path": "/demo/products", "match": "prefix"},
        {"kind": "pageview", "path": "/demo/cart"},
        {"kind": "pageview", "path": "/demo/checkout"},
    ],
    "count_by": "user",
    "window": {"unit": "session"},
}
# Pages found from others (a session, a user): their link on the page named first.
FOUND = {
    "session": ("sessions", "table.explorer tbody tr a[href*='/sessions/']"),
    "user": ("sessions", "table.explorer tbody tr a[href*='/users/']"),
}
GOAL = {"kind": "pageview", "path": "/demo/checkout", "match": "prefix"}
# The demo shop (a site named "Demo Shop"): its home and every page it links to.
DEMO = ["", "products", *(f"products/{p['slug']}" for p in PRODUCTS), "cart", "checkout", "about"]


@pytest.fixture
def walker(browser, live_server, request) -> Iterator[Any]:
    viewport = VIEWPORTS.get(request.param, VIEWPORTS["desktop"])
    context = browser.new_context(
        user_agent=HUMAN_AGENT,
        viewport=viewport,
        color_scheme="light",
        has_touch=request.param == "phone",
        is_mobile=request.param == "phone",
    )
    # An init script is not page script: the page's CSP (script-src 'self') does not apply.
    context.add_init_script(path=str(AXE))
    yield context, request.param
    context.close()


@pytest.fixture(scope="module")
def built(live_server, django_db_setup, django_db_blocker) -> tuple[Any, dict[str, str], str]:
    """The shop's data, built once for the three walks: its Cassandra rows (events, sealed
    aggregates, goal counts) stay for the module (a site of its own); its SQL rows are
    kept as a snapshot, since each walk's transactional test flushes them."""
    with django_db_blocker.unblock():
        site, paths = _shop(live_server)
        return site, paths, sql_snapshot()


@pytest.fixture
def shop(built, live_server, transactional_db) -> tuple[Any, dict[str, str]]:
    """The built shop with its SQL rows as they were built, and a "Demo Shop" site of the
    walk's own (the demo pages' tracker writes to it)."""
    site, paths, snapshot = built
    connections["default"].creation.deserialize_db_from_string(snapshot)
    sites.site_create(name="Demo Shop", origins=[live_server.url])
    return site, paths


def _shop(live_server) -> tuple[Any, dict[str, str]]:
    """A site with three days of the demo shop's traffic, a funnel, a token, an erasure
    receipt; return it with the paths of its pages (and the installation's)."""
    site = sites.site_create(name="Walk shop", origins=[live_server.url])
    now = timezone.now()
    demo.clicks_generate(site=site, users=30, days=3, now=now, seed=5)
    seal_everything(site, now)  # the pages that read sealed hours only (cohorts) show them
    admin = User.objects.create_superuser("walker", password="correct-horse-9")
    funnel = defs.funnel_create(site=site, name="Products to cart", definition=FUNNEL, user=admin)
    tokens.token_create(user=admin, name="walk", expires_days=30)
    receipt = erasures.erasure_request(
        site=site, key="nobody-here", kind="user_id", requested_by=admin
    )
    goal = goal_backfill.goal_save(site=site, name="Reached checkout", definition=GOAL, now=now)
    goal_backfill.goal_backfill(goal_id=goal.pk, now=now)
    segment = Segment.objects.create(
        site=site, name="Desktop visitors", filters={"device": "desktop"}, owner=admin, shared=True
    )
    shared = sharing.link_create(site=site, user=admin, name="walk", reports=["performance"])
    locked = sharing.link_create(site=site, user=admin, name="locked", segment=segment.pk)
    guarded = sharing.link_create(site=site, user=admin, name="guarded", password="walk-secret")
    # Notes on every time chart: a public day and a range of two.
    today = notes.today(site)
    note = notes.annotation_save(
        site=site, user=admin, day=today - timedelta(days=1), note="Newsletter sent", public=True
    )
    notes.annotation_save(
        site=site,
        user=admin,
        day=today - timedelta(days=3),
        end_day=today - timedelta(days=2),
        note="Spring sale, 20 % off every grinder",
    )
    s = f"/sites/{site.id}"
    paths = {
        "home": "/",
        "dashboard": f"{s}/",
        "dashboard-compared": f"{s}/?period=30d&compare=previous&device=desktop",
        "sessions": f"{s}/sessions/",
        "users": f"{s}/users/",
        "users-search": f"{s}/users/?q=a",
        "goals": f"{s}/goals/",
        "goal": f"{s}/goals/{goal.pk}/",
        "segments": f"{s}/segments/",
        "segment": f"{s}/segments/{segment.pk}/",
        "dashboard-segment": f"{s}/?device=desktop",
        "share-links": f"{s}/share/",
        "share": f"/share/{shared.slug}/",
        "share-performance": f"/share/{shared.slug}/performance/",
        "share-locked": f"/share/{locked.slug}/?period=30d",
        "share-password": f"/share/{guarded.slug}/",
        "annotations": f"{s}/annotations/",
        "annotation": f"{s}/annotations/{note.pk}/",
        "funnels": f"{s}/funnels/",
        "funnel": f"{s}/funnels/{funnel.pk}/",
        "funnel-units": f"{s}/funnels/{funnel.pk}/units/?step=1&outcome=reached",
        "paths": f"{s}/paths/",
        "transitions": f"{s}/transitions/?page=/demo/products",
        "transitions-choose": f"{s}/transitions/",
        "heatmaps": f"{s}/heatmaps/?page=/demo/products",
        "heatmaps-choose": f"{s}/heatmaps/",
        "performance": f"{s}/performance/",
        "performance-page": f"{s}/performance/page?page=/demo/products",
        "cohorts": f"{s}/cohorts/",
        "cohorts-by-day": f"{s}/cohorts/?unit=day",
        "cohort-users": f"{s}/cohorts/users?cohort=0&offset=0",
        "site": f"{s}/site",
        "heatmap-links-revoke": f"{s}/site/heatmap-links/revoke",
        "tokens": "/account/tokens/",
        "retention": "/retention/",
        "erasures": "/erasure/",
        "erasure": f"/erasure/{receipt.pk}/",
        "sizing": "/sizing/?writes_per_second=120&row_bytes=300",
        "partitions": "/sizing/partitions/",
        "admin": "/admin/",
        "api-docs": "/api/docs",
        **{f"demo-{p.replace('/', '-') or 'home'}": f"/demo/{p}" for p in DEMO},
        "not-found": "/no-such-page/",
    }
    return site, paths


def _in_flight(page: Any) -> set[Any]:
    """The page's requests not finished (nor failed) yet, kept by the page's events."""
    pending: set[Any] = set()
    page.on("request", lambda request: pending.add(request))
    page.on("requestfinished", lambda request: pending.discard(request))
    page.on("requestfailed", lambda request: pending.discard(request))
    return pending


def _settle(page: Any, pending: set[Any], timeout: float = 30.0) -> None:
    """After the load event: wait until no request is in flight, then for a frame drawn
    after that (what a response's handler drew). This is what "networkidle" waited for,
    without its 500 ms of quiet on each page (nothing but the favicon starts after load)."""
    deadline = time.monotonic() + timeout
    page.evaluate(FRAME)  # also lets the request events of the page arrive here
    while pending and time.monotonic() < deadline:
        page.evaluate(FRAME)
    assert not pending, f"still loading after {timeout} s: {[r.url for r in pending]}"


def _visit(
    page: Any, pending: set[Any], url: str, name: str, problems: list[str], viewport: str
) -> float:
    """Open the page and note what is wrong with it; return its server time (ms: from the
    request sent to the first byte of the answer, over loopback)."""
    try:
        response = page.goto(url)
    except PlaywrightError as exc:
        # The page before reloads itself while its work runs (an erasure's receipt, every
        # 3 s): on a busy machine its reload can start as this navigation does.
        if "ERR_ABORTED" not in str(exc):
            raise
        response = page.goto(url)
    expected_404 = "no-such-page" in url
    status = response.status if response else 0
    if (status >= 400) != expected_404:
        problems.append(f"{name}: HTTP {status}")
    _settle(page, pending)
    wide, room = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    if wide > room:
        problems.append(f"{name}: the page scrolls sideways ({wide} px in {room} px)")
    options: dict[str, Any] = {"resultTypes": ["violations"]}
    if viewport == "phone":  # WCAG 2.2's 24 px targets (or 24 px apart): a thumb's
        options["rules"] = {"target-size": {"enabled": True}}
    _axe(page, options, name, problems)
    screenshot(page, f"walk-{viewport}-{name}")
    if viewport == "desktop":
        # The same page in dark colours, without loading it again.
        page.emulate_media(color_scheme="dark")
        page.evaluate(TRANSITIONS)  # colours that fade (the admin's links) read when done
        _axe(
            page, {"resultTypes": ["violations"], "runOnly": DARK_RULES}, f"{name} (dark)", problems
        )
        screenshot(page, f"walk-dark-{name}")
        page.emulate_media(color_scheme="light")
    return float(page.evaluate(SERVER_TIME))


def _axe(page: Any, options: dict[str, Any], name: str, problems: list[str]) -> None:
    """axe-core on the page as it is drawn; its serious and critical violations noted."""
    result = page.evaluate("async (options) => await axe.run(document, options)", options)
    for v in result["violations"]:
        if v["impact"] in ("serious", "critical"):
            targets = [n["target"] for n in v["nodes"][:3]]
            problems.append(f"{name}: axe {v['impact']} {v['id']} ({v['help']}) at {targets}")


@pytest.mark.parametrize("walker", VIEWPORTS, indirect=True)
def test_every_page_answers_fits_and_passes_axe(live_server, walker, shop, record_property):
    context, viewport = walker
    site, paths = shop
    page = context.new_page()
    pending = _in_flight(page)
    problems: list[str] = []
    page.on(
        "console",
        lambda m: (
            problems.append(f"console: {m.text}")
            if m.type == "error" and "404" not in m.text
            else None
        ),
    )
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))

    page.goto(f"{live_server.url}/accounts/login/")
    _visit(page, pending, f"{live_server.url}/accounts/login/", "login", problems, viewport)
    page.fill("input[name=username]", "walker")
    page.fill("input[name=password]", "correct-horse-9")
    page.click("main button[type=submit]")
    page.wait_for_url(lambda url: "/accounts/login/" not in url)  # logged in, and loaded
    times: dict[str, float] = {}
    for name, path in paths.items():
        times[name] = _visit(page, pending, f"{live_server.url}{path}", name, problems, viewport)
    # The pages' server times, printed at the end of the run (tests/conftest.py): read,
    # never asserted (speed is the benches' to measure).
    record_property("server_ms", times)
    with override_settings(DEBUG=True):  # the styleguide is shown in development only
        _visit(page, pending, f"{live_server.url}/styleguide/", "styleguide", problems, viewport)
    for name, (on, selector) in FOUND.items():
        page.goto(f"{live_server.url}/sites/{site.id}/{on}/")
        href = page.locator(selector).first.get_attribute("href")
        assert href, f"no {name} link on {on}"
        _visit(page, pending, f"{live_server.url}{href}", name, problems, viewport)
        if name == "user":
            _visit(
                page, pending, f"{live_server.url}{href}activity", "activity", problems, viewport
            )
    assert problems == [], "\n".join(problems)
