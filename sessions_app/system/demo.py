"""Demo data: a demo site and generated visits through the real collector pipeline."""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings

from sessions_app.core import timebuckets
from sessions_app.ingest.pipeline import Source, events_record
from sessions_app.ledger.sites import site_create
from sessions_app.models import (
    Site,
)

DEMO_PAGES = [
    ("/", "Home · Demo Shop"),
    ("/products", "All products · Demo Shop"),
    ("/products/espresso-machine", "Espresso machine · Demo Shop"),
    ("/products/grinder", "Burr grinder · Demo Shop"),
    ("/products/kettle", "Gooseneck kettle · Demo Shop"),
    ("/cart", "Cart · Demo Shop"),
    ("/checkout", "Checkout · Demo Shop"),
    ("/about", "About us · Demo Shop"),
]

DEMO_ELEMENTS: list[dict[str, Any]] = [
    {
        "tag": "a",
        "text": "Products",
        "selector": "nav > a.products",
        "href": "https://demo.clickstream.local/products",
    },
    {
        "tag": "button",
        "id": "add-to-cart",
        "classes": ["btn", "primary"],
        "text": "Add to cart",
        "selector": "#add-to-cart",
    },
    {
        "tag": "button",
        "id": "checkout",
        "classes": ["btn"],
        "text": "Checkout",
        "selector": "#checkout",
    },
    {
        "tag": "a",
        "text": "About",
        "selector": "footer > a",
        "href": "https://demo.clickstream.local/about",
    },
]

DEMO_AGENTS = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/131.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.5 Safari/605.1.15",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148",
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
]


def _visit_events(
    rng: random.Random,
    *,
    anonymous_id: str,
    user_id: str | None,
    start: datetime,
    origin: str,
    tag: str,
) -> list[dict[str, Any]]:
    """Return one visit's events in /collect format: page views, clicks, maybe a purchase."""
    events: list[dict[str, Any]] = []
    ts = start
    path, title = DEMO_PAGES[0]
    for step in range(rng.randint(2, 14)):
        if step and rng.random() < 0.45:
            kind, element = "click", dict(rng.choice(DEMO_ELEMENTS))
        else:
            kind, element = "pageview", None
            path, title = rng.choice(DEMO_PAGES) if step else DEMO_PAGES[0]
        event: dict[str, Any] = {
            "id": f"{tag}-{step}",
            "type": kind,
            "ts": ts.isoformat(),
            "anonymous_id": anonymous_id,
            "url": origin + path,
            "title": title,
        }
        if element:
            event["element"] = element
        if user_id:
            event["user_id"] = user_id
        events.append(event)
        ts += timedelta(seconds=rng.randint(3, 240))
    if rng.random() < 0.15:
        events.append(
            {
                "id": f"{tag}-buy",
                "type": "custom",
                "name": settings.CONVERSION_EVENT,
                "ts": ts.isoformat(),
                "anonymous_id": anonymous_id,
                "url": origin + "/checkout",
                "props": {"value": rng.choice([19, 49, 129, 399]), "currency": "EUR"},
                **({"user_id": user_id} if user_id else {}),
            }
        )
    return events


def clicks_generate(
    *,
    site: Site,
    users: int,
    days: int,
    now: datetime,
    seed: int = 7,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Send realistic visits for site over the last `days` days through the collector.

    Each visit is one batch arriving a few seconds after its last event, so it
    goes through the same validation, sessionization and write path as the
    tracker. Deterministic for a given seed and now: re-running only produces
    duplicates. Returns the number of events accepted. Each batch arrives in the
    past but is logged now (`logged_at`): its log entry is where the applier and
    the replay look, so it is applied like any other.
    """
    rng = random.Random(seed)  # noqa: S311 - demo data, not security
    now = timebuckets.as_utc(now)
    origin = "https://demo.clickstream.local"
    accepted = 0
    for index in range(users):
        anonymous_id = f"anon-{seed}-{index:05d}"
        user_id = f"user{index:05d}@example.com" if index % 3 == 0 else None
        agent = rng.choice(DEMO_AGENTS)
        ip = f"198.51.100.{rng.randint(1, 254)}"
        starts = sorted(
            now - timedelta(seconds=rng.randint(600, days * 86_400))
            for _ in range(rng.randint(1, 2 * days))
        )
        for number, start in enumerate(starts):
            events = _visit_events(
                rng,
                anonymous_id=anonymous_id,
                user_id=user_id,
                start=start,
                origin=origin,
                tag=f"g{seed}-{index}-{number}",
            )
            last = datetime.fromisoformat(events[-1]["ts"])
            source = Source(
                site=site,
                received_at=min(now, last + timedelta(seconds=2)),
                user_agent=agent,
                ip=ip,
                name="generate_clicks",
                logged_at=datetime.now(UTC),
            )
            accepted += events_record(source=source, raw_events=events).accepted
        if progress:
            progress(1)
    return accepted


def demo_site_ensure(*, origins: list[str]) -> tuple[Site, bool]:
    """Return the demo site, creating it on first use."""
    site = Site.objects.filter(name="Demo Shop").first()
    if site is not None:
        return site, False
    site = site_create(name="Demo Shop", origins=origins)
    site.vitals = True  # the demo shop measures web vitals (docs/vitals.md)
    site.save(update_fields=["vitals"])
    return site, True
