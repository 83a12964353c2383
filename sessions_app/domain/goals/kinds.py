"""Step kinds (of funnel steps and goals): one class each, and the registry every place that
knows a kind reads.

Below the aggregates (a goal's matcher is its step kind's, and the seal counts goals).

A kind says which fields of a step it uses (DRF fields, validated by features/funnels/spec.py),
what else a valid step of it needs (`check`), which events it matches (`matcher`; the
property conditions are added by goals/steps.step_matcher), how results name it (`label`), and
how the builder form shows it (`title`, `matches`, `form_step`, `form_value`). Adding a
kind is one class here (or anywhere) and `STEP_KINDS.add(...)`.

Every kind's fields are offered on every step (as they always were): a new kind's fields
must not have defaults, or the stored definitions (and the digests their cached days key
on) of the other kinds would change.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

import orjson
from rest_framework import serializers

from sessions_app.foundation.core import eventnames
from sessions_app.foundation.core.pagepaths import page_path

Row = dict[str, Any]
Matcher = Callable[[Row], bool]
PAGE_MATCHES = ("exact", "prefix", "pattern")


@lru_cache(maxsize=16_384)
def _element_text(raw: str | bytes) -> dict[str, Any]:
    """An element's JSON as stored, parsed once per distinct value (a scan repeats them)."""
    found = orjson.loads(raw)
    return found if isinstance(found, dict) else {}


def element_of(row: Row) -> dict[str, Any]:
    """The row's element (a dict, or its JSON as stored)."""
    raw = row.get("element")
    if isinstance(raw, dict):
        return raw
    return _element_text(raw) if raw else {}


@lru_cache(maxsize=65_536)
def path_of(url: str | None) -> str:
    """A URL's page path, once per distinct URL."""
    return page_path(url) or ""


class StepKind:
    """A step kind: its fields, validation, matcher, label and form."""

    name = ""
    title = ""  # what the builder's kind menu shows
    matches: tuple[tuple[str, str], ...] = ()  # the builder's match menu: (value, title)
    # The builder's plain words for a field a step of this kind lacks ("Step 2: " + it).
    prompts: dict[str, str] = {}
    placeholder = ""  # the builder's example value
    in_goals = True  # a goal's own definition may be of this kind

    def check_site(self, attrs: dict[str, Any], site_id: Any) -> None:
        """Like `check`, for what depends on the step's site (its id, None if unknown)."""

    def digest_part(self, step: dict[str, Any]) -> Any:
        """What besides the step itself its matches depend on (a funnel's cached days key
        on it, funnels/spec.Funnel.key), e.g. a named goal's current definition; None."""
        return None

    def suggestion(self, row: Row) -> str | None:
        """What the builder suggests from a recent event row for this kind's text field."""
        return None

    def fields(self) -> dict[str, serializers.Field]:
        """The step's fields this kind reads (fresh instances: DRF binds them)."""
        return {}

    def check(self, attrs: dict[str, Any]) -> None:
        """Raise serializers.ValidationError({field: reason}) if the step lacks something."""

    def matcher(self, step: dict[str, Any]) -> Matcher:
        """A predicate over an event row (type, name, url, element, props as stored)."""
        raise NotImplementedError

    def label(self, step: dict[str, Any]) -> str:
        """How results name a step without a label of its own."""
        raise NotImplementedError

    def form_step(self, value: str, match: str) -> dict[str, Any]:
        """The step's fields from the builder row's one text field and its match menu."""
        raise NotImplementedError

    def form_value(self, step: dict[str, Any]) -> tuple[str, str]:
        """The builder row (text, match) prefilled from a step."""
        raise NotImplementedError


class PageView(StepKind):
    name, title = "pageview", "page view"
    matches = tuple((m, m) for m in PAGE_MATCHES)
    prompts = {"path": "enter a page path, like /pricing"}
    placeholder = "/pricing"

    def suggestion(self, row: Row) -> str | None:
        return path_of(row.get("url")) or None if row["type"] == "pageview" else None

    def fields(self) -> dict[str, serializers.Field]:
        return {
            "path": serializers.CharField(max_length=500, required=False),
            "match": serializers.ChoiceField(PAGE_MATCHES, default="exact"),
        }

    def check(self, attrs: dict[str, Any]) -> None:
        if not attrs.get("path"):
            raise serializers.ValidationError({"path": "required for a page view step"})
        if attrs["match"] != "pattern" and "://" in attrs["path"]:
            attrs["path"] = page_path(attrs["path"])

    def matcher(self, step: dict[str, Any]) -> Matcher:
        wanted, how = step["path"], step["match"]

        def match(row: Row) -> bool:
            if row["type"] != "pageview":
                return False
            path = path_of(row.get("url"))
            if how == "exact":
                return path == wanted
            if how == "prefix":
                return path.startswith(wanted)
            return fnmatch.fnmatchcase(path, wanted)

        return match

    def label(self, step: dict[str, Any]) -> str:
        return f"viewed {step['path']}" + ("…" if step["match"] == "prefix" else "")

    def form_step(self, value: str, match: str) -> dict[str, Any]:
        return {"path": value, "match": match}

    def form_value(self, step: dict[str, Any]) -> tuple[str, str]:
        return step.get("path") or "", step.get("match", "exact")


class Click(StepKind):
    name, title = "click", "click"
    matches = (("text", "click text"),)
    prompts = {"selector": "enter a CSS selector (or the clicked text, with “click text”)"}
    placeholder = "button.add-to-cart"

    def suggestion(self, row: Row) -> str | None:
        return element_of(row).get("selector") or None if row["type"] == "click" else None

    def fields(self) -> dict[str, serializers.Field]:
        return {
            "selector": serializers.CharField(max_length=300, required=False),
            "text": serializers.CharField(max_length=300, required=False),
        }

    def check(self, attrs: dict[str, Any]) -> None:
        if not (attrs.get("selector") or attrs.get("text")):
            raise serializers.ValidationError({"selector": "a click step needs a selector or text"})

    def matcher(self, step: dict[str, Any]) -> Matcher:
        selector, text = step.get("selector"), step.get("text")

        def match(row: Row) -> bool:
            if row["type"] != "click":
                return False
            element = element_of(row)
            if selector and element.get("selector") != selector:
                return False
            return not text or (element.get("text") or "").strip() == text

        return match

    def label(self, step: dict[str, Any]) -> str:
        return f"clicked {step.get('selector') or step.get('text')}"

    def form_step(self, value: str, match: str) -> dict[str, Any]:
        return {"text" if match == "text" else "selector": value}

    def form_value(self, step: dict[str, Any]) -> tuple[str, str]:
        if step.get("text") and not step.get("selector"):
            return step["text"], "text"
        return step.get("selector") or step.get("text") or "", step.get("match", "exact")


class CustomEvent(StepKind):
    name, title = "event", "custom event"
    prompts = {"name": "enter an event name, like purchase"}
    placeholder = "purchase"

    def suggestion(self, row: Row) -> str | None:
        name = row.get("name") if row["type"] == "custom" else None
        return name if name and name not in eventnames.INTERNAL else None

    def fields(self) -> dict[str, serializers.Field]:
        return {"name": serializers.CharField(max_length=200, required=False)}

    def check(self, attrs: dict[str, Any]) -> None:
        if not attrs.get("name"):
            raise serializers.ValidationError({"name": "required for an event step"})

    def matcher(self, step: dict[str, Any]) -> Matcher:
        name = step["name"]
        return lambda row: row["type"] == "custom" and row.get("name") == name

    def label(self, step: dict[str, Any]) -> str:
        return f"did {step['name']}"

    def form_step(self, value: str, match: str) -> dict[str, Any]:
        return {"name": value}

    def form_value(self, step: dict[str, Any]) -> tuple[str, str]:
        return step.get("name") or "", step.get("match", "exact")


class Registry:
    """The step kinds by name, in the order the builder lists them."""

    def __init__(self, *kinds: StepKind) -> None:
        self._kinds = {k.name: k for k in kinds}

    def __getitem__(self, name: str) -> StepKind:
        return self._kinds[name]

    def __contains__(self, name: object) -> bool:
        return name in self._kinds

    def __iter__(self) -> Iterator[StepKind]:
        return iter(list(self._kinds.values()))

    def names(self) -> tuple[str, ...]:
        return tuple(self._kinds)

    def get(self, name: str) -> StepKind | None:
        return self._kinds.get(name)

    def add(self, kind: StepKind) -> None:
        if kind.name in self._kinds:
            raise ValueError(f"a step kind {kind.name!r} exists already")
        self._kinds[kind.name] = kind

    def remove(self, name: str) -> None:
        del self._kinds[name]

    @contextmanager
    def added(self, kind: StepKind) -> Iterator[StepKind]:
        """The kind registered for the block's length (a test's throwaway kind)."""
        self.add(kind)
        try:
            yield kind
        finally:
            self.remove(kind.name)

    def fields(self) -> dict[str, serializers.Field]:
        """Every kind's step fields (the first kind naming a field defines it)."""
        found: dict[str, serializers.Field] = {}
        for kind in self:
            for name, field in kind.fields().items():
                found.setdefault(name, field)
        return found

    def form_matches(self) -> list[tuple[str, str]]:
        """The builder's match menu: every kind's choices, each value once."""
        seen: dict[str, str] = {}
        for kind in self:
            for value, title in kind.matches:
                seen.setdefault(value, title)
        return list(seen.items())


STEP_KINDS = Registry(PageView(), Click(), CustomEvent())
