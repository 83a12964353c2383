"""Web vitals traffic and its recount: page views with drawn $vitals measurements sent
and sealed, the raw values of a range, and a bucket's stored vitals counted from its
raw rows."""

from __future__ import annotations

import json
import random
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from sessions_app.domain.aggregates import sources, vitals
from sessions_app.domain.aggregates.vitals import METRICS
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.pagepaths import page_path
from sessions_app.foundation.models import BucketState
from tests.support.clock import recent_fixed
from tests.support.dataset import AGENTS, SHOP
from tests.support.events import event, post
from tests.support.sealing import seal_everything

PAGES = ["", "products", "products/1", "cart", "über/ümlaut 🛒"]
ELEMENTS = ["img.hero", "main>p.lead", "button#buy", "div.banner", "<svg> “quoted” ✓"]


def _measurement(rng: random.Random) -> dict[str, Any]:
    props: dict[str, Any] = {}
    for metric in METRICS:
        if rng.random() < 0.15:
            continue  # not every metric is measured every time (INP needs an interaction)
        if metric.name == "cls":
            props["cls"] = 0 if rng.random() < 0.3 else round(rng.lognormvariate(-2.5, 1.2), 6)
        else:
            props[metric.name] = round(
                rng.lognormvariate(7, 0.7) * (0.2 if metric.name == "inp" else 1), 1
            )
        if metric.name in vitals.ELEMENT_OF and rng.random() < 0.8:
            props[vitals.ELEMENT_OF[metric.name]] = rng.choice(ELEMENTS)
    if not props:
        props["ttfb"] = 120.0
    return props


def vitals_measured(client, site):
    """Page views with their $vitals over ~30 hours (some sent in two parts, a bot's
    too), sealed; then late ones that stay live."""
    rng = random.Random(40)
    now = recent_fixed(days_ago=1, at=timedelta(hours=8, minutes=9, seconds=26))
    for i in range(60):
        ts = now - timedelta(minutes=rng.randrange(90, 30 * 60))
        url = SHOP + rng.choice(PAGES)
        view = event(ts, anon=f"v{i}", url=url)
        props = _measurement(rng)
        cut = rng.randrange(1, len(props) + 1)
        parts = [dict(list(props.items())[:cut]), dict(list(props.items())[cut:])]
        events = [view]
        for n, part in enumerate(p for p in parts if any(m.name in p for m in METRICS)):
            kept = {k: v for k, v in part.items() if not k.endswith("_el") or k[:-3] in part}
            at = ts + timedelta(seconds=5 + n * 60)
            body = {"pageview": view["id"], **kept}
            events.append(
                event(at, kind="custom", name="$vitals", anon=f"v{i}", url=url, props=body)
            )
        agent, ip = AGENTS[i % len(AGENTS)], ["8.8.8.8", "81.2.69.160", "1.1.1.1"][i % 3]
        response = post(client, site, events, HTTP_USER_AGENT=agent, REMOTE_ADDR=ip)
        assert response.json()["accepted"] == len(events), response.json()
    bot = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
    ts = now - timedelta(hours=3)
    bot_events = [
        event(ts, anon="bot", url=SHOP),
        event(
            ts,
            kind="custom",
            name="$vitals",
            anon="bot",
            url=SHOP,
            props={"pageview": "x", "lcp": 99_999},
        ),
    ]
    post(client, site, bot_events, HTTP_USER_AGENT=bot)
    seal_everything(site, timezone.now())
    assert BucketState.objects.filter(site=site, granularity="day", state="sealed").exists()
    return now


def raw_values(site, start: datetime, end: datetime) -> list[dict[str, Any]]:
    """Every human $vitals row in [start, end), parsed: plain code over the raw rows."""
    found = []
    for hour in timebuckets.buckets_between(start, end, "hour"):
        for row in sources.site_bucket_rows(site_id=site.id, hour=hour, shards=4):
            if row["name"] != "$vitals" or row["is_bot"]:
                continue
            layout = json.loads(row["layout"] or "{}")
            found.append(
                {
                    "page": page_path(row["url"]),
                    "props": json.loads(row["props"]),
                    "device": layout.get("dev", ""),
                    "browser": layout.get("br", ""),
                    "country": layout.get("cc", ""),
                }
            )
    return found


# --- the product contract's parts (tests/aggregates/test_products.py) -----------------------
def vitals_events(rng: random.Random, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A $vitals event for each page view of a visit, a second after it."""
    return [
        event(
            timebuckets.as_utc(datetime.fromisoformat(e["ts"])) + timedelta(seconds=1),
            kind="custom",
            name="$vitals",
            anon=e["anonymous_id"],
            url=e["url"],
            props={"pageview": e["id"], **_measurement(rng)},
        )
        for e in events
        if e["type"] == "pageview"
    ]


def brute(rows: list[dict[str, Any]]) -> dict[Any, Any]:
    """A bucket's stored vitals as plain data, counted from its raw rows: each level's
    sketch slots, ratings and elements (the site's row names none)."""
    found: dict[Any, Any] = {}
    for row in rows:
        if row["name"] != "$vitals" or row["is_bot"]:
            continue
        layout, props = json.loads(row["layout"] or "{}"), json.loads(row["props"])
        key = (
            page_path(row["url"]),
            layout.get("dev", ""),
            layout.get("cc", ""),
            layout.get("br", ""),
        )
        for level, at in ((0, ("", "", "", "")), (1, (key[0], "", "", "")), (2, key)):
            cell = found.setdefault((level, at), {"s": {}, "r": {}, "e": {}})
            for metric in METRICS:
                if metric.name not in props:
                    continue
                value = props[metric.name]
                slots = cell["s"].setdefault(metric.name, Counter())
                slots[vitals.slot(value)] += 1
                rated = 0 if value <= metric.good else 1 if value <= metric.poor else 2
                cell["r"].setdefault(metric.name, [0, 0, 0])[rated] += 1
                element = props.get(f"{metric.name}_el")
                if element and level:
                    cell["e"].setdefault(metric.name, Counter())[element] += 1
    return {
        key: {
            "s": {m: dict(s) for m, s in c["s"].items()},
            "r": c["r"],
            "e": {m: dict(e) for m, e in c["e"].items()},
        }
        for key, c in found.items()
    }


def plain(stored: vitals.Stored) -> dict[Any, Any]:
    return {
        key: {
            "s": {m: {i: n for i, n in s.items() if n} for m, s in cell.sketches.items()},
            "r": cell.ratings,
            "e": {
                m: {label: int(v[0]) for label, v in e.items()}
                for m, e in cell.elements.items()
                if e
            },
        }
        for key, cell in stored.items()
    }
