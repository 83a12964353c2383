"""Every Sankey column adds up: a property test through the collector and the seal.

Random visits (repeated pages, more pages than a step shows so "(other)" appears,
sessions across hour and day edges, parts arriving after their hours sealed) go through
/collect; the hours seal and roll up into days. Then, for ranges that begin and end in
the middle of sessions, every column of every Sankey (from the session start, from a
page, to a page) equals a walk over the raw events: each node's arrivals, the visits
that went on (the flows) and those that left, with arrivals = flows + left and nothing
negative. A path from a page counts when that page's view is in the range.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sessions_app.domain.aggregates import paths as stored
from sessions_app.domain.aggregates.path_grams import ENTRANCE, MAX_STEPS
from sessions_app.domain.aggregates.paths import FROM, OTHER, TO
from sessions_app.domain.ledger import sites
from sessions_app.features.paths import reads
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.ids import cassandra_order
from sessions_app.foundation.core.pagepaths import page_path
from tests.support.dataset import AGENTS, SHOP
from tests.support.events import event
from tests.support.hypothesis import examples
from tests.support.paths import anchored, brute, raw_rows, send
from tests.support.sealing import seal_everything

PAGES = [f"/p{i}" for i in range(12)]  # more than a step's MAX_NODES
SPAN_HOURS = 30  # visits begin in the 30 hours from BASE, across a day's edge

# A visit: (minutes after BASE, [(page, minutes since the previous view)], how many of
# its views arrive on time: the rest come after their hours sealed, newest first).
visit_st = st.tuples(
    st.one_of(
        st.integers(0, SPAN_HOURS * 60),
        st.integers(1, SPAN_HOURS - 1).flatmap(lambda h: st.integers(h * 60 - 50, h * 60 - 1)),
    ),
    st.lists(st.tuples(st.sampled_from(PAGES), st.integers(1, 29)), min_size=1, max_size=8),
    st.integers(0, 8),
)

range_st = st.tuples(st.integers(0, SPAN_HOURS + 2), st.integers(1, SPAN_HOURS + 4))
CROWD = [  # every page, sessions crossing the day's edge and the 23:00 hour's
    (24 * 60 - 20 - i * 3, [(PAGES[(i * 5 + k) % 12], 7 + i % 5) for k in range(7)], 5 - i % 3)
    for i in range(12)
]


def base_time() -> datetime:
    """Midnight two days ago (UTC): a fixed point whatever hour the suite runs."""
    return timebuckets.floor(datetime.now(UTC), "day") - timedelta(days=2)


def visit_events(base: datetime, n: int, visit) -> tuple[list[dict], list[dict]]:
    offset, views, on_time = visit
    ts = base + timedelta(minutes=offset, seconds=n)
    events = []
    for page, gap in views:
        events.append(event(ts, anon=f"h{n}", url=SHOP + page))
        ts += timedelta(minutes=gap)
    return events[:on_time], events[on_time:][::-1]


def walk(rows, *, side: str, anchor: str, start: datetime, end: datetime):
    """Each visit's steps away from the anchor in the raw rows: arrivals, flows and
    stops by (step, page); a path from a page starts at a view in [start, end) and goes
    on while its views are before `end`, a path to a page ends at a view in the range."""
    views: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        if row["type"] == "pageview" and not row["is_bot"]:
            views[row["session_id"]].append(row)
    arrived: Counter = Counter()
    flows: Counter = Counter()
    stops: Counter = Counter()

    def inside(row) -> bool:
        return start <= timebuckets.from_driver(row["ts"]) < end

    for seen in views.values():
        seen.sort(key=lambda r: cassandra_order(r["event_id"]))
        pages = [page_path(r["url"]) for r in seen]
        alongs = []
        for i, row in enumerate(seen):
            if not inside(row):
                continue
            if side == TO and pages[i] == anchor:
                alongs.append([*pages[: i + 1][::-1], ENTRANCE])
            elif side == FROM and (pages[i] == anchor or (anchor == ENTRANCE and i == 0)):
                later = [p for p, r in zip(pages[i:], seen[i:], strict=True) if inside(r)]
                alongs.append([ENTRANCE, *later] if anchor == ENTRANCE else later)
        for whole in alongs:
            along, steps = [], 0
            for page in whole:  # at most MAX_STEPS pages (and the entrance)
                steps += page != ENTRANCE
                if steps > MAX_STEPS:
                    break
                along.append(page)
            for k, page in enumerate(along):
                arrived[k, page] += 1
                if k + 1 < len(along):
                    flows[k, page, along[k + 1]] += 1
                else:
                    stops[k, page] += 1
    return arrived, flows, stops


def named(arrived: Counter, flows: Counter, stops: Counter, last: int):
    """The walk as the Sankey shows it: each step's MAX_NODES busiest pages, the rest
    as "(other)"; stops where the Sankey can tell them (before its last step)."""
    by_step: dict[int, Counter] = defaultdict(Counter)
    for (k, page), n in arrived.items():
        by_step[k][page] += n
    shown = {
        k: {p for p, _ in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[: reads.MAX_NODES]}
        for k, c in by_step.items()
    }

    def name(k: int, page: str) -> str:
        return page if page in shown.get(k, ()) else OTHER

    nodes: Counter = Counter()
    for (k, page), n in arrived.items():
        nodes[k, name(k, page)] += n
    links: Counter = Counter()
    for (k, a, b), n in flows.items():
        links[k, name(k, a), name(k + 1, b)] += n
    left: Counter = Counter()
    for (k, page), n in stops.items():
        if k < last:
            left[k, name(k, page)] += n
    return nodes, links, left


def check_sankey(site, rows, *, side: str, anchor: str, start: datetime, end: datetime) -> None:
    query = reads.PathQuery(start, end, side, anchor)
    row, _ = reads.range_row(site_id=site.id, query=query)
    want, _, _ = brute(rows, site, start, end, since=start if side == FROM else None)
    assert row.grams == anchored(want, side, anchor), (side, anchor, start, end)
    flows = reads.sankey(row, side=side, anchor=anchor)
    last = MAX_STEPS if anchor == ENTRANCE else MAX_STEPS - 1
    nodes = {(n["step"], n["page"]): n for n in flows["nodes"]}
    links = Counter({(x["step"], x["source"], x["target"]): x["count"] for x in flows["links"]})
    onward: Counter = Counter()
    for (k, source, _), n in links.items():
        onward[k, source] += n
    assert all(n > 0 for n in links.values())
    for key, node in nodes.items():  # every column adds up, and nothing is negative
        assert node["count"] >= 0
        if key[0] < last:
            assert node["stopped"] is not None and node["stopped"] >= 0, (side, anchor, node)
            assert node["stopped"] + onward[key] == node["count"], (side, anchor, node)
    if not row.grams:
        return
    got_nodes = Counter({key: n["count"] for key, n in nodes.items() if n["count"]})
    got_left = Counter({key: n["stopped"] for key, n in nodes.items() if n["stopped"]})
    want_nodes, want_links, want_left = named(
        *walk(rows, side=side, anchor=anchor, start=start, end=end), last
    )
    assert (got_nodes, links, got_left) == (want_nodes, want_links, want_left), (side, anchor)


@settings(
    max_examples=examples(6),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    visits=st.lists(visit_st, min_size=2, max_size=10),
    ranges=st.lists(range_st, min_size=1, max_size=2),
)
@example(visits=CROWD, ranges=[(0, SPAN_HOURS + 4), (24, SPAN_HOURS), (23, 25)])
def test_every_sankey_column_adds_up_to_its_arrivals(client, db, visits, ranges):
    site = sites.site_create(name="Paths", origins=[SHOP])
    base = base_time()
    late = []
    for n, visit in enumerate(visits):
        on_time, after = visit_events(base, n, visit)
        if on_time:
            send(client, site, on_time, AGENTS[n % 5])
        late.append((after, AGENTS[n % 5]))
    seal_everything(site, datetime.now(UTC))
    for events, agent in late:
        if events:
            send(client, site, events, agent)
    seal_everything(site, datetime.now(UTC))
    rows = raw_rows(site, base - timedelta(hours=1), base + timedelta(hours=SPAN_HOURS + 5))
    counted = Counter(page_path(r["url"]) for r in rows if r["type"] == "pageview")
    anchors = [(FROM, ENTRANCE)] + [
        (side, page) for page, _ in counted.most_common(3) for side in (FROM, TO)
    ]
    for first, hours in ranges:
        start = base + timedelta(hours=first)
        end = start + timedelta(hours=hours)
        for side, anchor in anchors:
            check_sankey(site, rows, side=side, anchor=anchor, start=start, end=end)


def test_a_capped_row_folds_rare_paths_into_other_keeping_each_step_whole(monkeypatch):
    row = stored.Row(
        {
            ("/b", "/c"): 5,
            (ENTRANCE, "/b", "/c"): 2,
            ("/a", "/c"): 1,
            (ENTRANCE, "/a", "/c"): 1,
        }
    )
    assert stored._folded(row, TO) == row  # under the cap: as it was
    monkeypatch.setattr(stored, "TOP_GRAMS", 3)
    folded = stored._folded(row, TO)
    # A tie puts the shorter path first: none is kept without the one it extends (the
    # entrance's ("(entrance)" sorts before "/a") was, and "/a" showed -1 left).
    assert folded.grams == {
        ("/b", "/c"): 5,
        (ENTRANCE, "/b", "/c"): 2,
        ("/a", "/c"): 1,
        (OTHER, "/a", "/c"): 1,
    }
    assert folded.dropped == 1
    row = stored.Row(
        {("/a",): 6, ("/a", "/b"): 3, ("/a", "/c"): 2, ("/a", "/b", "/d"): 1, ("/a", "/c", "/e"): 1}
    )
    assert stored._folded(row, FROM).grams == {
        ("/a",): 6,
        ("/a", "/b"): 3,
        ("/a", "/c"): 2,
        ("/a", "/b", OTHER): 1,
        ("/a", "/c", OTHER): 1,
    }
