"""Demo data: a demo site and generated visits through the real collector pipeline.

The visits walk the demo shop's own pages (templates/sessions_app/demo.html) and click its
own elements, at the positions Chromium lays them out in (`demo_layout.json`, measured at
1366 and 390 px wide; tests/e2e/test_demo_data.py re-measures it), so heatmaps and "View on
page" line up. Visitors come from the sources, countries and devices of `demo_visitors`;
some log in (an `$identify` with their email and name), add to the cart, check out (a
`purchase`: the demo site's goal "Purchase", beside "Reached checkout"), rage-click a
button that does nothing, and scroll; each page view sends its web vitals when it is left
(`demo_vitals`: some pages slow, phones slower). Visits are busier on weekdays and working
hours and rise over the period; a share of visitors come back in later weeks (cohorts);
a share of recent visits is recorded (`demo_replay`: the recorder's chunks of the visit).
`demo_seal` seals what was written, as the beat would.
"""

from __future__ import annotations

import bisect
import itertools
import json
import random
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sessions_app.domain.aggregates import seal, states, vitals
from sessions_app.domain.goals.defs import definition_clean, definition_digest, recent_forget
from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.domain.ledger.sites import site_create
from sessions_app.domain.system import demo_replay
from sessions_app.domain.system import demo_visitors as who
from sessions_app.domain.system.demo_visitors import Device
from sessions_app.domain.system.demo_vitals import vitals_props
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.models import Goal, Site

LAYOUT: dict[str, dict[str, Any]] = json.loads(
    (Path(__file__).with_name("demo_layout.json")).read_text(encoding="utf-8")
)
DEMO_PAGES = {
    "/demo/": "Coffee gear · Demo Shop",
    "/demo/products": "Products · Demo Shop",
    "/demo/products/espresso-machine": "Espresso machine · Demo Shop",
    "/demo/products/grinder": "Burr grinder · Demo Shop",
    "/demo/products/kettle": "Gooseneck kettle · Demo Shop",
    "/demo/cart": "Cart · Demo Shop",
    "/demo/checkout": "Checkout · Demo Shop",
    "/demo/about": "About us · Demo Shop",
}
PRICES = {"espresso-machine": 399, "grinder": 129, "kettle": 49}
DEAD_BUTTONS = ("review-", "newsletter", "contact")  # buttons that do nothing when clicked
LEAVE = {"/demo/": 22, "/demo/products": 22, "/demo/cart": 25, "/demo/checkout": 30}
DEFAULT_ORIGIN = "http://127.0.0.1:8000"


@dataclass
class Visit:
    """One visit being written: its events, clock, cart and the page view it is on."""

    rng: random.Random
    device: Device
    anonymous_id: str
    origin: str
    tag: str
    ts: datetime
    user_id: str | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    cart: list[str] = field(default_factory=list)
    page: str = "/demo/"
    view_id: str = ""
    deepest: int = 0  # CSS px from the top of the page seen so far
    loaded: bool = False  # the view is a full page load (else an SPA step): demo_vitals
    clicked: str | None = None  # the view's last clicked element (its INP's cause)
    speeds: random.Random = field(init=False)  # the vitals' own draws: rng's are unchanged

    def __post_init__(self) -> None:
        self.speeds = random.Random(f"{self.tag}-vitals")  # noqa: S311 - demo data

    def add(self, kind: str, **fields: Any) -> dict[str, Any]:
        event: dict[str, Any] = {
            "id": f"{self.tag}-{len(self.events)}",
            "type": kind,
            "ts": self.ts.isoformat(),
            "anonymous_id": self.anonymous_id,
            "url": self.origin + self.page,
            "title": DEMO_PAGES[self.page],
            **fields,
        }
        if self.user_id:
            event["user_id"] = self.user_id
        self.events.append(event)
        return event

    def wait(self, low: float, high: float) -> None:
        self.ts += timedelta(seconds=self.rng.uniform(low, high))

    def view(self, page: str, *, query: str = "", referrer: str | None = None) -> None:
        """Leave the current page view (its scroll depth) and open the next."""
        if self.view_id:
            self.leave()
            self.ts += timedelta(milliseconds=3)
        self.loaded = not self.view_id or self.speeds.random() < 1 / 3
        self.page, self.deepest, self.clicked = page, self.device.fold, None
        extra: dict[str, Any] = {"viewport": self.device.viewport}
        if referrer:
            extra["referrer"] = referrer
        event = self.add("pageview", **extra)
        if query:
            event["url"] += "?" + query
        self.view_id = event["id"]
        height = self.layout()["height"][self.device.layout]
        if self.rng.random() < 0.6:  # reads on: scrolls part of the way, or to the end
            self.deepest = max(self.deepest, int(self.rng.uniform(0.5, 1.05) * height))

    def leave(self) -> None:
        """The page is hidden: its web vitals go (not from a bot), then the page leave."""
        measured = vitals_props(
            self.speeds,
            page=self.page,
            view_id=self.view_id,
            viewport=self.device.viewport,
            loaded=self.loaded,
            clicked=self.clicked,
        )
        if measured and "bot" not in self.device.agent.lower():
            self.add("custom", name=vitals.NAME, props=measured)
        height = self.layout()["height"][self.device.layout]
        scroll = min(100, round(100 * self.deepest / height))
        self.add(
            "custom",
            name="$pageleave",
            viewport=self.device.viewport,
            props={"pageview": self.view_id, "scroll": scroll, "fold": self.device.fold},
        )

    def layout(self) -> dict[str, Any]:
        return LAYOUT[self.page]

    def click(self, element: dict[str, Any], **flags: bool) -> None:
        """A mouse click somewhere inside the element's measured box."""
        x0, x1, y0, y1 = element["box"][self.device.layout]
        ex, ey = self.rng.random(), self.rng.random()
        y = round(y0 + ey * (y1 - y0))
        self.deepest = max(self.deepest, y + 40)
        self.clicked = element["selector"].replace(" > ", ">")  # as web-vitals writes it
        described = {k: element[k] for k in ("tag", "id", "classes", "text") if element.get(k)}
        described["selector"] = element["selector"]
        if element.get("nav"):
            described["href"] = self.origin + element["nav"]
        self.add(
            "click",
            element=described,
            viewport=self.device.viewport,
            pos={
                "x": round(x0 + ex * (x1 - x0), 4),
                "y": y,
                "ex": round(ex, 3),
                "ey": round(ey, 3),
            },
            **{k: True for k, v in flags.items() if v},
        )


def _element(visit: Visit, match: Callable[[dict[str, Any]], bool]) -> dict[str, Any] | None:
    return next((e for e in visit.layout()["elements"] if match(e)), None)


def _weight(visit: Visit, element: dict[str, Any]) -> int:
    """How likely a visitor on this page clicks this element next."""
    ident, target = element.get("id", ""), element.get("nav", "")
    if "add-to-cart" in element.get("classes", []):
        return 30 if visit.page.startswith("/demo/products/") else 6
    if ident == "place-order":
        return 60 if visit.cart else 8
    if ident == "checkout":
        return 45 if visit.cart else 4
    if ident.startswith(DEAD_BUTTONS):
        return 5
    if ident == "login-button":
        return 0
    if target.startswith("/demo/products/"):
        return 14
    if target == "/demo/cart":
        return 14 if visit.cart else 1
    return 3 if target else 0


def _act(visit: Visit, element: dict[str, Any]) -> None:
    """Click the element and do what the demo shop does then."""
    ident, target = element.get("id", ""), element.get("nav")
    if ident.startswith(DEAD_BUTTONS) or (ident == "place-order" and not visit.cart):
        burst = visit.rng.randint(3, 6) if visit.rng.random() < 0.5 else 1
        for number in range(burst):  # the tracker flags the 3rd and later of a burst
            visit.click(element, dead=True, rage=number >= 2)
            visit.ts += timedelta(milliseconds=visit.rng.randint(120, 280))
        return
    visit.click(element)
    visit.ts += timedelta(milliseconds=visit.rng.randint(20, 400))
    if "add-to-cart" in element.get("classes", []):
        product = element["selector"].split("#", 1)[1].split(" ", 1)[0].split("-", 1)[1]
        visit.cart.append(product)
        visit.add("custom", name="add_to_cart", props={"product": product})
    elif ident == "place-order":
        value = sum(PRICES[p] for p in visit.cart)
        visit.add(
            "custom",
            name="purchase",
            props={"value": value, "currency": "EUR", "items": len(visit.cart)},
        )
        visit.cart.clear()
    elif target:
        visit.view(target)


def _walk(visit: Visit, person: dict[str, str] | None) -> None:
    """Browse until leaving: each step clicks an element of the page by its weight."""
    for _step in range(visit.rng.randint(3, 16)):
        visit.wait(4, 75)
        if person and not visit.user_id and visit.rng.random() < 0.5:
            login = _element(visit, lambda e: e.get("id") == "login-button")
            if login:
                visit.click(login)
                visit.user_id = person["id"]
                visit.add(
                    "custom",
                    name="$identify",
                    props={"email": person["email"], "name": person["name"]},
                )
                continue
        elements = [e for e in visit.layout()["elements"] if _weight(visit, e)]
        weights = [_weight(visit, e) for e in elements]
        leave = LEAVE.get(visit.page, 30)
        if not elements or visit.rng.random() < leave / (leave + sum(weights)):
            break
        _act(visit, visit.rng.choices(elements, weights=weights)[0])
    visit.wait(3, 40)
    visit.leave()


def _person(rng: random.Random, index: int) -> dict[str, str]:
    first, last = rng.choice(who.FIRST_NAMES), rng.choice(who.LAST_NAMES)
    domain = rng.choice(("example.com", "example.org", "mail.example.net"))
    email = f"{first}.{last}{index % 97}@{domain}".lower()
    return {"id": f"cust-{index:05d}", "email": email, "name": f"{first} {last}"}


# When visits start: a working-day curve (UTC hours), quieter weekends, and a gentle rise
# over the period (the last day about 40 % busier than the first).
HOURS = (2, 1, 1, 1, 1, 2, 4, 7, 10, 12, 13, 13, 12, 12, 13, 12, 11, 10, 10, 11, 10, 8, 5, 3)
WEEKDAYS = (1.0, 1.0, 0.97, 0.95, 0.85, 0.55, 0.5)  # Monday first
RISE = 0.4
# Visitors who come back: after a first visit, a share returns days or weeks later, and
# those who came back once are likelier to come back again (cohorts' retention curves).
RETURN_FIRST, RETURN_AGAIN, RETURN_DAYS, MOST_VISITS = 0.4, 0.6, 9.0, 12


def _busy(ts: datetime, *, now: datetime, days: int) -> float:
    """How busy the shop is at ts, from 0 to 1: the hour, the weekday and the trend."""
    age = (now - ts) / timedelta(days=days)
    return WEEKDAYS[ts.weekday()] * HOURS[ts.hour] / max(HOURS) / (1 + RISE * age)


class FirstVisits:
    """First visits' starts, spread by `_busy` over the last `days` UTC days (today's
    elapsed part the last): systematic sampling (visitor i of n takes the day where
    (i + u) / n of the period's weight falls), so each day gets its share and none is
    left empty by chance."""

    def __init__(self, *, now: datetime, days: int, users: int) -> None:
        self.now, self.days, self.users = now, days, users
        today = timebuckets.floor(now - timedelta(minutes=15), "day")  # UTC days, oldest first
        self.starts = [today - timedelta(days=k) for k in range(days - 1, -1, -1)]
        hours = [timedelta(hours=h) for h in range(24)]
        weights = [
            sum(
                _busy(start + h, now=now, days=days)
                for h in hours
                if start + h < now - timedelta(minutes=15)
            )
            for start in self.starts
        ]
        self.cumulative = list(itertools.accumulate(weights))

    def draw(self, rng: random.Random, index: int) -> datetime:
        """Visitor index's first visit: its day, then a time in it drawn by `_busy`."""
        share = (index + rng.random()) / self.users * self.cumulative[-1]
        day = self.starts[min(bisect.bisect(self.cumulative, share), self.days - 1)]
        latest = min(86_400, int((self.now - day).total_seconds()) - 900)
        while True:
            start = day + timedelta(seconds=rng.randint(0, latest))
            if rng.random() < _busy(start, now=self.now, days=self.days):
                return start


def _visit_starts(rng: random.Random, first: datetime, *, now: datetime) -> list[datetime]:
    """One visitor's visits: the first, then returns while they keep coming back."""
    starts = [first]
    chance = RETURN_FIRST
    while len(starts) < MOST_VISITS and rng.random() < chance:
        later = starts[-1] + timedelta(days=rng.expovariate(1 / RETURN_DAYS), hours=1)
        later = later.replace(hour=rng.choices(range(24), weights=HOURS)[0])
        if later > now - timedelta(minutes=15):
            break
        if later > starts[-1] + timedelta(minutes=45):  # a visit of its own, not a resume
            starts.append(later)
        chance = RETURN_AGAIN
    return starts


Recorder = Callable[[Site, list[dict[str, Any]]], int]


def clicks_generate(
    *,
    site: Site,
    users: int,
    days: int,
    now: datetime,
    seed: int = 7,
    progress: Callable[[int], None] | None = None,
    replays: Recorder | None = None,
    replay_share: float = 0.15,
) -> int:
    """Send realistic visits for site over the last `days` days through the collector.

    Each visit is one batch arriving a few seconds after its last event, so it goes
    through the same validation, sessionization and write path as the tracker.
    Deterministic for a given seed and now: re-running only produces duplicates. Returns
    the number of events accepted. Each batch arrives in the past but is logged now
    (`logged_at`): its log entry is where the applier and the replay look, so it is
    applied like any other. URLs are on the site's first allowed origin, so "View on
    page" opens the demo shop's page. Visits follow `_busy` (hours, weekdays, a rising
    trend; each day its share: `FirstVisits`); visitors come back (`_visit_starts`)
    under the same anonymous id, logged-in ones under their user id too. `replays`, when
    given, is sent `replay_share` of the visits within the site's replay retention as
    the recorder's chunks (demo_replay).
    """
    rng = random.Random(seed)  # noqa: S311 - demo data, not security
    recorded = random.Random(f"{seed}-replays")  # noqa: S311 - its own draws: rng's unchanged
    now = timebuckets.as_utc(now)
    origin = (site.allowed_origins or [DEFAULT_ORIGIN])[0].rstrip("/")
    kept = now - timedelta(days=site.replay_retention_days - 1)
    firsts = FirstVisits(now=now, days=days, users=users)
    accepted = 0
    for index in range(users):
        device = who.choose(rng, who.DEVICES)
        prefix, language = who.choose(rng, who.COUNTRIES)
        ip = f"{prefix}.{rng.randint(2, 250)}"
        person = _person(rng, index) if rng.random() < 0.4 else None
        starts = _visit_starts(rng, firsts.draw(rng, index), now=now)
        for number, start in enumerate(starts):
            visit = Visit(
                rng=rng,
                device=device,
                anonymous_id=f"anon-{seed}-{index:05d}",
                origin=origin,
                tag=f"g{seed}-{index}-{number}",
                ts=start,
                user_id=person["id"] if person and number else None,
            )
            arrival = who.choose(rng, who.ARRIVALS)
            visit.view(rng.choice(arrival.landing), query=arrival.query, referrer=arrival.referrer)
            _walk(visit, person)
            accepted += _send(site, visit, device, ip, language, now)
            if replays and start > kept and recorded.random() < replay_share:
                replays(site, _recording(site, visit))
        if progress:
            progress(1)
    return accepted


def _recording(site: Site, visit: Visit) -> list[dict[str, Any]]:
    """The visit as the recorder's chunks (demo_replay), under the visitor's first key."""
    heights = {page: layout["height"][visit.device.layout] for page, layout in LAYOUT.items()}
    parts = demo_replay.recording(
        events=visit.events,
        device=visit.device,
        origin=visit.origin,
        heights=heights,
        seed=visit.tag,
    )
    return demo_replay.chunk_bodies(
        parts,
        site_key=site.key,
        anonymous_id=visit.anonymous_id,
        user_id=visit.events[0].get("user_id"),
        seed=visit.tag,
    )


def _send(site: Site, visit: Visit, device: Device, ip: str, language: str, now: datetime) -> int:
    last = datetime.fromisoformat(visit.events[-1]["ts"])
    source = Source(
        site=site,
        received_at=min(now, last + timedelta(seconds=2)),
        user_agent=device.agent,
        ip=ip,
        accept_language=language,
        name="generate_clicks",
        logged_at=datetime.now(UTC),
    )
    return events_record(source=source, raw_events=visit.events).accepted


# The demo site's goals: its conversion rate counts either (docs/goals.md).
DEMO_GOALS = (
    ("Purchase", {"kind": "event", "name": "purchase"}),
    ("Reached checkout", {"kind": "pageview", "path": "/demo/checkout", "match": "exact"}),
)


def demo_site_ensure(*, origins: list[str]) -> tuple[Site, bool]:
    """Return the demo site, creating it on first use; it has its goals either way."""
    site = Site.objects.filter(name="Demo Shop").first()
    created = site is None
    if site is None:
        site = site_create(name="Demo Shop", origins=origins)
        site.vitals = True  # the demo shop measures web vitals (docs/vitals.md)
        site.replay = True  # and records replays (docs/replay.md): the demo data has some
        site.save(update_fields=["vitals", "replay"])
    if not Goal.objects.filter(site=site).exists():
        demo_goals_add(site)
    return site, created


def demo_goals_add(site: Site) -> None:
    """Give the site the demo shop's goals, in force before any demo visit is sent (so
    nothing is left to backfill: the goals count every visit the demo data writes)."""
    for name, definition in DEMO_GOALS:
        clean = definition_clean(definition)
        Goal.objects.create(
            site=site,
            name=name,
            definition=clean,
            digest=definition_digest(clean),
            backfill_state=Goal.DONE,
        )
    recent_forget(site.pk)


def demo_seal(*, site: Site, now: datetime, threads: int = 2) -> Counter[str]:
    """Seal the site's due buckets now: its hours, then the days and months they complete
    (what the beat's seal_due_buckets does a minute at a time), so every report reads
    the demo's sealed aggregates at once. Return how many of each were sealed."""
    sealed: Counter[str] = Counter()
    with ThreadPoolExecutor(threads) as pool:
        while due := states.buckets_due(now=now, limit=1000, site_id=site.id):
            for granularity, done in pool.map(lambda b: _seal_one(b, now), due):
                sealed[granularity] += int(done)
    return sealed


def _seal_one(due: tuple[Any, str, datetime], now: datetime) -> tuple[str, bool]:
    site_id, granularity, start = due
    if granularity == "hour":
        return granularity, seal.bucket_seal(site_id=site_id, hour=start, now=now)
    return granularity, seal.bucket_rollup(
        site_id=site_id, granularity=granularity, bucket=start, now=now
    )
