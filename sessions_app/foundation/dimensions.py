"""The dimensions a session is described by: one `Dimension` entry each, in `DIMENSIONS`.

An entry names the dimension (its URL parameter, API key and breakdown name), titles it,
says which column stores it and how ingest derives it, and whether it breaks down (the
report's breakdowns), filters (the session explorer) and splits funnels. Everything else
is derived from the list, read when used: the column lists of the user_sessions and
site_sessions statements, the explorer's filters and their indexes, the breakdowns and
their titles, the funnels' breakdowns, the API schema's parameters and the forms.

Adding a dimension is one entry here (`sync_cassandra` adds its column; a filtering one
derived from the summary, like the entry page, also needs `manage.py cassandra_indexes`
for its index, the others are looked up through site_sessions' terms) plus, if no source
below yields it, its derivation in domain/ingest/enrich.py.
`tests/tables/test_dimensions.py` adds one in a test and finds it in every place.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

# How ingest derives a dimension: (where from, which attribute of it).
AGENT = "agent"  # enrich.Agent of the session's first browser (its user agent)
VISITOR = "visitor"  # the visitor (sessionizer.Visit); the first value known is kept
LANDING = "landing"  # enrich.Acquisition of the session's landing event (the earliest one)
LAYOUT = "layout"  # the landing event's viewport class (enrich.viewport_class), when known
SUMMARY = "summary"  # a URL of the session's summary, as its path (entry and exit pages)

# Where a statement template lists dimension columns, and their bind markers (`statement`).
MARK = "<dimensions>"
MARKERS = "<dimension markers>"

DEVICES = ("desktop", "mobile", "tablet", "bot")
MEDIA = ("direct", "search", "social", "email", "referral", "internal", "paid", "cpc")


@dataclass(frozen=True)
class Dimension:
    """One dimension; `example`, `width` and `choices` shape its field in the explorer's
    form (a choice list makes it a select)."""

    name: str
    title: str  # a breakdown's heading: "Countries"
    label: str  # a form field's: "Country"
    column: str
    derived: tuple[str, str]  # (AGENT | VISITOR | LANDING | LAYOUT | SUMMARY, attribute)
    breaks_down: bool = False
    filters: bool = False
    splits_funnels: bool = False
    example: str = ""
    width: int = 10
    choices: tuple[str, ...] = ()
    note: str = ""  # what a breakdown counts, where another report counts it otherwise

    @property
    def is_path(self) -> bool:
        """A page path (a full URL given as a filter is reduced to its path)."""
        return self.derived[0] == SUMMARY


# In the order breakdowns, funnel breakdowns, the explorer and the API show them.
DIMENSIONS: tuple[Dimension, ...] = (
    Dimension("source", "Sources", "Source", "source", (LANDING, "source"),
              breaks_down=True, filters=True, splits_funnels=True, example="Google"),
    Dimension("medium", "Media", "Medium", "medium", (LANDING, "medium"),
              breaks_down=True, filters=True, splits_funnels=True, choices=MEDIA),
    Dimension("campaign", "Campaigns", "Campaign", "campaign", (LANDING, "campaign"),
              breaks_down=True, filters=True, splits_funnels=True),
    Dimension("term", "Terms", "Term", "term", (LANDING, "term")),
    Dimension("content", "Contents", "Content", "content", (LANDING, "content")),
    Dimension("country", "Countries", "Country", "country", (VISITOR, "country"),
              breaks_down=True, filters=True, splits_funnels=True, example="DE", width=4),
    Dimension("language", "Languages", "Language", "language", (VISITOR, "language")),
    Dimension("device", "Devices", "Device", "device", (AGENT, "device"),
              breaks_down=True, filters=True, splits_funnels=True, choices=DEVICES),
    Dimension("browser", "Browsers", "Browser", "browser", (AGENT, "browser"),
              breaks_down=True, filters=True, splits_funnels=True, example="Safari"),
    Dimension("browser_version", "Browser versions", "Browser version", "browser_version",
              (AGENT, "browser_version")),
    Dimension("os", "Operating systems", "OS", "os", (AGENT, "os"),
              breaks_down=True, filters=True, example="iOS", width=8),
    Dimension("os_version", "OS versions", "OS version", "os_version", (AGENT, "os_version")),
    Dimension("viewport", "Viewports", "Viewport", "viewport", (LAYOUT, "viewport")),
    Dimension("entry", "Entry pages", "Entry page", "entry_path", (SUMMARY, "entry_url"),
              breaks_down=True, filters=True, example="/",
              note="the page of each session's first event, a login or a click included; "
                   "Paths count an entrance at its first page view, and no session without one"),
    Dimension("exit", "Exit pages", "Exit page", "exit_path", (SUMMARY, "exit_url"),
              breaks_down=True, filters=True,
              note="the page of each session's last event"),
)  # fmt: skip


def enriched() -> tuple[Dimension, ...]:
    """The dimensions ingest derives from the visitor and the landing event: a session's
    state and summary carry them, user_sessions stores them."""
    return tuple(d for d in DIMENSIONS if d.derived[0] != SUMMARY)


def by_derivation(source: str) -> tuple[Dimension, ...]:
    return tuple(d for d in DIMENSIONS if d.derived[0] == source)


def explored() -> tuple[Dimension, ...]:
    """The dimensions site_sessions stores: those that break down, filter or split funnels."""
    return tuple(d for d in DIMENSIONS if d.breaks_down or d.filters or d.splits_funnels)


def breakdowns() -> tuple[Dimension, ...]:
    return tuple(d for d in DIMENSIONS if d.breaks_down)


def filters() -> tuple[Dimension, ...]:
    return tuple(d for d in DIMENSIONS if d.filters)


def funnel_splits() -> tuple[Dimension, ...]:
    return tuple(d for d in DIMENSIONS if d.splits_funnels)


def named(name: str) -> Dimension:
    """The dimension of this name; KeyError if there is none."""
    for dimension in DIMENSIONS:
        if dimension.name == name:
            return dimension
    raise KeyError(name)


def statement(template: str, chosen: Iterable[Dimension]) -> str:
    """The template with the chosen dimensions' columns where it says MARK, one
    "column = ?" each where it says MARK + " = ?", one bind marker each where it says
    MARKERS."""
    names = [d.column for d in chosen]
    return (
        template.replace(f"{MARK} = ?", ", ".join(f"{n} = ?" for n in names))
        .replace(MARKERS, ", ".join("?" for _ in names))
        .replace(MARK, ", ".join(names))
    )
