"""Saved segments: a set of the pages' filters under a name (docs/segments.md).

A segment holds the URL parameters of the explorer's and the dashboard's filters
(explorer.filter_names(): dimensions, bot, goal, has replay, duration and event ranges),
checked as the pages check them when saved. It is its owner's, or every member's of
the site once shared; only the site's admins share, and a shared segment is changed or
deleted by its owner or an admin. Applying one is opening a page with its filters in
the URL, so every page that filters applies it as it applies those filters. A segment
whose filters no longer hold (a goal deleted since) says why instead of failing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from django.db.models import QuerySet

from sessions_app.domain.permissions import ADMIN, segments_seen, site_role
from sessions_app.features.analysis import dashboard, explorer
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.models import Goal, Segment, Site

MAX_NAME = 100
MAX_SEGMENTS = 200  # a person sees at most this many of a site's segments


def segment_name(value: Any) -> str:
    name = " ".join(str(value or "").split())
    if not name:
        raise RangeError("name", "a name, so the segment can be found again")
    if len(name) > MAX_NAME:
        raise RangeError("name", f"at most {MAX_NAME} characters")
    return name


def segment_filters(params: Mapping[str, Any]) -> dict[str, str]:
    """The filters among the parameters, as the pages check them; RangeError naming the
    first bad one, or `filters` when there is none."""
    found = {}
    for name in explorer.filter_names():
        value = params.get(name)
        if value is None or not str(value).strip():
            continue
        if not isinstance(value, str | int | bool):
            raise RangeError(name, "a text, a number or true/false")
        found[name] = str(value).strip().lower() if isinstance(value, bool) else str(value).strip()
    if not found:
        raise RangeError("filters", "at least one filter: add one on the page first")
    explorer.explorer_query_parse(found, now=datetime.now(UTC))
    return found


def visible(site: Site, user: Any) -> QuerySet[Segment]:
    """The site's segments this person sees: their own and the shared ones (the API's
    `?segment=` reads the same, permissions.segments_seen)."""
    return segments_seen(site, user)


def may_share(user: Any, site: Site) -> bool:
    return site_role(user, site.id) == ADMIN


def may_change(user: Any, site: Site, segment: Segment, *, admin: bool | None = None) -> bool:
    """Its owner changes it; a shared one, the site's admins too (`admin`: whether the
    user is one, when a list already asked)."""
    if segment.owner_id == user.pk:
        return True
    return segment.shared and (may_share(user, site) if admin is None else admin)


@dataclass(frozen=True)
class Shown:
    """A segment as a picker lists it: its query (the filters' URL parameters) and why
    it cannot be applied, if it cannot."""

    segment: Segment
    query: str
    problem: str
    says: list[str]  # each filter as the page's chip says it ("Country is DE")


def shown(site: Site, segments: list[Segment]) -> list[Shown]:
    goals = set(Goal.objects.filter(site=site).values_list("pk", flat=True))
    return [_shown(segment, goals) for segment in segments]


def _shown(segment: Segment, goals: set[int]) -> Shown:
    filters = segment.filters if isinstance(segment.filters, dict) else {}
    query = urlencode(filters)
    raw = [f"{name}={value}" for name, value in filters.items()]
    try:
        checked = dashboard.dashboard_filters(filters)  # as the pages read them, once
    except RangeError as exc:
        return Shown(segment, query, str(exc), raw)
    goal = checked.get(explorer.GOAL_FILTER)
    if goal is not None and int(goal) not in goals:
        return Shown(segment, query, "its goal was deleted", raw)
    return Shown(segment, query, "", [chip.text for chip in dashboard.chips(checked)])


def segment_save(
    *, site: Site, user: Any, name: Any, filters: Mapping[str, Any], shared: bool
) -> Segment:
    """A new segment of the person's; RangeError naming the field that is wrong."""
    if shared and not may_share(user, site):
        raise RangeError("shared", "only the site's admins share segments")
    if Segment.objects.filter(site=site, owner=user).count() >= MAX_SEGMENTS:
        raise RangeError("name", f"at most {MAX_SEGMENTS} segments each: delete one first")
    return Segment.objects.create(
        site=site,
        owner=user,
        name=segment_name(name),
        filters=segment_filters(filters),
        shared=shared,
    )


def segment_change(*, site: Site, user: Any, segment: Segment, name: Any, shared: bool) -> None:
    if shared != segment.shared and not may_share(user, site):
        raise RangeError("shared", "only the site's admins share segments")
    segment.name, segment.shared = segment_name(name), shared
    segment.save(update_fields=["name", "shared", "updated_at"])


def segment_filters_replace(segment: Segment, params: Mapping[str, Any]) -> None:
    """Give the segment the filters among `params` (checked as when saved); the pages and
    share links that apply it by id follow (a share link keeps the copy it was made with)."""
    segment.filters = segment_filters(params)
    segment.save(update_fields=["filters", "updated_at"])
