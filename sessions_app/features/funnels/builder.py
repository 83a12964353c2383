"""The funnel builder form: its rows (step-N-kind, -value, -match and one property condition
prop-N-key, -op, -value), the row actions that work without JavaScript (add a step,
remove or move one: a submit button named `builder`; static/sessions_app/funnel_builder.js
does the same in the page), and the definition's errors in plain words on the row they
concern ("Step 2: enter a CSS selector")."""

from __future__ import annotations

import re
from typing import Any

from sessions_app.domain.goals.kinds import STEP_KINDS
from sessions_app.features.funnels.spec import MAX_STEPS, MIN_STEPS, WINDOW_MAX
from sessions_app.foundation.core.bounds import RangeError

FIRST_ROWS = 3  # a new funnel's builder starts with three rows
ACTION = re.compile(r"^(add|remove|up|down)(?:-(\d+))?$")
STEP_FIELD = re.compile(r"^steps\[(\d+)\](?:\.(\w+))?")


def _row(post: Any, n: int) -> dict[str, Any]:
    kind = (post.get(f"step-{n}-kind") or "").strip()
    value = post.get(f"step-{n}-goal" if kind == "goal" else f"step-{n}-value")  # its own menu
    return {
        "kind": kind,
        "value": (value or "").strip(),
        "match": post.get(f"step-{n}-match") or "exact",
        "prop": {
            "key": (post.get(f"prop-{n}-key") or "").strip(),
            "op": post.get(f"prop-{n}-op") or "eq",
            "value": post.get(f"prop-{n}-value") or "",
        },
    }


def form_rows(post: Any) -> list[dict[str, Any]]:
    """The rows a form posted, in order (numbered from 1), empty ones too."""
    try:
        count = int(post.get("rows") or MAX_STEPS)
    except ValueError:
        count = MAX_STEPS
    return [_row(post, n) for n in range(1, max(1, min(count, MAX_STEPS)) + 1)]


def rows_action(rows: list[dict[str, Any]], action: str) -> list[dict[str, Any]]:
    """The rows after a builder button: add a row, remove row N, move row N up or down."""
    found = ACTION.match(action or "")
    if not found:
        return rows
    verb, n = found.group(1), int(found.group(2) or 0) - 1
    rows = list(rows)
    if verb == "add" and len(rows) < MAX_STEPS:
        rows.append(_row({}, 0))
    elif verb == "remove" and 0 <= n < len(rows) and len(rows) > 1:
        del rows[n]
    elif verb in ("up", "down"):
        other = n - 1 if verb == "up" else n + 1
        if 0 <= n < len(rows) and 0 <= other < len(rows):
            rows[n], rows[other] = rows[other], rows[n]
    return rows


def rows_definition(rows: list[dict[str, Any]], post: Any) -> tuple[dict[str, Any], list[int]]:
    """The definition of the rows (empty rows skipped) and the row number of each step."""
    steps, numbers = [], []
    for n, row in enumerate(rows, start=1):
        if not row["kind"] and not row["value"]:
            continue
        kind = STEP_KINDS.get(row["kind"])
        fields = kind.form_step(row["value"], row["match"]) if kind else {"name": row["value"]}
        step: dict[str, Any] = {"kind": row["kind"], **fields}
        if row["prop"]["key"]:
            step["properties"] = [row["prop"]]
        steps.append(step)
        numbers.append(n)
    window: dict[str, Any] = {"unit": post.get("window_unit") or "session"}
    if window["unit"] != "session":
        window["value"] = post.get("window_value") or None
    definition = {"steps": steps, "count_by": post.get("count_by") or "user", "window": window}
    return definition, numbers


def definition_rows(definition: dict[str, Any] | None, least: int = FIRST_ROWS) -> list[dict]:
    """Builder rows prefilled from a definition: its steps, then empty rows up to `least`."""
    rows = []
    for step in (definition or {}).get("steps") or []:
        kind = STEP_KINDS.get(step.get("kind", ""))
        value, match = (
            kind.form_value(step) if kind else (step.get("name") or "", step.get("match", "exact"))
        )
        prop = (step.get("properties") or [{}])[0]
        rows.append({"kind": step.get("kind", ""), "value": value, "match": match, "prop": prop})
    while len(rows) < least:
        rows.append(_row({}, 0))
    return rows


def plain_error(exc: RangeError, numbers: list[int]) -> tuple[int | None, str]:
    """(the row it concerns or None, the error in plain words) of a definition's error."""
    message = str(exc).split(": ", 1)[-1]
    step = STEP_FIELD.match(exc.field)
    if step:
        index, field = int(step.group(1)), step.group(2) or ""
        row = numbers[index] if index < len(numbers) else None
        return row, f"Step {row or index + 1}: {_step_words(field, message)}"
    if exc.field == "steps":
        return (
            None,
            f"A funnel needs {MIN_STEPS} to {MAX_STEPS} steps: fill in at least {MIN_STEPS} rows.",
        )
    if exc.field == "window.value":
        return None, (
            "Conversion window: enter a whole number from 1 up to "
            f"{WINDOW_MAX['hours']:,} hours or {WINDOW_MAX['days']} days."
        )
    if exc.field == "window":
        return (
            None,
            "Counted per session, a funnel's window is the session: choose “within the session”.",
        )
    if exc.field == "name":
        return None, f"Name: {message}."
    return None, str(exc)


def _step_words(field: str, message: str) -> str:
    if field == "kind":
        titles = ", ".join(k.title for k in STEP_KINDS)
        return f"choose what the step is ({titles})"
    if field == "properties":
        return f"the property condition: {message}"
    for kind in STEP_KINDS:
        if field in kind.prompts:
            return kind.prompts[field]
    return f"{field or 'step'}: {message}" if field else message
