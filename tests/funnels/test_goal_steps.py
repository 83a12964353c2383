"""A funnel step can name one of the site's goals: validated against the site's goals
(the reason names the field), matched by the goal's own matcher (the funnel equals the same
funnel with the goal's definition as the step, and the brute force), labelled by the goal's
name, offered by the builder, and its cached days follow the goal's definition."""

from __future__ import annotations

import re

import pytest
from django.utils import timezone

from sessions_app.domain.jobs.goal_backfill import goal_save
from sessions_app.features.funnels import defs, results, spec
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.models import Site
from tests.support.accounts import member
from tests.support.funnels import brute, ms, raw_rows

PRO_CHECKOUT = {
    "kind": "event",
    "name": "checkout",
    "properties": [{"key": "plan", "op": "eq", "value": "pro"}],
}
PRODUCT = {"kind": "pageview", "path": "/product/", "match": "prefix"}
WINDOW = {"unit": "days", "value": 1}


def chains(site, version, start, end) -> dict[str, list[int]]:
    result = results.funnel_units(site=site, version=version, start=start, end=end)
    return {u.key: [e[2] for e in u.chain] for u in result.units}


@pytest.mark.heavy
def test_a_goal_step_is_the_goals_own_definition(site, shop):
    start, end = shop
    goal = goal_save(site=site, name="Pro checkout", definition=PRO_CHECKOUT, now=timezone.now())
    by_goal = defs.funnel_create(
        site=site,
        name="to the goal",
        definition={"steps": [PRODUCT, {"kind": "goal", "goal": goal.pk}], "window": WINDOW},
    )
    by_steps = defs.funnel_create(
        site=site,
        name="spelled out",
        definition={"steps": [PRODUCT, PRO_CHECKOUT], "window": WINDOW},
    )
    got = chains(site, by_goal.current, start, end)
    assert got == chains(site, by_steps.current, start, end)
    want = brute(raw_rows(site, start, end), by_steps.current.definition, start, end)
    assert got == {k: [ms(e["ts"]) for e in chain] for k, chain in want.items()}
    assert any(len(chain) == 2 for chain in got.values())  # someone reached the goal
    summary = results.funnel_summary(
        by_goal.current.definition,
        results.funnel_units(site=site, version=by_goal.current, start=start, end=end),
        breakdown=None,
    )
    assert [s["label"] for s in summary["steps"]] == ["viewed /product/…", "reached Pro checkout"]

    # The goal's definition changes: the funnel's cached days key on it, and it follows.
    before = spec.funnel_compile(by_goal.current.definition).key
    free = {**PRO_CHECKOUT, "properties": [{"key": "plan", "op": "eq", "value": "free"}]}
    goal_save(site=site, name="Pro checkout", definition=free, now=timezone.now(), goal=goal)
    assert spec.funnel_compile(by_goal.current.definition).key != before
    spelled = defs.funnel_create(
        site=site, name="free", definition={"steps": [PRODUCT, free], "window": WINDOW}
    )
    assert chains(site, by_goal.current, start, end) == chains(site, spelled.current, start, end)


def test_a_goal_step_names_a_goal_of_the_site(site):
    other = Site.objects.create(name="Other")
    theirs = goal_save(site=other, name="Theirs", definition=PRO_CHECKOUT, now=timezone.now())
    for goal, reason in (
        (theirs.pk, "no such goal on this site"),
        (99_999, "no such goal on this site"),
        (None, "required for a goal step"),
        ("x", "A valid integer is required."),
    ):
        step = {"kind": "goal"} if goal is None else {"kind": "goal", "goal": goal}
        with pytest.raises(RangeError) as error:
            defs.funnel_create(site=site, name="f", definition={"steps": [PRODUCT, step]})
        assert str(error.value) == f"steps[1].goal: {reason}"
    # A goal is not defined by another goal.
    with pytest.raises(RangeError) as error:
        goal_save(
            site=other,
            name="Nested",
            definition={"kind": "goal", "goal": theirs.pk},
            now=timezone.now(),
        )
    assert error.value.field == "definition.kind"


def test_the_builder_offers_the_sites_goals(client, analyst, site):
    member(analyst, site, "admin")
    pages = f"/sites/{site.id}/funnels/"
    assert b'<option value="goal"' not in client.get(pages).content  # no goals yet
    goal = goal_save(
        site=site, name="Pro <checkout> ✓", definition=PRO_CHECKOUT, now=timezone.now()
    )
    shown = client.get(pages).content.decode()
    assert '<option value="goal"' in shown
    assert f'<option value="{goal.pk}">Pro &lt;checkout&gt; ✓</option>' in shown
    form = {
        "name": "To pro",
        "step-1-kind": "pageview",
        "step-1-value": "/product/",
        "step-1-match": "prefix",
        "step-2-kind": "goal",
        "step-2-value": "ignored",
        "step-2-goal": str(goal.pk),
        "count_by": "user",
        "window_unit": "session",
    }
    assert client.post(pages, form).status_code == 302
    funnel = site.funnels.get()
    step = funnel.current.definition["steps"][1]
    assert (step["kind"], step["goal"]) == ("goal", goal.pk)
    shown = client.get(f"{pages}{funnel.pk}/").content.decode()
    assert re.search(rf'<option value="{goal.pk}" selected>', shown)
    # Another site's goal posted by hand: the row says so.
    other = Site.objects.create(name="Other")
    theirs = goal_save(site=other, name="Theirs", definition=PRO_CHECKOUT, now=timezone.now())
    response = client.post(pages, {**form, "name": "x", "step-2-goal": str(theirs.pk)})
    assert response.status_code == 400
    assert "Step 2: choose one of the site&#x27;s goals" in response.content.decode()
