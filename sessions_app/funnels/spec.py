"""A funnel's definition: its steps and how it counts, validated, and compiled to matchers.

A definition is JSON (stored per version in SQL, models/funnels.py):

    {"steps": [{"kind": "pageview", "path": "/product/", "match": "prefix"},
               {"kind": "click", "selector": "button.add-to-cart"},
               {"kind": "event", "name": "checkout", "properties": [
                   {"key": "plan", "op": "eq", "value": "pro"}]}],
     "count_by": "user" | "session",
     "window": {"unit": "session" | "hours" | "days", "value": 24}}

Steps: 2-10, each of a kind in funnels/kinds.STEP_KINDS: a page view step matches the
page path exactly, by prefix or by a glob pattern (`*`, `?`; fnmatch); a click step its
element's selector (exact) or text (exact, trimmed); an event step the custom event's
name. Property conditions (at most 5
a step, all must hold) compare the event's properties: eq, neq, contains (text), exists.
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

from sessions_app.core.bounds import RangeError
from sessions_app.funnels.kinds import STEP_KINDS, Matcher

MAX_STEPS, MIN_STEPS = 10, 2
MAX_CONDITIONS = 5
OPS = ("eq", "neq", "contains", "exists")
WINDOW_MAX = {"hours": 24 * 90, "days": 90}


class ConditionSerializer(serializers.Serializer):
    key = serializers.CharField(max_length=100)
    op = serializers.ChoiceField(OPS, default="eq")
    value = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")


# A step: its kind, every kind's fields (funnels/kinds.py), a label, conditions. (A
# comment, not a docstring: the API schema shows a serializer's docstring.)
class StepSerializer(serializers.Serializer):
    def get_fields(self) -> dict[str, serializers.Field]:
        return {
            "kind": serializers.ChoiceField(STEP_KINDS.names()),
            **STEP_KINDS.fields(),
            "label": serializers.CharField(max_length=100, required=False),
            "properties": ConditionSerializer(many=True, required=False, default=list),
        }

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        STEP_KINDS[attrs["kind"]].check(attrs)
        if len(attrs.get("properties") or []) > MAX_CONDITIONS:
            raise serializers.ValidationError({"properties": f"at most {MAX_CONDITIONS}"})
        return attrs


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


def _first_error(errors: Any, path: str = "") -> tuple[str, str]:
    """The first (field path, message) of DRF's nested error structure."""
    if isinstance(errors, dict):
        key, value = next(iter(errors.items()))
        if isinstance(key, int):  # DRF's errors of a list serializer's items, by index
            name = f"{path}[{key}]"
        elif key == "non_field_errors":
            name = path
        else:
            name = f"{path}.{key}" if path else key
        return _first_error(value, name)
    if isinstance(errors, list):
        for index, value in enumerate(errors):
            if value:
                if isinstance(value, dict | list) and not isinstance(value, str):
                    return _first_error(value, f"{path}[{index}]")
                return path or "definition", str(value)
    return path or "definition", str(errors)


def definition_clean(raw: Any) -> dict[str, Any]:
    """The definition as stored (defaults filled in); RangeError naming the first bad field."""
    if not isinstance(raw, dict):
        raise RangeError("definition", "expected an object")
    checked = DefinitionSerializer(data=raw)
    if not checked.is_valid():
        field, message = _first_error(checked.errors)
        raise RangeError(field, message)
    return orjson.loads(orjson.dumps(checked.validated_data))


def digest(definition: dict[str, Any]) -> str:
    """The definition's identity: sha256 of its canonical JSON (what cached results key on)."""
    canonical = orjson.dumps(definition, option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(canonical).hexdigest()[:32]


def _props_match(conditions: list[dict[str, Any]]) -> Callable[[Any], bool]:
    def check(raw: Any) -> bool:
        props = orjson.loads(raw) if isinstance(raw, str | bytes) else (raw or {})
        for c in conditions:
            value = props.get(c["key"]) if isinstance(props, dict) else None
            text = (
                ""
                if value is None
                else str(value).lower()
                if isinstance(value, bool)
                else str(value)
            )
            if c["op"] == "exists" and value is None:
                return False
            if c["op"] == "eq" and (value is None or text != c["value"]):
                return False
            if c["op"] == "neq" and value is not None and text == c["value"]:
                return False
            if c["op"] == "contains" and c["value"] not in text:
                return False
        return True

    return check


def step_matcher(step: dict[str, Any]) -> Matcher:
    """A predicate over an event row (type, name, url, element, props as stored): the
    step kind's match, and its property conditions."""
    base = STEP_KINDS[step["kind"]].matcher(step)
    if not step.get("properties"):
        return base
    props = _props_match(step["properties"])
    return lambda row: base(row) and props(row.get("props"))


@dataclass(frozen=True)
class Funnel:
    """A compiled definition: each step's matcher and how units are counted."""

    definition: dict[str, Any]
    matchers: tuple[Matcher, ...]
    per_session_units: bool  # a unit is a session (else a user)
    session_window: bool  # steps must happen within one session
    window: timedelta | None  # else at most this long from the first step

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
    return Funnel(
        definition=definition,
        matchers=tuple(step_matcher(s) for s in definition["steps"]),
        per_session_units=definition["count_by"] == "session",
        session_window=window["unit"] == "session",
        window=length,
    )
