"""Writes: every change to stored state goes through a function here (or the collector writer)."""

from __future__ import annotations

import random
import secrets
import socket
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model

from sessions_app import buckets
from sessions_app.cassandra import prepare, session
from sessions_app.collector.writer import EventRow, SessionSummary, events_write, sessions_write
from sessions_app.ids import event_uuid
from sessions_app.models import Site

UPSERT_HEARTBEAT = """
INSERT INTO {ks}.pipeline_heartbeats (worker, beat_at, written_at) VALUES (?, ?, ?)
"""
ANY_SESSION = "SELECT site_id FROM {ks}.user_sessions LIMIT 1"


def heartbeat_record(*, beat_at: datetime, now: datetime, worker: str | None = None) -> str:
    """Record that a beat-scheduled task reached a worker and Cassandra; return the worker."""
    name = worker or socket.gethostname()
    statement = prepare(UPSERT_HEARTBEAT, idempotent=True, write=True)
    session().execute(statement, (name, buckets.as_utc(beat_at), buckets.as_utc(now)))
    return name


def site_create(*, name: str, origins: list[str]) -> Site:
    """Create a site with its allowed origins and a fresh tracker key."""
    return Site.objects.create(name=name, allowed_origins=origins)


@dataclass(frozen=True)
class AdminLogin:
    username: str
    password: str | None  # None: set earlier and not known here
    created: bool


def admin_ensure(*, username: str = "admin", password_file: Path) -> AdminLogin:
    """Create the admin login once; never change an existing user's password.

    The password comes from CLICKSTREAM_ADMIN_PASSWORD, else it is generated and
    kept in password_file (mode 0600) so later runs can print it again.
    """
    users = get_user_model()
    known = settings.CLICKSTREAM_ADMIN_PASSWORD or (
        password_file.read_text().strip() if password_file.exists() else ""
    )
    if users.objects.filter(username=username).exists():
        return AdminLogin(username, known or None, created=False)
    password = known or secrets.token_urlsafe(12)
    users.objects.create_superuser(username=username, email="", password=password)
    if not settings.CLICKSTREAM_ADMIN_PASSWORD:
        password_file.parent.mkdir(parents=True, exist_ok=True)
        password_file.write_text(password + "\n")
        password_file.chmod(0o600)
    return AdminLogin(username, password, created=True)


def keyspace_is_empty() -> bool:
    """Return True if no session has been written yet (management use: a range scan)."""
    return session().execute(prepare(ANY_SESSION)).one() is None


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
    {"tag": "a", "text": "Products", "selector": "nav > a.products", "href": "/products"},
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
    {"tag": "a", "text": "About", "selector": "footer > a", "href": "/about"},
]


def demo_data_generate(
    *,
    site: Site,
    users: int,
    days: int,
    now: datetime,
    seed: int = 7,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Write realistic demo sessions for site over the last `days` days; return events written.

    Deterministic for a given seed and now, so re-running overwrites the same
    rows (idempotent event ids) instead of adding more.
    """
    rng = random.Random(seed)  # noqa: S311 - demo data, not security
    now = buckets.as_utc(now)
    origin = "https://demo.clickstream.local"
    total = 0
    for index in range(users):
        anonymous_id = f"anon-{seed}-{index:04d}"
        user_id = f"user{index:04d}@example.com" if index % 3 == 0 else None
        user_key = user_id or anonymous_id
        events: list[EventRow] = []
        summaries: list[SessionSummary] = []
        for _ in range(rng.randint(1, 2 * days)):
            start = now - timedelta(seconds=rng.randint(600, days * 86_400))
            session_id = event_uuid(
                site_id=site.id, client_event_id=f"s-{user_key}-{start}", ts=start
            )
            ts = start
            summary = SessionSummary(
                site_id=site.id,
                user_key=user_key,
                session_id=session_id,
                started_at=start,
                last_seen_at=start,
                anonymous_id=anonymous_id,
                user_id=user_id,
                user_agent="Mozilla/5.0 (X11; Linux x86_64) DemoBrowser/1.0",
            )
            for step in range(rng.randint(2, 14)):
                if step and rng.random() < 0.45:
                    kind, element = "click", dict(rng.choice(DEMO_ELEMENTS))
                else:
                    kind, element = "pageview", None
                path, title = rng.choice(DEMO_PAGES) if step else DEMO_PAGES[0]
                client_id = f"{session_id}-{step}"
                events.append(
                    EventRow(
                        site_id=site.id,
                        user_key=user_key,
                        session_id=session_id,
                        event_id=event_uuid(site_id=site.id, client_event_id=client_id, ts=ts),
                        type=kind,
                        ts=ts,
                        url=origin + path,
                        title=title,
                        element=element,
                    )
                )
                summary.event_count += 1
                summary.pageview_count += kind == "pageview"
                summary.click_count += kind == "click"
                summary.entry_url = summary.entry_url or origin + path
                summary.exit_url = origin + path
                summary.last_seen_at = ts
                ts += timedelta(seconds=rng.randint(3, 240))
            if rng.random() < 0.15:
                summary.converted = True
                events.append(
                    EventRow(
                        site_id=site.id,
                        user_key=user_key,
                        session_id=session_id,
                        event_id=event_uuid(
                            site_id=site.id, client_event_id=f"{session_id}-buy", ts=ts
                        ),
                        type="custom",
                        name="purchase",
                        ts=ts,
                        url=origin + "/checkout",
                        props={"value": rng.choice([19, 49, 129, 399]), "currency": "EUR"},
                    )
                )
                summary.event_count += 1
                summary.last_seen_at = ts
            summaries.append(summary)
        events_write(events)
        sessions_write(summaries)
        total += len(events)
        if progress:
            progress(1)
    return total


def demo_site_ensure(*, origins: list[str]) -> tuple[Site, bool]:
    """Return the demo site, creating it on first use."""
    site = Site.objects.filter(name="Demo Shop").first()
    if site is not None:
        return site, False
    return site_create(name="Demo Shop", origins=origins), True
