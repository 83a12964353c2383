"""A step kind is one class in one registry: a throwaway kind, added here and nowhere
else, is validated, matched in a funnel over the shop's raw events (against the brute
force), labelled in the results and offered by the builder form; once removed, it is
refused again and the form no longer lists it."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from rest_framework import serializers

from sessions_app.domain.goals.kinds import STEP_KINDS, Matcher, StepKind, element_of
from sessions_app.features.funnels import defs, results, spec
from sessions_app.foundation.core.bounds import RangeError
from tests.support.accounts import member
from tests.support.funnels import brute, matches, ms, raw_rows


class ClickContaining(StepKind):
    """A click on an element whose text contains some words."""

    name, title = "click_containing", "click containing"

    def fields(self) -> dict[str, serializers.Field]:
        return {"contains": serializers.CharField(max_length=100, required=False)}

    def check(self, attrs: dict[str, Any]) -> None:
        if not attrs.get("contains"):
            raise serializers.ValidationError({"contains": "required for this step"})

    def matcher(self, step: dict[str, Any]) -> Matcher:
        words = step["contains"]
        return lambda row: row["type"] == "click" and words in (element_of(row).get("text") or "")

    def label(self, step: dict[str, Any]) -> str:
        return f"clicked …{step['contains']}…"

    def form_step(self, value: str, match: str) -> dict[str, Any]:
        return {"contains": value}

    def form_value(self, step: dict[str, Any]) -> tuple[str, str]:
        return step.get("contains") or "", "exact"


def brute_match(step: dict[str, Any], row: dict[str, Any]) -> bool:
    """The brute force's own reading of the throwaway kind; the others as it always did."""
    if step["kind"] != "click_containing":
        return matches(step, row)
    element = json.loads(row["element"]) if row["element"] else {}
    return row["type"] == "click" and step["contains"] in (element.get("text") or "")


OPTION = re.compile(rb'<option value="click_containing"[^>]*>click containing</option>')
FORM = {
    "name": "Products to cart",
    "step-1-kind": "pageview",
    "step-1-value": "/product/",
    "step-1-match": "prefix",
    "step-2-kind": "click_containing",
    "step-2-value": "cart",
    "count_by": "user",
    "window_unit": "days",
    "window_value": "1",
}


@pytest.mark.heavy
def test_a_throwaway_step_kind_is_validated_matched_labelled_and_in_the_form(
    client, analyst, site, shop
):
    start, end = shop
    member(analyst, site, "admin")  # the builder form is for the site's admins
    pages = f"/sites/{site.id}/funnels/"
    plain = {"steps": [{"kind": "pageview", "path": "/cart"}, {"kind": "event", "name": "x"}]}
    before = spec.definition_clean(plain)
    with STEP_KINDS.added(ClickContaining()):
        # Validated: its own field and reason, named like every other field.
        with pytest.raises(RangeError) as error:
            spec.definition_clean({"steps": [plain["steps"][0], {"kind": "click_containing"}]})
        assert str(error.value) == "steps[1].contains: required for this step"
        # The other kinds' stored definitions (and digests) are untouched by its field.
        assert spec.definition_clean(plain) == before
        # In the builder form, and saved from it.
        assert OPTION.search(client.get(pages).content)
        assert client.post(pages, FORM).status_code == 302
        funnel = site.funnels.get()
        definition = funnel.current.definition
        assert definition["steps"][1]["contains"] == "cart"
        shown = client.get(f"{pages}{funnel.pk}/").content.decode()
        assert re.search(r'name="step-2-value"[^>]*value="cart"', shown)
        # Matched: the funnel over the raw events equals the brute force.
        want = brute(raw_rows(site, start, end), definition, start, end, match=brute_match)
        assert any(len(chain) == 2 for chain in want.values())  # someone clicked "Add to cart"
        result = results.funnel_units(site=site, version=funnel.current, start=start, end=end)
        got = {u.key: [e[2] for e in u.chain] for u in result.units}
        assert got == {k: [ms(e["ts"]) for e in chain] for k, chain in want.items()}
        # Labelled in the results.
        summary = results.funnel_summary(definition, result, breakdown=None)
        assert [s["label"] for s in summary["steps"]] == ["viewed /product/…", "clicked …cart…"]
    # Removed: refused again, and gone from the form.
    with pytest.raises(RangeError) as error:
        defs.funnel_create(site=site, name="again", definition=definition)
    assert str(error.value) == 'steps[1].kind: "click_containing" is not a valid choice.'
    assert not OPTION.search(client.get(pages).content)
    assert "click_containing" not in STEP_KINDS
