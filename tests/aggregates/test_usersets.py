"""An hour's user sets from raw rows alone (usersets.rows_sets, what a goal's backfill and
the cohorts' cold read run when no tally is there to share) equal the seal's, counted from
the hour's whole tally (usersets.hour_sets(tally.tally(rows)))."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sessions_app.domain.aggregates import tally, usersets
from tests.support.hypothesis import examples

USERS = st.sampled_from(["u1", "u2", "ü 页", "", "goal:1", "u'\"<x>"])
NAMES = st.one_of(
    st.none(),
    st.just(""),
    st.sampled_from(["signup", "goal:2", "$pageleave", "buy"]),
    st.text(max_size=6),
)
ROWS = st.lists(
    st.fixed_dictionaries(
        {
            "user_key": USERS,
            "type": st.sampled_from(["pageview", "click", "custom", "identify"]),
            "name": NAMES,
            "is_bot": st.sampled_from([None, False, True]),
        }
    ),
    max_size=40,
)


def brute(rows, reached):
    """Active: a user with a human row; an event key's set: its active users (a custom
    event by its name, else its type; names starting "goal:" are no goal); a goal's: its
    users who were active."""
    active = {r["user_key"] for r in rows if not r["is_bot"]}
    members = {usersets.ACTIVE: active}
    for r in rows:
        key = (r["name"] or r["type"]) if r["type"] == "custom" else r["type"]
        if r["user_key"] in active and not key.startswith(usersets.GOAL):
            members.setdefault(key, set()).add(r["user_key"])
    members.update((usersets.goal_set(g), users & active) for g, users in reached.items())
    return usersets.KeySets(members, True)


@settings(max_examples=examples(300), deadline=None)
@given(rows=ROWS, reached=st.dictionaries(st.integers(1, 4), st.sets(USERS, max_size=3)))
def test_rows_sets_equal_the_brute_force_and_the_sets_of_the_whole_tally(rows, reached):
    light = usersets.rows_sets(rows, reached)
    assert light == brute(rows, reached)
    # A click's element and a page's URL are only what the whole tally needs besides.
    full = [{**r, "url": "https://a.example/", "element": None} for r in rows]
    assert light == usersets.hour_sets(tally.tally(full), reached)


def test_past_max_names_both_keep_the_same_names_and_say_they_cut():
    rows = [
        {
            "user_key": f"u{n}",
            "type": "custom",
            "name": f"e{n % (usersets.MAX_NAMES + 5)}",
            "is_bot": False,
        }
        for n in range(400)
    ]
    light = usersets.rows_sets(rows)
    assert not light.complete and len(light.members) == usersets.MAX_NAMES + 1
    full = [{**r, "url": None, "element": None} for r in rows]
    assert light == usersets.hour_sets(tally.tally(full))
