"""A funnel's definition: its steps and how it counts, validated, and compiled to matchers.

A definition is JSON (stored per version in SQL, foundation/models/funnels.py):

    {"steps": [{"kind": "pageview", "path": "/product/", "match": "prefix"},
               {"kind": "click", "selector": "button.add-to-cart"},
               {"kind": "event", "name": "checkout", "properties": [
                   {"key": "plan", "op": "eq", "value": "pro"}]}],
     "count_by": "user" | "session",
     "window": {"unit": "session" | "hours" | "days", "value": 24}}

Steps: 2-10, each of a kind in goals/kinds.STEP_KINDS (validated and matched by
domain/goals/steps.py): a page view step matches the page path exactly, by prefix or by a
glob pattern (`*`, `?`; fnmatch); a click step its element's selector (exact) or text
(exact, trimmed); an event step the custom event's name. Property conditions (at most
5 a step, all must hold) compare the event's properties: eq, neq, contains (text), exists.
Validation is DRF's serializers: every error names its field (`steps[2].path`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import orjson
from rest_framework import serializers

from sessions_app.domain.goals.kinds import STEP_KINDS, Matcher
from sessions_app.domain.goals.steps import StepSerializer, first_error, step_matcher
from sessions_app.foundation.core.bounds import RangeError

MAX_STEPS, MIN_STEPS = 10, 2
WINDOW_MAX = {"hours": 24 * 90, "days": 90}


class WindowSerializer(serializers.Serializer):
    unit = serializers.ChoiceField(("session", "hours", "days"), default="session")
    value = serializers.IntegerField(min_value=1, required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        unit = attrs["unit"]
        if unit == "session":
            attrs.pop("value", None)
            return attrs
        value = attrs.get("value")
        if value is None:
            raise serializers.ValidationError({"value": f"required with {unit}"})
        if value > WINDOW_MAX[unit]:
            raise serializers.ValidationError({"value": f"at most {WINDOW_MAX[unit]} {unit}"})
        return attrs


class DefinitionSerializer(serializers.Serializer):
    steps = StepSerializer(many=True)
    count_by = serializers.ChoiceField(("user", "session"), default="user")
    window = WindowSerializer(required=False, default=lambda: {"unit": "session"})

    def validate_steps(self, steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if not MIN_STEPS <= len(steps) <= MAX_STEPS:
            raise serializers.ValidationError(f"{MIN_STEPS} to {MAX_STEPS} steps")
        return steps

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["count_by"] == "session" and attrs["window"]["unit"] != "session":
            raise serializers.ValidationError(
                {"window": "counted per session, the window is the session"}
            )
        return attrs


def definition_clean(raw: Any, site_id: Any = None) -> dict[str, Any]:
    """The definition as stored (defaults filled in); RangeError naming the first bad field.
    A goal step must name a goal of the site `site_id`."""
    if not isinstance(raw, dict):
        raise RangeError("definition", "expected an object")
    checked = DefinitionSerializer(data=raw, context={"site_id": site_id})
    if not checked.is_valid():
        field, message = first_error(checked.errors)
        raise RangeError(field, message)
    return orjson.loads(orjson.dumps(checked.validated_data))


def digest(definition: dict[str, Any]) -> str:
    """The definition's identity: sha256 of its canonical JSON (what cached results key on)."""
    canonical = orjson.dumps(definition, option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(canonical).hexdigest()[:32]


@dataclass(frozen=True)
class Funnel:
    """A compiled definition: each step's matcher and how units are counted."""

    definition: dict[str, Any]
    matchers: tuple[Matcher, ...]
    per_session_units: bool  # a unit is a session (else a user)
    session_window: bool  # steps must happen within one session
    window: timedelta | None  # else at most this long from the first step
    key: str  # what its cached days key on: the digest, and the goals its goal steps name

    def mask(self, row: dict[str, Any]) -> int:
        """Bit i set when the row matches step i."""
        found = 0
        for i, match in enumerate(self.matchers):
            if match(row):
                found |= 1 << i
        return found

    def masker(self, limit: int = 50_000) -> Callable[[dict[str, Any]], int]:
        """`mask` remembering its answer per distinct (type, name, url, element, props):
        a scan meets the same few thousand again and again. Safe to share between
        threads (a dict's get and set are atomic); forgets everything past `limit`."""
        known: dict[tuple[Any, ...], int] = {}
        mask = self.mask

        def cached(row: dict[str, Any]) -> int:
            key = (row["type"], row["name"], row["url"], row["element"], row["props"])
            bits = known.get(key)
            if bits is None:
                if len(known) >= limit:
                    known.clear()
                bits = known[key] = mask(row)
            return bits

        return cached


def funnel_compile(definition: dict[str, Any]) -> Funnel:
    window = definition["window"]
    length = None
    if window["unit"] != "session":
        length = timedelta(**{window["unit"]: window["value"]})
    parts = [STEP_KINDS[s["kind"]].digest_part(s) for s in definition["steps"]]
    return Funnel(
        key=digest({**definition, "parts": parts}) if any(parts) else digest(definition),
        definition=definition,
        matchers=tuple(step_matcher(s) for s in definition["steps"]),
        per_session_units=definition["count_by"] == "session",
        session_window=window["unit"] == "session",
        window=length,
    )
