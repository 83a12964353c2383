"""The dashboard's filtered answer (features/analysis/dashboard.py,
features/analysis/session_filter.py) against a brute force over what the raw events of the same
sessions say: Hypothesis-drawn filters, periods, comparisons and whole-hour time zones; the
partition budget; the latest sessions."""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessions_app.domain.aggregates import breakdowns
from sessions_app.domain.ledger import sites
from sessions_app.features.analysis import dashboard, explorer, session_filter
from sessions_app.features.web.periods import Period, period_param, site_zone
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.core.ids import cassandra_order, uuid_time
from tests.support.dataset import sessions_send, sessions_truth
from tests.support.explorer import TEXT, candidates, matches
from tests.support.hypothesis import examples
from tests.support.shared import World, built_once, restored, shop_site

pytestmark = [
    pytest.mark.django_db(databases=["default", "cassandra"]),
    pytest.mark.xdist_group("dashboard"),  # one worker builds the sessions once
]

ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Asia/Tokyo"]  # whole-hour offsets
PRESETS = ["today", "yesterday", "24h", "7d", "30d", "mtd"]


@pytest.fixture(scope="module")
def built(django_db_setup, django_db_blocker) -> Iterator[World[tuple[Any, list]]]:
    """The sessions the tests asking for them read, built once (tests/support/shared.py)."""
    yield from built_once(django_db_blocker, _sessions)


@pytest.fixture
def site(built, db):
    """The sessions' site (the empty site's test makes one of its own)."""
    return restored(built)[0]


@pytest.fixture
def sessions(built, site) -> list:
    return built.value[1]


def _sessions() -> tuple[Any, list]:
    site = shop_site()
    now = timezone.now().replace(microsecond=0)
    sent = sessions_send(Client(), site, now=now, count=90, days=4, seed=37)
    truth = sessions_truth(site, sent)
    assert len(truth) == 90
    return site, truth


def chosen(truth, start: datetime, end: datetime, filters: dict[str, Any]) -> list[dict]:
    """The brute force: the sessions whose first event is in [start, end) that match
    (bots only when the `bot` filter asks)."""
    return [
        s
        for s in truth
        if start <= s["sent_started"] < end
        and matches(s, filters)
        and ("bot" in filters or not s["is_bot"])
    ]


def kpis_of(sessions: list[dict]) -> session_filter.Kpis:
    durations = [s["sent_duration"] for s in sessions]
    return session_filter.Kpis(
        visitors=len({s["user_key"] for s in sessions}),
        visits=len(sessions),
        pageviews=sum(s["sent_pageviews"] for s in sessions),
        bounces=sum(1 for s in sessions if s["sent_pageviews"] <= 1),
        duration_seconds_sum=float(sum(durations)),
        duration_median=float(statistics.median_low(durations)) if durations else None,
        conversions=sum(1 for s in sessions if s["sent_converted"]),
        converting_visitors=len({s["user_key"] for s in sessions if s["sent_converted"]}),
    )


def same_kpis(found: session_filter.Kpis, want: session_filter.Kpis, *, sealed: bool) -> bool:
    """Rows answer exactly; the sealed counts of one value estimate two KPIs as the
    unfiltered dashboard does: the median within its sketch's 2.5% (exact under 21 s),
    the visitors within the HyperLogLog's error."""
    if not sealed:
        return found == want
    exact = ("visits", "pageviews", "bounces", "duration_seconds_sum", "conversions")
    if any(getattr(found, key) != getattr(want, key) for key in exact):
        return False
    median, got = want.duration_median, found.duration_median
    if median is None or median < 21:
        close = got == median
    else:
        close = got is not None and abs(got - median) <= 0.025 * median
    return close and all(
        abs(getattr(found, key) - getattr(want, key)) <= max(1, 0.05 * getattr(want, key))
        for key in ("visitors", "converting_visitors")
    )


def as_params(filters: dict[str, Any]) -> dict[str, str]:
    return {
        k: ("true" if v else "false") if isinstance(v, bool) else str(v) for k, v in filters.items()
    }


def check_answer(site, truth, period: Period, filters: dict[str, Any]) -> int:
    """Compare every number of the filtered answer with the brute force; return the visits."""
    strings = dashboard.dashboard_filters(as_params(filters))
    answer = dashboard.dashboard_filtered(site=site, period=period, filters=strings)
    assert not answer.counted.cut
    want = chosen(truth, period.start, period.elapsed_end, filters)
    assert same_kpis(answer.kpis, kpis_of(want), sealed=answer.sealed), filters
    previous = period.comparison()
    if previous is None:
        assert answer.previous is None and answer.chart["comparison"] is None
    else:
        old = chosen(truth, previous.start, previous.elapsed_end, filters)
        assert answer.previous is not None
        assert same_kpis(answer.previous, kpis_of(old), sealed=answer.sealed)
        assert sum(v or 0 for v in answer.chart["comparison"]["series"]["visits"]) <= len(old)
    series = answer.chart["series"]
    assert sum(v or 0 for v in series["visits"]) == len(want)
    assert sum(v or 0 for v in series["pageviews"]) == answer.kpis.pageviews
    assert len(answer.chart["buckets"]) == len(answer.chart["states"]) == len(series["visits"])
    for name, column in TEXT.items():
        if name not in breakdowns.names():
            continue
        rows = {r["value"]: r for r in answer.breakdowns[name]}
        assert sum(r["sessions"] for r in rows.values()) == len(want)
        for value, row in rows.items():
            if value in (breakdowns.OTHER,):
                continue
            mine = [s for s in want if (s[column] or breakdowns.NONE) == value]
            assert row["sessions"] == len(mine), (name, value)
            assert row["users"] == len({s["user_key"] for s in mine})
            assert row["conversions"] == sum(1 for s in mine if s["sent_converted"])
    return len(want)


@settings(
    max_examples=examples(25),
    print_blob=False,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_filtered_numbers_match_a_brute_force_of_the_raw_events(site, sessions, data):
    truth = sessions
    values = candidates(truth)
    names = data.draw(
        st.lists(st.sampled_from(sorted(values)), min_size=1, max_size=3, unique=True)
    )
    filters = {n: data.draw(st.sampled_from(values[n]), label=n) for n in names}
    for low, high in (("duration_min", "duration_max"), ("events_min", "events_max")):
        if low in filters and high in filters and filters[low] > filters[high]:
            filters[low], filters[high] = filters[high], filters[low]
    now = timezone.now()
    params = {
        "period": data.draw(st.sampled_from([*PRESETS, "custom"])),
        "compare": data.draw(st.sampled_from(["off", "previous", "year"])),
    }
    if params["period"] == "custom":  # whole days of the last week, as the calendar picks
        last = data.draw(st.integers(0, 6), label="to (days ago)")
        first = data.draw(st.integers(last, 6), label="from (days ago)")
        params["from"] = (now - timedelta(days=first)).date().isoformat()
        params["to"] = (now - timedelta(days=last)).date().isoformat()
    period = period_param(params, zone=site_zone(data.draw(st.sampled_from(ZONES))), now=now)
    check_answer(site, truth, period, filters)


def test_a_single_broad_filter_over_the_whole_dataset_counts_every_matching_session(site, sessions):
    truth = sessions
    period = period_param(
        {"period": "7d", "compare": "previous"}, zone=site_zone("Europe/Berlin"), now=timezone.now()
    )
    device = next(s["device"] for s in truth if not s["is_bot"])
    assert check_answer(site, truth, period, {"device": device}) > 5
    one = dashboard.dashboard_filtered(site=site, period=period, filters={"device": device})
    assert one.sealed  # one kept breakdown value: its KPIs and chart from the sealed counts
    two = dashboard.dashboard_filtered(
        site=site, period=period, filters={"device": device, "bot": "false"}
    )
    assert not two.sealed and same_kpis(one.kpis, two.kpis, sealed=True)
    assert check_answer(site, truth, period, {"bot": True}) > 0  # bots only when asked
    assert check_answer(site, truth, period, {"bot": False, "converted": True}) > 0


def test_the_partition_budget_cuts_to_the_latest_days_and_says_so(site, sessions, monkeypatch):
    truth = sessions
    monkeypatch.setattr(session_filter, "MAX_PARTITIONS", 4)  # two days of two shards
    period = period_param({"period": "7d"}, zone=site_zone("UTC"), now=timezone.now())
    answer = dashboard.dashboard_filtered(site=site, period=period, filters={"bot": "false"})
    counted = answer.counted
    assert counted.cut and answer.cut_days == 2 and counted.partitions_read == 4
    assert counted.days_total == 7 and counted.since > period.start
    want = chosen(truth, counted.since, period.elapsed_end, {"bot": False})
    assert answer.kpis == kpis_of(want) and 0 < len(want) < len(truth)
    assert "cut" in answer.chart["states"] and answer.chart["states"][-1] == "live"
    first_counted = answer.chart["states"].index("live")
    assert all(v is None for v in answer.chart["series"]["visits"][:first_counted])


def test_the_latest_sessions_follow_the_period_and_the_filters_newest_first(site, sessions):
    truth = sessions
    now = timezone.now()
    period = period_param({"period": "yesterday"}, zone=site_zone("UTC"), now=now)
    for filters in ({}, {"bot": True}, {"device": "mobile"}):
        page = dashboard.latest_sessions(site_id=site.id, period=period, filters=as_params(filters))
        asked = {"bot": False, **filters}  # bots only when the filter asks for them
        want = [
            s
            for s in truth
            if period.start <= uuid_time(s["session_id"]) < period.end and matches(s, asked)
        ]
        want.sort(key=lambda s: cassandra_order(s["session_id"]), reverse=True)
        got = [s["session_id"] for s in page.sessions]
        assert got == [s["session_id"] for s in want][: dashboard.LATEST], filters
        by_id = {s["session_id"]: s for s in truth}
        for session in page.sessions:  # the URLs as stored, query and all
            assert session["entry_url"] == by_id[session["session_id"]]["entry_url"]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"converted": "maybe"}, "converted"),
        ({"duration_min": "ten"}, "duration_min"),
        ({"events_min": "5", "events_max": "2"}, "events_max"),
        ({"country": "x" * 600}, "country"),
    ],
)
def test_a_bad_filter_names_its_field(params, field):
    with pytest.raises(RangeError) as caught:
        dashboard.dashboard_filters(params)
    assert caught.value.field == field


def test_filters_are_read_as_the_explorer_reads_them():
    got = dashboard.dashboard_filters(
        {
            "period": "30d",
            "entry": "https://shop.example/pricing?utm_source=x",
            "bot": "no",
            "country": "DE",
            "metric": "visits",
            "unknown": "1",
            "device": "",
        }
    )
    assert got == {"country": "DE", "entry": "/pricing", "bot": "false"}
    assert list(got) == [n for n in explorer.filter_names() if n in got]
    texts = [c.text for c in dashboard.chips(got)]
    assert texts == ["Country is DE", "Entry page is /pricing", "Bot: no"]


def test_a_fold_a_missing_value_or_a_too_long_one_is_not_a_filter():
    assert dashboard.filterable("country", "DE")
    assert not dashboard.filterable("country", breakdowns.OTHER)
    assert not dashboard.filterable("campaign", breakdowns.NONE)
    assert not dashboard.filterable("campaign", "x" * (explorer.MAX_TEXT + 1))
    assert not dashboard.filterable("nothing", "x")
    assert dashboard.filterable("page", "/pricing")


def test_an_empty_site_answers_zeros_and_no_median(db):
    site = sites.site_create(name="Empty", origins=["https://shop.example"])
    period = period_param({"period": "today"}, zone=site_zone("Asia/Tokyo"), now=timezone.now())
    answer = dashboard.dashboard_filtered(site=site, period=period, filters={"country": "DE"})
    assert answer.kpis == session_filter.Kpis() and answer.kpis.bounce_rate is None
    assert answer.chart["grain"] == "hour" and len(answer.chart["buckets"]) == 24
    assert all(v is None or v == 0 for v in answer.chart["series"]["visits"])
