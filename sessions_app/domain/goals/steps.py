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

from sessions_app.domain.goals.kinds import STEP_KINDS, Matcher, StepKind
from sessions_app.foundation.models import Goal

MAX_CONDITIONS = 5
OPS = ("eq", "neq", "contains", "exists")


class ConditionSerializer(serializers.Serializer):
    key = serializers.CharField(max_length=100)
    op = serializers.ChoiceField(OPS, default="eq")
    value = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")


# A step: its kind, every kind's fields (domain/goals/kinds.py), a label, conditions. (A
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
        STEP_KINDS[attrs["kind"]].check_site(attrs, self.context.get("site_id"))
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


def _goal(goal_id: Any) -> Goal | None:
    return Goal.objects.filter(pk=goal_id).only("name", "definition", "digest").first()


class GoalStep(StepKind):
    """A step that is one of the site's goals (by id): its matcher is the goal's, as the goal
    is now (a funnel's cached days key on the goal's digest: `digest_part`)."""

    name, title = "goal", "goal"
    prompts = {"goal": "choose one of the site's goals"}
    in_goals = False  # a goal is not defined by another goal

    def fields(self) -> dict[str, serializers.Field]:
        return {"goal": serializers.IntegerField(min_value=1, required=False)}

    def check(self, attrs: dict[str, Any]) -> None:
        if not attrs.get("goal"):
            raise serializers.ValidationError({"goal": "required for a goal step"})

    def check_site(self, attrs: dict[str, Any], site_id: Any) -> None:
        if site_id is None or not Goal.objects.filter(pk=attrs["goal"], site_id=site_id).exists():
            raise serializers.ValidationError({"goal": "no such goal on this site"})

    def digest_part(self, step: dict[str, Any]) -> Any:
        goal = _goal(step["goal"])
        return goal.digest if goal else "deleted"

    def matcher(self, step: dict[str, Any]) -> Matcher:
        goal = _goal(step["goal"])
        return step_matcher(goal.definition) if goal else (lambda row: False)

    def label(self, step: dict[str, Any]) -> str:
        goal = _goal(step["goal"])
        return f"reached {goal.name}" if goal else "a deleted goal"

    def form_step(self, value: str, match: str) -> dict[str, Any]:
        return {"goal": value}

    def form_value(self, step: dict[str, Any]) -> tuple[str, str]:
        return str(step.get("goal") or ""), "exact"


STEP_KINDS.add(GoalStep())
