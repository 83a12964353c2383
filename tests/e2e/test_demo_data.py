"""The demo data's clicks land where Chromium lays out the demo shop: every element of
sessions_app/domain/system/demo_layout.json is on its page, with that selector (as the tracker
writes it) and that box, at 1366 and 390 px wide. A fresh measurement is written to
artifacts/demo_layout.json: after changing the shop, copy its pages into the layout file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sessions_app.domain.ledger import sites
from sessions_app.domain.system import demo
from tests.support.browser import ARTIFACTS

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True, databases=["default", "cassandra"]),
]

MEASURE = (Path(__file__).with_name("demo_layout.js")).read_text(encoding="utf-8")
LAYOUTS = {"wide": (1366, 900), "narrow": (390, 844)}


def test_every_generated_click_target_is_on_its_demo_page_where_the_data_says(
    browser, live_server
) -> None:
    sites.site_create(name="Demo Shop", origins=[live_server.url])
    measured: dict[str, dict] = {}
    for name, (width, height) in LAYOUTS.items():
        context = browser.new_context(
            viewport={"width": width, "height": height}, extra_http_headers={"DNT": "1"}
        )
        page = context.new_page()
        for path in demo.LAYOUT:
            page.goto(f"{live_server.url}{path}")
            found = page.evaluate(MEASURE, path)
            entry = measured.setdefault(path, {"height": {}, "elements": {}})
            entry["height"][name] = found["height"]
            for element in found["elements"]:
                box = element.pop("box")
                entry["elements"].setdefault(element["selector"], element).setdefault("box", {})[
                    name
                ] = box
        context.close()
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "demo_layout.json").write_text(json.dumps(measured, indent=1))
    for path, layout in demo.LAYOUT.items():
        here = measured[path]
        for name in LAYOUTS:
            assert abs(here["height"][name] - layout["height"][name]) <= 40, (path, name)
        for element in layout["elements"]:
            seen = here["elements"].get(element["selector"])
            assert seen is not None, (path, element["selector"])
            assert seen.get("nav") == element.get("nav"), (path, element["selector"])
            for name in LAYOUTS:
                x0, x1, y0, y1 = seen["box"][name]
                want = element["box"][name]
                assert abs(x0 - want[0]) < 0.02 and abs(x1 - want[1]) < 0.02, (path, name)
                assert abs(y0 - want[2]) <= 30 and abs(y1 - want[3]) <= 30, (path, name)
