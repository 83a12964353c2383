"""Tallies: the additive counts of some of a bucket's events (no I/O).

A beacon's tally is written beside its rows (bucket_partials); a seal folds an hour's
tallies, or tallies its raw rows, and each aggregate product counts from the result.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import orjson

from sessions_app.domain.aggregates.heatmaps import (
    LEAVE,
    HeatTally,
    heat_count,
    heat_encode,
    heat_fold,
)
from sessions_app.domain.aggregates.labels import click_name
from sessions_app.domain.aggregates.vitals import NAME as VITALS
from sessions_app.domain.aggregates.vitals import Cell, vitals_count, vitals_encode, vitals_fold
from sessions_app.domain.goals.defs import Goal
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.pagepaths import page_path

ViewKey = tuple[int, int]


def view_key(event_id: uuid.UUID) -> ViewKey:
    """A page view's place among its session's: its event id as Cassandra orders it
    (core/ids.cassandra_order), as two ints a tally stores and folds without parsing."""
    return event_id.time, int.from_bytes(event_id.bytes[8:], "big") ^ 0x8080808080808080


@dataclass
class Tally:
    """The additive counts behind a bucket's aggregates, from some of its raw events.

    Tallies of disjoint sets of events add up (`tally_fold`) to the tally of their
    union: the seal either tallies the hour's raw rows or folds the tallies the
    applier wrote beside each batch (bucket_partials); `finish` turns either into
    the same Aggregates. Pages and clicks are already paths and labels.
    """

    rows: int = 0
    by_type: Counter[str] = field(default_factory=Counter)
    by_name: Counter[str] = field(default_factory=Counter)
    pages: Counter[str] = field(default_factory=Counter)
    clicks: Counter[str] = field(default_factory=Counter)
    # Each user's events by event key (custom name, else type), bots included: what the
    # per-user counts store, a map a user (aggregates/totals.UserCounts).
    users: dict[str, dict[str, int]] = field(default_factory=dict)
    humans: set[str] = field(default_factory=set)  # the user keys of the human events
    # Each human session's page views in the bucket, [time, low, path] (the view_key's two
    # ints, then the path: sorting them orders them as their event ids), unordered: what
    # the seal counts paths from (domain/aggregates/paths.py). Lists, as a folded tally decodes
    # them: no object is built per page view. Keyed by the session id's text, as stored
    # (a fold parses no id).
    views: dict[str, list[list[Any]]] = field(default_factory=dict)
    heat: HeatTally = field(default_factory=HeatTally)  # domain/aggregates/heatmaps.py
    # What ingest knew of each human session with page views here (its plan's summary):
    # its start (epoch ms) and source. Paths take them from here instead of reading them
    # (domain/aggregates/paths.py); a tally of raw rows has none.
    starts: dict[str, tuple[int, str | None]] = field(default_factory=dict)
    # The `$vitals` events' metrics by (page, device, country, browser):
    # domain/aggregates/vitals.py.
    vitals: dict[tuple[str, str, str, str], Cell] = field(default_factory=dict)
    # Goal conversions (domain/aggregates/goal_counts.py): {goal digest: {session id: [events,
    # user]}}, for the goals (digests) in `goals_checked`, the ones the events were matched against
    # (at ingest: the site's goals then; a goal added or changed since is not in it).
    goals: dict[str, dict[str, list[Any]]] = field(default_factory=dict)
    goals_checked: frozenset[str] = frozenset()


SessionStarts = Mapping[uuid.UUID, tuple[datetime, str | None]]  # session: (start, source)


def tally(
    events: Iterable[dict[str, Any]],
    *,
    starts: SessionStarts | None = None,
    goals: Sequence[Goal] = (),
) -> Tally:
    """Tally raw events (rows of site_events_by_bucket, or a plan's events as dicts, with
    the `starts` of the plan's sessions), and which of them reached these goals.

    The loop only counts raw values (urls, element JSON); paths and labels are
    derived once per distinct value afterwards, which keeps a 200,000-event hour
    cheap.
    """
    by_type: Counter[str] = Counter()
    by_name: Counter[str] = Counter()
    urls: Counter[str | None] = Counter()
    elements: Counter[Any] = Counter()
    users: dict[str, dict[str, int]] = {}
    humans: set[str] = set()
    viewed: list[tuple[Any, Any, str | None]] = []  # (session, event id, url)
    heated: list[dict[str, Any]] = []  # clicks and $pageleave readings (heatmaps)
    measured: list[dict[str, Any]] = []  # $vitals events (domain/aggregates/vitals.py)
    converting = _Converting(goals)
    rows = 0
    for event in events:
        rows += 1
        kind, user = event["type"], event["user_key"]
        name = event.get("name") if kind == "custom" else None
        # A user's own counts include everything the key did (rolling counters);
        # the site's aggregates leave bots out.
        keys = users.get(user) or users.setdefault(user, {})  # a dict made only for a new user
        key = name or kind
        keys[key] = keys.get(key, 0) + 1
        if event.get("is_bot"):
            continue
        by_type[kind] += 1
        humans.add(user)
        if goals:
            converting.add(event)
        if name:
            by_name[name] += 1
            if name == LEAVE:
                heated.append(event)
            elif name == VITALS:
                measured.append(event)
        elif kind == "pageview":
            urls[event.get("url")] += 1
            viewed.append((event.get("session_id"), event.get("event_id"), event.get("url")))
        elif kind == "click":
            element = event.get("element")
            elements[orjson.dumps(element) if element.__class__ is dict else element] += 1
            heated.append(event)
    counted = Tally(
        rows,
        by_type,
        by_name,
        users=users,
        humans=humans,
        heat=heat_count(heated),
        vitals=vitals_count(measured),
        goals=converting.found,
        goals_checked=frozenset(g.digest for g in goals),
    )
    _derive(counted, urls, elements, viewed, starts)
    return counted


def goal_conversions(
    events: Iterable[dict[str, Any]], goals: Sequence[Goal]
) -> dict[str, dict[str, list[Any]]]:
    """Only the goals of `tally`: {digest: {session id: [events, user]}} (bots left out)."""
    converting = _Converting(goals)
    for event in events:
        if not event.get("is_bot"):
            converting.add(event)
    return converting.found


class _Converting:
    """Which events reach which goals: {digest: {session id: [events, user]}}; each
    distinct (type, name, url, element, props) is matched once."""

    def __init__(self, goals: Sequence[Goal]) -> None:
        self.goals = goals
        self.known: dict[tuple[Any, ...], tuple[str, ...]] = {}
        self.found: dict[str, dict[str, list[Any]]] = {}

    def add(self, event: dict[str, Any]) -> None:
        signature = tuple(
            orjson.dumps(v, option=orjson.OPT_SORT_KEYS) if v.__class__ is dict else v
            for v in (
                event["type"],
                event.get("name"),
                event.get("url"),
                event.get("element"),
                event.get("props"),
            )
        )
        matched = self.known.get(signature)
        if matched is None:
            matched = tuple(g.digest for g in self.goals if g.matches(event))
            self.known[signature] = matched
        for digest in matched:
            held = self.found.setdefault(digest, {}).setdefault(
                str(event["session_id"]), [0, event["user_key"]]
            )
            held[0] += 1


def _derive(
    counted: Tally,
    urls: Counter[str | None],
    elements: Counter[Any],
    viewed: list[tuple[Any, Any, str | None]],
    starts: SessionStarts | None,
) -> None:
    """Pages, click labels and each session's page views (and starts), from the distinct raw
    values."""
    known = {url: page_path(url) for url in urls}
    for url, n in urls.items():
        path = known[url]
        if path:
            counted.pages[path] += n
    for raw, n in elements.items():
        label = click_name(orjson.loads(raw) if raw else None)
        if label:
            counted.clicks[label] += n
    texts: dict[Any, str] = {}  # each session id's text, made once
    for session_id, event_id, url in viewed:
        path = known[url]
        if path and event_id is not None:
            text = texts.get(session_id)
            if text is None:
                text = texts[session_id] = str(session_id)
            counted.views.setdefault(text, []).append([*view_key(event_id), path])
    if starts:  # what ingest knew of the sessions with page views here
        counted.starts = {
            texts[sid]: (timebuckets.epoch_ms(start), source)
            for sid, (start, source) in starts.items()
            if sid in texts
        }


def ids_digest(event_ids: Iterable[uuid.UUID]) -> bytes:
    """8 bytes per event id (its two halves xored): what a seal compares across tallies
    to find an event counted by two batches."""
    return b"".join(
        (int.from_bytes(i.bytes[:8], "big") ^ int.from_bytes(i.bytes[8:], "big")).to_bytes(8, "big")
        for i in event_ids
    )


def digests_disjoint(digests: Iterable[bytes | None]) -> bool:
    """Whether tallies with these id digests count no event twice (False when one is
    missing: a tally written before digests, which cannot be checked). The hour's ids as
    one array of 8-byte ints, sorted once: no object per event."""
    found: list[bytes] = []
    for digest in digests:
        if digest is None:
            return False
        found.append(digest)
    ids = np.frombuffer(b"".join(found), dtype=np.uint64)
    return bool(ids.size == 0 or np.all(np.diff(np.sort(ids)) != 0))


def tally_encode(counted: Tally) -> bytes:
    """Serialize a tally (of a plan's events), as bucket_partials stores it.

    An empty part is left out (tally_fold reads it as empty): a seal decodes tens of
    thousands of tallies, and most batches have no vitals, goals, scroll readings or
    custom events."""
    heat = heat_encode(counted.heat)
    if not heat["readings"]:
        del heat["readings"]
    goals: dict[str, Any] = {"checked": sorted(counted.goals_checked), "found": counted.goals}
    body = {
        "v": 1,
        "rows": counted.rows,
        "type": counted.by_type,
        "name": counted.by_name,
        "pages": counted.pages,
        "clicks": counted.clicks,
        "users": counted.users,
        "humans": list(counted.humans),
        "views": counted.views,
        "heat": heat if heat["pages"] or "readings" in heat else None,
        "starts": counted.starts,
        "vitals": vitals_encode(counted.vitals),
        "goals": {k: v for k, v in goals.items() if v} if goals["checked"] else None,
    }
    return orjson.dumps({k: v for k, v in body.items() if v or k in _KEPT})


_KEPT = frozenset({"v", "rows", "users", "humans"})  # written even when empty


def tally_fold(payloads: Iterable[bytes]) -> Tally:
    """Add up tallies of disjoint sets of events, as tally_encode wrote them.

    One pass over the decoded JSON with plain dicts (a seal folds tens of thousands
    of them); a session's spans join up, and each session id is parsed once.
    """
    folding = _Folding()
    for payload in payloads:
        body = orjson.loads(payload)
        folding.counts_add(body)
        folding.sessions_add(body)
    return folding.tally()


_NONE: dict[str, Any] = {}  # a part tally_encode left out (never written to)


class _Folding:
    """tally_fold's running sums, keyed by the JSON's own strings until the end."""

    def __init__(self) -> None:
        self.rows = 0
        self.by_type: dict[str, int] = {}
        self.by_name: dict[str, int] = {}
        self.pages: dict[str, int] = {}
        self.clicks: dict[str, int] = {}
        self.users: dict[str, dict[str, int]] = {}  # user -> event key -> events
        self.humans: set[str] = set()
        self.views: dict[str, list[list[Any]]] = {}
        self.starts: dict[str, list[Any]] = {}
        self.heats: list[dict[str, Any] | None] = []
        self.vitals: list[dict[str, Any] | None] = []
        self.goals: dict[str, dict[str, list[Any]]] = {}
        self.goals_checked: set[str] | None = None  # the digests every tally checked
        self.checked_last: list[str] | None = None  # the last tally's, as it was stored

    def counts_add(self, body: dict[str, Any]) -> None:
        self.rows += body["rows"]
        self.heats.append(body.get("heat"))
        self.vitals.append(body.get("vitals"))
        for total, part in (
            (self.by_type, body.get("type", _NONE)),
            (self.by_name, body.get("name", _NONE)),
            (self.pages, body.get("pages", _NONE)),
            (self.clicks, body.get("clicks", _NONE)),
        ):
            for key, n in part.items():
                total[key] = total.get(key, 0) + n
        users = self.users
        for user, keys in body["users"].items():
            held = users.get(user)
            if held is None:  # most users are in a few tallies: the first one's dict is kept
                users[user] = keys
            else:
                for key, n in keys.items():
                    held[key] = held.get(key, 0) + n

    def sessions_add(self, body: dict[str, Any]) -> None:
        humans = body.get("humans")
        if humans is None:  # a tally written before "humans": its sessions' spans
            humans = [span[0] for span in body["spans"].values()]
        self.humans.update(humans)
        views = self.views
        seen = body.get("views", {})
        if seen and len(next(iter(seen.values()))[0]) == 2:  # a tally of the first format
            seen = {sid: [_view(v) for v in found] for sid, found in seen.items()}
        for session_id, seen_views in seen.items():
            held_views = views.get(session_id)
            if held_views is None:  # most sessions are in one tally an hour: its list is kept
                views[session_id] = seen_views
            else:
                held_views.extend(seen_views)
        for session_id, start in body.get("starts", {}).items():
            held = self.starts.get(session_id)
            if held is None or start[0] < held[0]:  # an earlier landing moved the start
                self.starts[session_id] = start
        self.goals_add(body.get("goals") or {})

    def goals_add(self, part: dict[str, Any]) -> None:
        checked = part.get("checked", [])  # a tally from before goals: none
        if checked != self.checked_last:  # the hour's tallies mostly checked the same goals
            self.checked_last = checked
            known = set(checked)
            self.goals_checked = known if self.goals_checked is None else self.goals_checked & known
        for digest, sessions in part.get("found", {}).items():
            total = self.goals.setdefault(digest, {})
            for session_id, (n, user) in sessions.items():
                held = total.get(session_id)
                if held is None:
                    total[session_id] = [n, user]
                else:
                    held[0] += n

    def tally(self) -> Tally:
        return Tally(
            rows=self.rows,
            by_type=Counter(self.by_type),
            by_name=Counter(self.by_name),
            pages=Counter(self.pages),
            clicks=Counter(self.clicks),
            users=self.users,
            humans=self.humans,
            views=self.views,
            heat=heat_fold(self.heats),
            vitals=vitals_fold(self.vitals),
            starts={sid: (at, source) for sid, (at, source) in self.starts.items()},
            goals=self.goals,
            goals_checked=frozenset(self.goals_checked or ()),
        )


def _view(stored: list[Any]) -> list[Any]:
    """A page view stored as the first tallies did, [event id, path], as [time, low, path]."""
    return [*view_key(uuid.UUID(stored[0])), stored[1]]
