"""Tables measured in headless Chromium: columns line up, long values wrap inside them."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.domain.ledger import sites
from sessions_app.foundation.tables import user_sessions
from tests.support.accounts import member
from tests.support.browser import screenshot
from tests.support.events import event

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True, databases=["default", "cassandra"]),
]

# One unbreakable word near the 128-character limit of an element's text, and a short one.
LONG_TEXT = "Add" + "".join(f"Extended{i}Warranty" for i in range(7))[:117]
SHORT_TEXT = "Go"
LONG_SELECTOR = ">".join(f"div.card-{i}" for i in range(20))
COLUMNS = 5  # since start, delta, type, what, time
SLACK = 0.5  # px: layout rounds to fractions of a pixel


@pytest.fixture
def visit(live_server) -> dict[str, Any]:
    """Three pages and URL-less events before and on them; element texts of 2 to 120 chars."""
    site = sites.site_create(name="Layout shop", origins=[live_server.url])
    now = timezone.now().replace(microsecond=0)
    start = now - timedelta(minutes=30)  # the last event 25 minutes later, all in the past

    def at(seconds: int, **fields: Any) -> dict[str, Any]:
        return event(start + timedelta(seconds=seconds), anon="lin", **fields)

    def click(seconds: int, url: str, text: str, **element: str) -> dict[str, Any]:
        return at(
            seconds, kind="click", url=url, element={"tag": "button", "text": text, **element}
        )

    shop = "https://shop.example"
    raw = [
        at(0, kind="custom", name="$identify", url=None, props={"plan": "trial"}),
        at(5, url=f"{shop}/", title="Home"),
        click(9, f"{shop}/", LONG_TEXT, selector=LONG_SELECTOR),
        click(14, f"{shop}/", SHORT_TEXT, id="go"),
        at(20, kind="custom", name="checkout_started", url=None, props={"cart": "c" * 150}),
        at(65, url=f"{shop}/products/warranty", title="Warranties"),
        click(70, f"{shop}/products/warranty", SHORT_TEXT),
        click(1500, f"{shop}/products/warranty", LONG_TEXT),
        at(1520, url=f"{shop}/cart", title="Cart"),
        click(1525, f"{shop}/cart", "Pay"),
    ]
    events_record(source=Source(site=site, received_at=now), raw_events=raw)
    [summary] = user_sessions.session_list(site_id=site.id, user_key="lin")
    user = User.objects.create_user("ana", password="correct-horse-1")
    member(user, site)
    return {"site": site, "session_id": summary["session_id"], "events": len(raw)}


def _logged_in(context, live_server) -> Any:
    page = context.new_page()
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "ana")
    page.fill("input[name=password]", "correct-horse-1")
    page.click("button[type=submit]")
    page.wait_for_selector("h1")
    return page


def _box(element: Any) -> dict[str, float]:
    box = element.bounding_box()
    assert box is not None, element
    return box


def _same_column(expected: dict[str, float], box: dict[str, float]) -> bool:
    return abs(box["x"] - expected["x"]) <= SLACK and abs(box["width"] - expected["width"]) <= SLACK


def _text_edges(element: Any) -> tuple[float, float]:
    """The left and right edge of a cell's text (its content, not its padding box)."""
    return tuple(
        element.evaluate(
            "cell => { const range = document.createRange(); range.selectNodeContents(cell);"
            " const r = range.getBoundingClientRect(); return [r.left, r.right]; }"
        )
    )


def _fits_the_page(page: Any, table: Any) -> None:
    viewport = page.viewport_size["width"]
    box = _box(table)
    assert box["x"] >= 0 and box["x"] + box["width"] <= viewport + SLACK, (box, viewport)
    # Nothing in the content spills sideways (the site header is another matter).
    assert page.evaluate(
        "(main => main.scrollWidth <= main.clientWidth)(document.body.querySelector('main'))"
    )


@pytest.mark.parametrize("width", [1280, 800, 600])
def test_timeline_columns_line_up_across_page_groups(live_server, context, visit, width):
    page = _logged_in(context, live_server)
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{live_server.url}/sites/{visit['site'].id}/sessions/{visit['session_id']}/")
    page.wait_for_selector("table.timeline")

    assert page.locator("main table").count() == 1  # one table for the whole session
    table = page.query_selector("table.timeline")
    header = table.query_selector_all("thead th")
    assert [h.inner_text().strip() for h in header] == ["Since start", "Δ", "Type", "What", "Time"]
    groups = table.query_selector_all("tbody.page")
    headings = [g.query_selector("tr.page-heading th").inner_text() for g in groups]
    assert len(groups) == 4, headings  # the URL-less event on "/" stays in its group
    assert headings[0] == "(before the first page)"
    assert headings[1].startswith("/ ") and "Home" in headings[1]

    columns = [_box(h) for h in header]
    rows = table.query_selector_all("tbody.page tr.event")
    assert len(rows) == visit["events"]
    for group in groups:
        heading = _box(group.query_selector("tr.page-heading th"))
        assert abs(heading["x"] - columns[0]["x"]) <= SLACK
        assert abs(heading["width"] - sum(c["width"] for c in columns)) <= 2 * SLACK * COLUMNS
        for row in group.query_selector_all("tr.event"):
            cells = row.query_selector_all("td")
            assert len(cells) == COLUMNS
            for index, cell in enumerate(cells):
                box = _box(cell)
                assert _same_column(columns[index], box), (index, box, columns[index])

    long_cells = table.query_selector_all(f"td:has-text('{LONG_TEXT}')")
    assert len(long_cells) == 2
    for cell in long_cells:
        box = _box(cell)
        assert box["width"] <= columns[3]["width"] + SLACK, (box, columns[3])
        assert cell.evaluate("cell => cell.scrollWidth <= cell.clientWidth")  # wrapped, not spilt
        left, right = _text_edges(cell)
        assert box["x"] <= left and right <= box["x"] + box["width"] + SLACK
    short = _box(table.query_selector("td:has-text('#go')"))
    assert _same_column(columns[3], short)
    _fits_the_page(page, table)
    screenshot(page, f"timeline-layout-{width}")


def test_how_often_headers_sit_over_their_numbers(live_server, context, visit):
    page = _logged_in(context, live_server)
    page.goto(f"{live_server.url}/sites/{visit['site'].id}/users/lin/")
    page.wait_for_selector("table.rolling")
    table = page.query_selector("table.rolling")

    header = table.query_selector_all("thead th")
    assert header[0].inner_text() == "Last" and len(header) == 6
    rows = table.query_selector_all("tbody tr")
    assert len(rows) == 2
    for row in rows:
        cells = row.query_selector_all("th, td")
        assert len(cells) == len(header)
        for index, (head, cell) in enumerate(zip(header, cells, strict=True)):
            assert _same_column(_box(head), _box(cell)), (index, head.inner_text())
            if index == 0:  # the label column: labels start where "Last" starts
                assert abs(_text_edges(head)[0] - _text_edges(cell)[0]) <= 1
            else:  # a number column: the window's name ends where its numbers end
                assert abs(_text_edges(head)[1] - _text_edges(cell)[1]) <= 1, head.inner_text()
    assert [c.inner_text() for c in rows[0].query_selector_all("td")][-1] == "3"  # 3 page views
    _fits_the_page(page, table)
    screenshot(page, "profile-how-often")
