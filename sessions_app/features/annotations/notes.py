"""Annotations: a note on a day or a range of days, drawn on every time chart of a site
(docs/annotations.md).

Days are the site's (its time zone), as the range picker's are: a note on 3 December
marks 3 December wherever the reader is, and a chart by hour marks the day's midnight.
Any member of the site writes one; its author or a site admin changes or deletes it.
A public note is also shown to a share link's viewers (`for_chart(public_only=True)`),
without its author. Every input is bounded: the note's length, a range's length, how
far from today a day lies, how many notes a site keeps and a chart shows.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left, bisect_right
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.db.models import Q, QuerySet

from sessions_app.domain.permissions import ADMIN, site_role
from sessions_app.features.web import periods
from sessions_app.features.web.params import iso
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.models import Annotation, Site

MAX_NOTE = 200  # characters, as a tooltip shows them
MAX_RANGE_DAYS = 366  # a range's days, both ends included
MAX_ON_CHART = 200  # a chart's notes; the list page pages through the rest
MAX_PER_SITE = 5000  # a site's notes: delete old ones first
REACH = timedelta(days=366)  # a day lies at most this far after today
DAY = re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII)


def note_text(value: Any) -> str:
    """The note, its spaces folded and control characters dropped (a NUL is refused by
    PostgreSQL's text); RangeError naming `note` when empty, too long or not Unicode."""
    if value is not None and not isinstance(value, str):
        raise RangeError("note", "a text")
    folded = " ".join((value or "").split())
    text = "".join(ch for ch in folded if unicodedata.category(ch) != "Cc").strip()
    try:
        text.encode()
    except UnicodeEncodeError:  # a lone surrogate, which JSON's \ud800 can carry
        raise RangeError("note", "not valid Unicode text") from None
    if not text:
        raise RangeError("note", "a few words, so the chart says what happened")
    if len(text) > MAX_NOTE:
        raise RangeError("note", f"at most {MAX_NOTE} characters")
    return text


def day_value(value: Any, field: str, *, today: date) -> date:
    """A day as YYYY-MM-DD, from 1970 to a year after `today`; RangeError naming `field`."""
    if isinstance(value, date) and not isinstance(value, datetime):
        day = value
    elif isinstance(value, str) and value.strip():
        try:
            if not DAY.fullmatch(value.strip()):
                raise ValueError(value)  # fromisoformat also reads 20261203 and 2026-W49-4
            day = date.fromisoformat(value.strip())
        except ValueError:
            raise RangeError(field, f"not a date (YYYY-MM-DD): {value.strip()[:40]!r}") from None
    else:
        raise RangeError(field, "a date as YYYY-MM-DD")
    if not date(1970, 1, 1) <= day <= today + REACH:
        raise RangeError(field, "between 1970-01-01 and a year from today")
    return day


def today(site: Site, now: datetime | None = None) -> date:
    """The site's today (its time zone)."""
    return (now or datetime.now(UTC)).astimezone(periods.site_zone(site.time_zone)).date()


def _days(site: Site, day: Any, end_day: Any, now: datetime | None) -> tuple[date, date | None]:
    """The first day and the last (None: the same day), checked."""
    current = today(site, now)
    first = day_value(day, "day", today=current)
    if end_day is None or end_day == "":
        return first, None
    last = day_value(end_day, "end_day", today=current)
    if last < first:
        raise RangeError("end_day", "must not be before day")
    if (last - first).days + 1 > MAX_RANGE_DAYS:
        raise RangeError("end_day", f"a range of at most {MAX_RANGE_DAYS} days")
    return first, (last if last != first else None)


def annotation_save(
    *,
    site: Site,
    user: Any,
    day: Any,
    end_day: Any = None,
    note: Any,
    public: bool = False,
    now: datetime | None = None,
) -> Annotation:
    """A new note of the person's on the site; RangeError naming the field that is wrong."""
    first, last = _days(site, day, end_day, now)
    text = note_text(note)
    if Annotation.objects.filter(site=site).count() >= MAX_PER_SITE:
        raise RangeError("note", f"the site has {MAX_PER_SITE} notes: delete old ones first")
    return Annotation.objects.create(
        site=site, day=first, end_day=last, note=text, public=public, created_by=user
    )


def annotation_change(
    *,
    annotation: Annotation,
    day: Any,
    end_day: Any = None,
    note: Any,
    public: bool,
    now: datetime | None = None,
) -> Annotation:
    """Change a note's days, words and visibility; RangeError naming the field, unchanged."""
    first, last = _days(annotation.site, day, end_day, now)
    text = note_text(note)
    annotation.day, annotation.end_day, annotation.note = first, last, text
    annotation.public = public
    annotation.save(update_fields=["day", "end_day", "note", "public"])
    return annotation


def may_change(user: Any, site: Site, annotation: Annotation, *, admin: bool | None = None) -> bool:
    """Its author changes or deletes it, and so do the site's admins (`admin`: whether
    the user is one, when a list already asked)."""
    author = annotation.created_by_id
    if author is not None and author == getattr(user, "pk", None):
        return True
    return site_role(user, site.id) == ADMIN if admin is None else admin


def of_site(site: Site) -> QuerySet[Annotation]:
    """The site's notes, the latest day first."""
    return Annotation.objects.filter(site=site).select_related("created_by")


def period_days(site: Site, period: periods.Period) -> tuple[date, date]:
    """The site's first and last day the period touches."""
    zone = periods.site_zone(site.time_zone)
    first = period.start.astimezone(zone).date()
    last = (period.end - timedelta(microseconds=1)).astimezone(zone).date()
    return first, last


def overlapping(site: Site, first: date, last: date) -> QuerySet[Annotation]:
    """The site's notes on a day from `first` to `last` (both included), earliest first."""
    ends_inside = Q(end_day__isnull=True, day__gte=first) | Q(end_day__gte=first)
    return of_site(site).filter(ends_inside, day__lte=last).order_by("day", "id")


def annotation_json(
    annotation: Annotation, *, site: Site, public_only: bool = False
) -> dict[str, Any]:
    """A note as charts and the API read it: its days, and the instants they start and
    end at (UTC, from the site's zone) so a chart of any grain places it."""
    zone = periods.site_zone(site.time_zone)
    last = annotation.last_day
    start = periods.midnight(annotation.day, zone)
    end = periods.midnight(last + timedelta(days=1), zone)
    found: dict[str, Any] = {
        "id": annotation.pk,
        "day": annotation.day.isoformat(),
        "end_day": annotation.end_day.isoformat() if annotation.end_day else None,
        "label": days_label(annotation.day, last),
        "note": annotation.note,
        "public": annotation.public,
        "start": iso(start),
        "end": iso(end),
    }
    if not public_only:
        author = annotation.created_by
        found["author"] = author.get_username() if author is not None else None
    return found


def for_chart(
    site: Site, period: periods.Period, *, public_only: bool = False
) -> list[dict[str, Any]]:
    """The notes a chart of the period shows (at most MAX_ON_CHART, earliest first), as
    annotation_json makes them; only the public ones, without authors, for a share link."""
    found = overlapping(site, *period_days(site, period))
    if public_only:
        found = found.filter(public=True)
    return [annotation_json(a, site=site, public_only=public_only) for a in found[:MAX_ON_CHART]]


def days_label(first: date, last: date) -> str:
    """The days as a person reads them: "3 Dec 2026", "3 - 5 Dec 2026", "28 Nov - 2 Dec
    2026", "30 Dec 2026 - 2 Jan 2027" (an en dash, not a hyphen)."""
    if first == last:
        return f"{first:%-d %b %Y}"
    if first.year != last.year:
        return f"{first:%-d %b %Y} \u2013 {last:%-d %b %Y}"
    if first.month != last.month:
        return f"{first:%-d %b} \u2013 {last:%-d %b %Y}"
    return f"{first:%-d} \u2013 {last:%-d %b %Y}"


def chart_items(site: Site, period: periods.Period, user: Any) -> list[dict[str, Any]]:
    """The chart's notes as for_chart makes them, each with `may_change` for this person
    (its author or a site admin: the list under the chart links it to its page)."""
    admin = site_role(user, site.id) == ADMIN
    found = overlapping(site, *period_days(site, period))[:MAX_ON_CHART]
    return [
        {**annotation_json(a, site=site), "may_change": may_change(user, site, a, admin=admin)}
        for a in found
    ]


def on_bars(
    marks: list[dict[str, Any]], starts: list[datetime], *, step: int
) -> list[dict[str, Any]]:
    """Where each note sits on a bar chart of these buckets (their starts, in order; each
    bar `step` wide): `x` of its first bucket's bar and `width` to its last one's end (a
    range) or 0 (a day: a line at its bucket)."""
    if not starts:
        return []
    placed = []
    for mark in marks:
        start = datetime.fromisoformat(mark["start"])
        end = datetime.fromisoformat(mark["end"])
        first = max(0, bisect_right(starts, start) - 1)
        last = max(first, bisect_left(starts, end) - 1)
        width = (last - first + 1) * step if mark["end_day"] else 0
        placed.append({**mark, "x": first * step, "width": width})
    return placed
