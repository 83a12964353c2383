"""The KPI cards (domain/aggregates/kpis.py): rates, formats, and which change is good news."""

from __future__ import annotations

from sessions_app.domain.aggregates.kpis import (
    CHARTED,
    METRICS,
    Kpis,
    kpi_cards,
    metric_param,
)


def test_rates_come_from_the_counters_and_are_none_without_visits() -> None:
    kpis = Kpis(
        visitors=8,
        visits=10,
        pageviews=25,
        bounces=4,
        duration_seconds_sum=600.0,
        duration_median=42.0,
        conversions=2,
        converting_visitors=2,
    )
    assert (kpis.views_per_visit, kpis.bounce_rate, kpis.duration_mean, kpis.conversion_rate) == (
        2.5,
        0.4,
        60.0,
        0.25,  # two of eight unique visitors reached a goal
    )
    empty = Kpis()
    assert (empty.views_per_visit, empty.bounce_rate, empty.duration_mean) == (None, None, None)


def test_cards_show_each_kpi_with_its_change_and_a_falling_bounce_rate_is_good() -> None:
    now = Kpis(
        visitors=1200,
        visits=1500,
        pageviews=3000,
        bounces=300,
        duration_seconds_sum=1500 * 75.0,
        duration_median=65.0,
        conversions=30,
        converting_visitors=36,
    )
    before = Kpis(
        visitors=1000,
        visits=1000,
        pageviews=3000,
        bounces=400,
        duration_seconds_sum=75000.0,
        duration_median=65.0,
        conversions=10,
        converting_visitors=20,
    )
    cards = {c["key"]: c for c in kpi_cards(now, before, conversion="Purchase")}
    assert list(cards) == list(METRICS)
    assert cards["visitors"]["value_text"] == "1,200"
    assert (cards["visitors"]["change_text"], cards["visitors"]["direction"]) == ("+20%", "up")
    assert cards["visitors"]["good"] is True
    assert cards["pageviews"]["direction"] is None and cards["pageviews"]["good"] is None
    assert cards["views_per_visit"]["direction"] == "down" and not cards["views_per_visit"]["good"]
    assert cards["bounce_rate"]["value_text"] == "20.0%"
    assert cards["bounce_rate"]["change_text"] == "-20.0 pp"
    assert cards["bounce_rate"]["direction"] == "down" and cards["bounce_rate"]["good"] is True
    assert cards["duration_median"]["value_text"] == "1m 05s"
    assert cards["duration_median"]["mean_text"] == "1m 15s"
    assert cards["conversion_rate"]["change_text"] == "+1.0 pp"
    assert cards["conversion_rate"]["goal"] == "Purchase"  # the card says which goal


def test_a_site_without_goals_has_no_conversion_card_nor_chart_metric() -> None:
    cards = kpi_cards(Kpis(visits=3, conversions=1), None, conversion=None)
    assert "conversion_rate" not in {c["key"] for c in cards}
    # its card leads to the goal table: the chart draws the others
    assert list(CHARTED) == [k for k in METRICS if k != "conversion_rate"]


def test_the_conversion_rate_is_who_reached_a_goal_of_the_unique_visitors() -> None:
    assert Kpis(visitors=40, visits=70, converting_visitors=6).conversion_rate == 0.15
    assert Kpis(visitors=40, visits=70, conversions=9).conversion_rate is None  # not counted
    assert Kpis(visitors=3, converting_visitors=4).conversion_rate == 1.0  # estimates capped


def test_without_a_comparison_cards_have_no_change() -> None:
    cards = kpi_cards(Kpis(visits=3, pageviews=3), None, conversion="any goal")
    assert all(c["change_text"] == "" and c["direction"] is None for c in cards)
    assert {c["key"]: c["value_text"] for c in cards}["duration_median"] == "—"


def test_an_empty_comparison_says_no_earlier_data_not_no_change() -> None:
    """30 days against a month without visits: no card claims a change."""
    cards = kpi_cards(
        Kpis(visitors=4, visits=5, pageviews=9, bounces=2), Kpis(), conversion="any goal"
    )
    assert {c["change_text"] for c in cards} == {"no earlier data"}
    assert all(c["direction"] is None and c["good"] is None for c in cards)


def test_a_period_without_visits_has_no_rates_to_compare() -> None:
    cards = {
        c["key"]: c
        for c in kpi_cards(Kpis(), Kpis(visitors=4, visits=5, pageviews=9), conversion=None)
    }
    assert cards["visits"]["change_text"] == "-100%" and cards["visits"]["direction"] == "down"
    assert cards["bounce_rate"]["change_text"] == cards["duration_median"]["change_text"]
    assert cards["bounce_rate"]["change_text"] == "no data"


def test_an_unchanged_kpi_says_so_with_its_figure() -> None:
    same = Kpis(visitors=4, visits=5, pageviews=9, bounces=2)
    cards = {c["key"]: c for c in kpi_cards(same, same, conversion=None)}
    assert (cards["visits"]["change_text"], cards["visits"]["direction"]) == ("+0%", None)
    assert cards["bounce_rate"]["change_text"] == "+0.0 pp"


def test_an_unknown_metric_falls_back_to_visitors() -> None:
    assert metric_param("bounce_rate") == "bounce_rate"
    assert metric_param("nope") == metric_param(None) == "visitors"
