"""Path grams: the paths of up to MAX_STEPS page views that end at each page view of a
session, and entrances by source (domain/aggregates/paths.py counts an hour's sessions with these
and stores them)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

ENTRANCE = "(entrance)"
MAX_STEPS = 5

Gram = tuple[str, ...]
Carried = tuple[Gram, datetime]  # a path and the hour of its first page view


@dataclass
class PathCounts:
    """Every path counted in some page views, and entrances by (page, source)."""

    grams: Counter[Gram] = field(default_factory=Counter)
    sources: Counter[tuple[str, str]] = field(default_factory=Counter)
    carried: Counter[Carried] = field(default_factory=Counter)


def session_count(
    counts: PathCounts,
    before: list[str],
    pages: Iterable[str],
    source: str,
    *,
    hour: datetime | None = None,
    before_hours: list[datetime] | None = None,
) -> None:
    """Count the paths ending at each of `pages` (one session's, in order, viewed in
    `hour`), after the pages `before` them (ENTRANCE first when those reach back to the
    session's start; viewed in `before_hours`); a path whose first page view is older
    than `hour` is also counted in `carried`, with that view's hour."""
    trail = list(before)
    hours: list[datetime | None] = [None] * len(before)
    if before_hours:
        hours[len(before) - len(before_hours) :] = before_hours
    # Only a page viewed before `hour` makes a path carried (a seal's common case: none).
    older = hour is not None and any(h is not None and h < hour for h in hours)
    if not older:
        grams_of: list[Gram] = []
        grams_count(counts.sources, grams_of, trail, pages, source)
        counts.grams.update(grams_of)
        return
    grams: list[Gram] = []  # counted at the end in one go (Counter.update runs in C)
    carried = counts.carried
    for page in pages:
        if len(trail) == 1 and trail[0] == ENTRANCE:
            counts.sources[page, source] += 1
        trail.append(page)
        hours.append(hour)
        end = len(trail)
        gram: Gram = ()
        steps, first = 0, hour
        for at in range(end - 1, max(-1, end - MAX_STEPS - 2), -1):
            if trail[at] != ENTRANCE:
                steps += 1
                if steps > MAX_STEPS:
                    break
                first = hours[at]
            gram = (trail[at], *gram)
            grams.append(gram)
            if older and first is not None and first < hour:  # type: ignore[operator]
                carried[gram, first] += 1
    counts.grams.update(grams)


def grams_count(
    sources: Counter[tuple[str, str]] | None,
    grams: list[Gram],
    trail: list[str],
    pages: Iterable[str],
    source: str,
) -> None:
    """session_count without carried paths: each page's paths are the slices of the trail
    ending at it, up to MAX_STEPS pages (and ENTRANCE, only ever first, on top), added to
    `grams` (its caller counts them, once for many sessions); the entrance into `sources`
    (None: not counted here). The trail is kept as its last MAX_STEPS + 1 entries, a tuple
    each slice of which is a path."""
    window = tuple(trail[-MAX_STEPS - 1 :])
    for page in pages:
        if sources is not None and window == (ENTRANCE,):
            sources[page, source] += 1
        window = (*window[-MAX_STEPS:], page)
        # ENTRANCE on top only while it is still the window's first entry.
        low = 0 if window[0] == ENTRANCE else max(0, len(window) - MAX_STEPS)
        grams += [window[at:] for at in range(len(window) - 1, low - 1, -1)]


def visits_count(counts: PathCounts, visits: Counter[tuple[tuple[str, ...], str]]) -> None:
    """Add the paths of visits that began in the hour, without a path made per visit.

    The paths ending at a visit's k-th page are the ends of its last MAX_STEPS pages, and
    ENTRANCE before all k while k <= MAX_STEPS: they depend on that window alone. So each
    distinct page sequence (a source only names the entrance, its first page) adds its
    windows, and each distinct window its paths, times the visits that had it."""
    by_pages: Counter[tuple[str, ...]] = Counter()
    for (pages, source), n in visits.items():
        if pages:
            by_pages[pages] += n
            counts.sources[pages[0], source] += n
    windows: Counter[tuple[Gram, bool]] = Counter()  # (last pages, ENTRANCE before them)
    for pages, n in by_pages.items():
        for end in range(1, len(pages) + 1):
            windows[pages[max(0, end - MAX_STEPS) : end], end <= MAX_STEPS] += n
    grams = counts.grams
    for (window, entered), n in windows.items():
        for at in range(len(window)):
            grams[window[at:]] += n
        if entered:
            grams[(ENTRANCE, *window)] += n
