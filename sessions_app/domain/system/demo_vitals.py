"""How fast the demo shop is for its generated visitors: the `$vitals` event a page view
sends when it is left (as static/sessions_app/vitals.js would), so the Performance page
has cards, a trend, pages and elements to fix on a first run (docs/vitals.md).

Each metric is drawn from a lognormal around the page's median, scaled for the device
(phones are slower than desktops, tablets in between), with Google's thresholds in mind:
most of the shop is good, the espresso machine's page has a heavy LCP, the checkout a
slow server (TTFB) and a sluggish button (INP), the About page a late hero image and a
banner that shifts the layout (as demo_vitals.js does to a real browser). The shop is a
single-page app: a visit's first view is a full load (LCP, FCP, TTFB, CLS and INP); a
later one is a full load a third of the time (a reload, a new tab), else an SPA step that
reports only CLS and INP. INP needs an interaction: only views with a click have one,
caused by the element clicked.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PageSpeed:
    """A demo page's median metrics on a desktop, and the elements behind them."""

    lcp: float  # ms
    lcp_el: str
    fcp: float  # ms
    ttfb: float  # ms
    inp: float  # ms, for a view with a click
    cls_share: float  # the share of views with any layout shift
    cls: float  # the median shift when there is one
    cls_el: str


_CARD = "main>section>div.grid>article#product-grinder"
SPEEDS: dict[str, PageSpeed] = {
    "/demo/": PageSpeed(1500, "main>section>h1", 1100, 260, 90, 0.15, 0.03, _CARD),
    "/demo/products": PageSpeed(
        2100, "div.grid>article#product-espresso-machine", 1300, 300, 120, 0.35, 0.09, _CARD
    ),
    "/demo/products/espresso-machine": PageSpeed(
        2900, "article#detail-espresso-machine>h1", 1500, 320, 140, 0.2, 0.05, "dl.specs"
    ),
    "/demo/products/grinder": PageSpeed(
        1900, "article#detail-grinder>p", 1200, 300, 110, 0.2, 0.05, "dl.specs"
    ),
    "/demo/products/kettle": PageSpeed(
        1700, "article#detail-kettle>p", 1100, 280, 100, 0.2, 0.04, "dl.specs"
    ),
    "/demo/cart": PageSpeed(1300, "main>section>h1", 1000, 420, 150, 0.3, 0.06, "ul#cart-items"),
    "/demo/checkout": PageSpeed(3000, "main>section>p", 2300, 1350, 330, 0.1, 0.02, "p#thanks"),
    "/demo/about": PageSpeed(
        5200, "main>section>img#about-hero", 1200, 280, 80, 0.9, 0.21, "main>section>p#promo-banner"
    ),
}
# (LCP and FCP, INP, TTFB) slower than on a desktop, by device layout and width
_SLOWER = {"phone": (1.5, 2.3, 1.3), "tablet": (1.3, 1.5, 1.1), "desktop": (1.0, 1.0, 1.0)}
SPREAD = 0.45  # sigma of the lognormals: p75 is about 1.35x the median


def _draw(rng: random.Random, median: float, factor: float) -> float:
    return min(600_000.0, round(median * factor * rng.lognormvariate(0, SPREAD), 1))


def vitals_props(
    rng: random.Random,
    *,
    page: str,
    view_id: str,
    viewport: int,
    loaded: bool,
    clicked: str | None,
) -> dict[str, Any] | None:
    """The props of a page view's `$vitals` event (None for a page without speeds, or a
    view that measured nothing: an SPA step without a click or a shift)."""
    speed = SPEEDS.get(page)
    if speed is None:
        return None
    kind = "phone" if viewport < 640 else "tablet" if viewport < 1200 else "desktop"
    paint, interaction, server = _SLOWER[kind]
    props: dict[str, Any] = {"pageview": view_id}
    if loaded:
        ttfb = _draw(rng, speed.ttfb, server)
        props["ttfb"] = ttfb
        props["fcp"] = max(ttfb, _draw(rng, speed.fcp, paint))
        props["lcp"] = max(props["fcp"], _draw(rng, speed.lcp, paint))
        props["lcp_el"] = speed.lcp_el
    if clicked:
        props["inp"] = max(8.0, round(_draw(rng, speed.inp, interaction) / 8) * 8.0)
        props["inp_el"] = clicked
    if rng.random() < speed.cls_share:
        props["cls"] = round(speed.cls * rng.lognormvariate(0, 0.6), 4)
        props["cls_el"] = speed.cls_el
    elif loaded:
        props["cls"] = 0
    return props if len(props) > 1 else None
