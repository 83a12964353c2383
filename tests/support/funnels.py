"""The funnel tests' shop and brute force: visitors browsing products through /collect,
the raw rows of a range, and each unit's best chain matched step by step with code of
its own (the definition in features/funnels/results.py)."""

from __future__ import annotations

import fnmatch
import json
import random
from collections import defaultdict
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from sessions_app.domain.aggregates import sources
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.ids import cassandra_order
from sessions_app.foundation.core.pagepaths import page_path
from sessions_app.foundation.models import BucketState
from tests.support.dataset import AGENTS, SHOP
from tests.support.events import event, post
from tests.support.sealing import seal_everything

STEP_POOL = [
    {"kind": "pageview", "path": "/", "match": "exact"},
    {"kind": "pageview", "path": "/product/", "match": "prefix"},
    {"kind": "pageview", "path": "/product/[12]", "match": "pattern"},
    {"kind": "pageview", "path": "/cart", "match": "exact"},
    {"kind": "click", "selector": "button.add"},
    {"kind": "click", "text": "Add to cart"},
    {"kind": "event", "name": "checkout"},
    {"kind": "event", "name": "checkout", "properties": [{"key": "plan", "value": "pro"}]},
    {"kind": "pageview", "path": "/checkout", "match": "exact"},
]


def matches(step: dict[str, Any], row: dict[str, Any]) -> bool:
    element = json.loads(row["element"]) if row["element"] else {}
    props = json.loads(row["props"]) if row["props"] else {}
    if step["kind"] == "pageview":
        path = page_path(row["url"]) or ""
        ok = (
            row["type"] == "pageview"
            and {
                "exact": path == step["path"],
                "prefix": path.startswith(step["path"]),
                "pattern": fnmatch.fnmatchcase(path, step["path"]),
            }[step["match"]]
        )
    elif step["kind"] == "click":
        ok = row["type"] == "click" and (
            element.get("selector") == step["selector"]
            if step.get("selector")
            else (element.get("text") or "").strip() == step["text"]
        )
    else:
        ok = row["type"] == "custom" and row["name"] == step["name"]
    for c in step.get("properties") or []:
        ok = ok and str(props.get(c["key"])) == c["value"]
    return ok


def greedy(
    events: list[dict], steps: list[dict], first: int, window: timedelta | None, match=matches
) -> list:
    chain = [events[first]]
    for e in events[first + 1 :]:
        if len(chain) == len(steps):
            break
        if window is not None and e["ts"] - chain[0]["ts"] > window:
            break
        if match(steps[len(chain)], e):
            chain.append(e)
    return chain


def brute(
    rows: list[dict], definition: dict, start: datetime, end: datetime, match=matches
) -> dict[str, list]:
    """Each unit's best chain; `match(step, row)` the brute force's own matcher."""
    steps, window = definition["steps"], definition["window"]
    length = None if window["unit"] == "session" else timedelta(**{window["unit"]: window["value"]})
    units: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for row in rows:
        row = {**row, "ts": timebuckets.from_driver(row["ts"])}
        if row["is_bot"] or not start <= row["ts"] < end:
            continue
        key = str(row["session_id"]) if definition["count_by"] == "session" else row["user_key"]
        units[key, str(row["session_id"]) if window["unit"] == "session" else ""].append(row)
    best: dict[str, list] = {}
    for (key, _), events in units.items():
        events.sort(key=lambda r: (r["ts"], cassandra_order(r["event_id"])))
        for i, e in enumerate(events):
            if match(steps[0], e):
                chain = greedy(events, steps, i, length, match)
                rank = (len(chain), chain[0]["ts"], cassandra_order(chain[0]["event_id"]))
                held = best.get(key)
                if held is None or rank > (
                    len(held),
                    held[0]["ts"],
                    cassandra_order(held[0]["event_id"]),
                ):
                    best[key] = chain
    return best


def ms(value: datetime) -> int:
    return timebuckets.epoch_ms(value)


def raw_rows(site, start: datetime, end: datetime) -> list[dict]:
    rows = []
    for hour in timebuckets.buckets_between(start, end, "hour"):
        rows.extend(sources.site_bucket_funnel_rows(site_id=site.id, hour=hour, shards=4))
    return rows


PRODUCTS = [f"/product/{i}" for i in range(1, 6)]


def visitor(rng: random.Random, anon: str, start: datetime) -> list[dict[str, Any]]:
    """1-3 sessions (45 minutes to 5 hours apart) of shop browsing."""
    events, ts = [], start
    for _ in range(rng.randrange(1, 4)):
        for _ in range(rng.randrange(1, 9)):
            choice = rng.random()
            if choice < 0.45:
                path = rng.choice(["/", *PRODUCTS, "/cart", "/checkout"])
                events.append(event(ts, anon=anon, url=SHOP + path))
            elif choice < 0.7:
                element = {
                    "selector": rng.choice(["button.add", "a.more"]),
                    "tag": "button",
                    "text": rng.choice(["Add to cart", "More"]),
                }
                events.append(
                    event(ts, kind="click", anon=anon, url=SHOP + "/product/1", element=element)
                )
            else:
                events.append(
                    event(
                        ts,
                        kind="custom",
                        anon=anon,
                        name="checkout",
                        props={"plan": rng.choice(["pro", "free"])},
                    )
                )
            ts += timedelta(minutes=rng.randrange(1, 20))
        ts += timedelta(minutes=rng.randrange(45, 300))
    return events


def send(client, site, events: list[dict[str, Any]], agent: str, referrer: str | None = None):
    if referrer:
        events[0] = {**events[0], "referrer": referrer}
    response = post(client, site, events, HTTP_USER_AGENT=agent, REMOTE_ADDR="8.8.8.8")
    assert response.status_code == 200 and response.json()["accepted"] == len(events), (
        response.content
    )


def shop_build(client, site) -> tuple[datetime, datetime]:
    """The shop the funnel tests count: visitors through /collect over four days, sealed,
    then late events that reopen sealed days, sealed again; the range that holds them."""
    rng = random.Random(5)
    now = timezone.now().replace(microsecond=0)
    for i in range(45):
        start = now - timedelta(minutes=rng.randrange(60, 4 * 24 * 60))
        referrer = rng.choice([None, "https://www.google.com/", "https://twitter.com/x"])
        send(client, site, visitor(rng, f"u{i}", start), AGENTS[i % 5], referrer)
    send(client, site, visitor(rng, "bot", now - timedelta(hours=5)), "Googlebot/2.1")
    seal_everything(site, timezone.now())
    assert BucketState.objects.filter(site=site, granularity="day", state="sealed").count() >= 3
    for i in range(6):  # late events for sealed days: they reopen them
        send(
            client,
            site,
            visitor(rng, f"late{i}", now - timedelta(days=rng.randrange(1, 4))),
            AGENTS[0],
        )
    assert BucketState.objects.filter(site=site, granularity="day", state="reopened").exists()
    seal_everything(site, timezone.now())
    start = timebuckets.floor(now - timedelta(days=5), "day")
    end = timebuckets.next_start(timebuckets.floor(timezone.now(), "hour"), "hour")
    return start, end
