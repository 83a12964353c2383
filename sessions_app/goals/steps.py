"""One step (of a funnel, or a goal): its fields validated, and compiled to a matcher.

A step is JSON: its kind (goals/kinds.STEP_KINDS), the kind's fields, a label, and at most
MAX_CONDITIONS property conditions (all must hold) comparing the event's properties: eq,
neq, contains (text), exists. Validation is DRF's serializers: every error names its
field (`first_error`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
from rest_framework import serializers

from sessions_app.goals.kinds import STEP_KINDS, Matcher

MAX_CONDITIONS = 5
OPS = ("eq", "neq", "contains", "exists")


class ConditionSerializer(serializers.Serializer):
    key = serializers.CharField(max_length=100)
    op = serializers.ChoiceField(OPS, default="eq")
    value = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")


# A step: its kind, every kind's fields (goals/kinds.py), a label, conditions. (A
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


def first_error(errors: Any, path: str = "") -> tuple[str, str]:
    """The first (field path, message) of DRF's nested error structure."""
    if isinstance(errors, dict):
        key, value = next(iter(errors.items()))
        if isinstance(key, int):  # DRF's errors of a list serializer's items, by index
            name = f"{path}[{key}]"
        elif key == "non_field_errors":
            name = path
        else:
            name = f"{path}.{key}" if path else key
        return first_error(value, name)
    if isinstance(errors, list):
        for index, value in enumerate(errors):
            if value:
                if isinstance(value, dict | list) and not isinstance(value, str):
                    return first_error(value, f"{path}[{index}]")
                return path or "definition", str(value)
    return path or "definition", str(errors)


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
