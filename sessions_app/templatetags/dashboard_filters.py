"""Template tags of the dashboard's filters (features/analysis/dashboard.py): the links that add
or drop a filter, what a link to another page carries, and the chips of a page that cannot
apply the filters."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django import template

from sessions_app.features.analysis import dashboard, explorer
from sessions_app.features.web import periods
from sessions_app.foundation.core.bounds import RangeError

register = template.Library()


def _params(context: template.Context) -> dict[str, str]:
    request = context.get("request")
    return {k: str(v) for k, v in request.GET.items()} if request is not None else {}


@register.simple_tag(takes_context=True)
def with_filter(context: template.Context, name: str, value: Any) -> str:
    """Return this page's link with the filter name=value added ("?period=7d&country=DE"),
    or "" when the value cannot be a filter (a fold of values, none, too long)."""
    if not dashboard.filterable(name, value):
        return ""
    params = {k: v for k, v in _params(context).items() if k != "cursor"}
    params[name] = value
    return "?" + urlencode(params)


@register.simple_tag(takes_context=True)
def without_filter(context: template.Context, name: str = "") -> str:
    """Return this page's link without the filter `name` (without every filter if none)."""
    dropped = {name} if name else set(explorer.filter_names())
    params = {k: v for k, v in _params(context).items() if k not in dropped and k != "cursor"}
    return "?" + urlencode(params)


@register.simple_tag(takes_context=True)
def carried(context: template.Context) -> str:
    """Return the period and filter parameters of this page's URL, URL-encoded: what a
    link to another page of the site carries."""
    names = {*periods.PARAMS, *explorer.filter_names()}
    return urlencode({k: v for k, v in _params(context).items() if k in names})


@register.simple_tag(takes_context=True)
def filter_chips(context: template.Context) -> list[dashboard.Chip]:
    """Return the dashboard filters in this page's URL as chips (none if one is bad), for
    a page that cannot apply them to say so."""
    try:
        return dashboard.chips(dashboard.dashboard_filters(_params(context)))
    except RangeError:
        return []
