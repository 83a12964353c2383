"""A site's goals as the seal, the reports and the cohorts use them: `site_goals(site_id)`
and `Goal.matches(event)`, over the event rows a seal reads (type, name, url, element,
props as stored: site_events_by_bucket's SELECT_FUNNEL_ROWS).

A definition is one step (domain/goals/steps.py), e.g. {"kind": "pageview", "path": "/thanks",
"match": "exact"}, {"kind": "event", "name": "signup", "properties": [{"key": "plan",
"op": "eq", "value": "pro"}]} or {"kind": "click", "selector": "button.buy"}.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

from sessions_app.domain.goals.kinds import STEP_KINDS, Matcher
from sessions_app.domain.goals.steps import StepSerializer, first_error, step_matcher
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.models import Goal as GoalRow

MAX_GOALS = 50  # a site's goals (each is matched against every event a seal reads)


@dataclass(frozen=True)
class Goal:
    """One goal of a site, compiled: `matches` is its step kind's matcher."""

    id: int
    name: str
    definition: dict[str, Any]
    digest: str
    exact_from: datetime | None
    matcher: Matcher = field(repr=False, compare=False)

    def matches(self, event: dict[str, Any]) -> bool:
        """Whether this event (a raw row: type, name, url, element, props) is a conversion."""
        return self.matcher(event)

    @property
    def label(self) -> str:
        """How the goal's definition reads ("viewed /thanks", "did signup")."""
        return STEP_KINDS[self.definition["kind"]].label(self.definition)


def definition_clean(raw: Any) -> dict[str, Any]:
    """The goal's step as stored (defaults filled in); RangeError naming the first bad field."""
    if not isinstance(raw, dict):
        raise RangeError("definition", "expected an object")
    kind = STEP_KINDS.get(str(raw.get("kind")))
    if kind is not None and not kind.in_goals:
        raise RangeError("definition.kind", f"a goal cannot be a {kind.title} step")
    checked = StepSerializer(data=raw)
    if not checked.is_valid():
        name, message = first_error(checked.errors)
        raise RangeError(f"definition.{name}" if name != "definition" else name, message)
    found = orjson.loads(orjson.dumps(checked.validated_data))
    found.pop("label", None)
    return {k: v for k, v in found.items() if v not in (None, "") or k == "kind"}


def definition_digest(definition: dict[str, Any]) -> str:
    """A definition's identity: what its stored counts are keyed by."""
    canonical = orjson.dumps(definition, option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(canonical).hexdigest()[:32]


def goal_of(row: GoalRow) -> Goal:
    return Goal(
        id=row.pk,
        name=row.name,
        definition=row.definition,
        digest=row.digest,
        exact_from=timebuckets.as_utc(row.exact_from) if row.exact_from else None,
        matcher=step_matcher(row.definition),
    )


def site_goals(site_id: uuid.UUID | str) -> list[Goal]:
    """The site's goals, by name (at most MAX_GOALS)."""
    return [goal_of(row) for row in GoalRow.objects.filter(site_id=site_id)[:MAX_GOALS]]


def conversion_label(goals: list[Goal]) -> str | None:
    """What a site's conversion rate counts: None without goals (no conversion rate is
    shown), the goal's name when it has one, else "any goal"."""
    if not goals:
        return None
    return goals[0].name if len(goals) == 1 else "any goal"


RECENT_SECONDS = 30.0  # how old ingest's copy of a site's goals may be
RECENT_SITES = 10_000  # sites kept in this process's copy
_recent: dict[str, tuple[float, list[Goal]]] = {}


def site_goals_recent(site_id: uuid.UUID | str) -> list[Goal]:
    """The site's goals as read at most RECENT_SECONDS ago in this process: what ingest
    matches each batch's events against (domain/aggregates/tally.py). A tally records which goals
    it matched, so a goal added or changed since only sends the seal to the raw rows."""
    key, now = str(site_id), time.monotonic()
    held = _recent.get(key)
    if held is not None and now - held[0] < RECENT_SECONDS:
        return held[1]
    if len(_recent) >= RECENT_SITES:
        _recent.clear()
    goals = _recent[key] = (now, site_goals(site_id))
    return goals[1]


def recent_forget(site_id: uuid.UUID | str) -> None:
    """Drop this process's copy of a site's goals (a goal was saved or deleted here: the
    next batch matches against the goals as they are; other processes within 30 s)."""
    _recent.pop(str(site_id), None)
