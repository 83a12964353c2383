"""The cohorts' reader: the stored user sets of one site's periods, each bucket read once
(the reports of features/cohorts/reads.py are made of them; docs/retention.md).

A period's set is its month row, else the union of its weeks' and days' rows, else (a day
not rolled up yet, within LIVE_DAYS) of its sealed hours: an hour not sealed yet is not in
any set. "Before" a period means the LOOKBACK_MONTHS months before it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime, timedelta
from functools import cached_property

from django.db.models import Min
from pyroaring import BitMap

from sessions_app.domain.aggregates import usersets
from sessions_app.domain.aggregates.usersets import ACTIVE, Sets
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.models import BucketState

LOOKBACK_MONTHS = 24
LIVE_DAYS = 3  # a day this recent without a day row is read from its sealed hours


Piece = tuple[str, datetime]  # a stored bucket: (granularity, start)
ReaderKey = tuple[uuid.UUID, tuple[str, ...], datetime]

# The readers of one page's reports (`shared_reads`), by site, event names and instant.
_shared: ContextVar[dict[ReaderKey, Reader] | None] = ContextVar("cohort_readers", default=None)


@contextmanager
def shared_reads() -> Iterator[None]:
    """Within the block, reports that ask `reader_for` the same site, names and instant
    share one Reader: the cohorts page's triangle, lifecycle and stickiness read each
    bucket once between them (three times before). The readers end with the block."""
    token = _shared.set({})
    try:
        yield
    finally:
        _shared.reset(token)


def reader_for(site_id: uuid.UUID, names: list[str], now: datetime) -> Reader:
    """The block's Reader of these sets (`shared_reads`), else a Reader of its own."""
    readers = _shared.get()
    if readers is None:
        return Reader(site_id, names, now)
    key = (site_id, tuple(sorted(set(names) - {ACTIVE})), now)
    found = readers.get(key)
    if found is None:
        found = readers[key] = Reader(site_id, names, now)
    return found


class Reader:
    """The sets of one site's periods, each bucket read once: a report names every row it
    will use first (`prefetch`: one concurrent round), then reads what was missing (the
    days under a week or month not stored, the hours of recent days not rolled up)."""

    def __init__(self, site_id: uuid.UUID, names: list[str], now: datetime) -> None:
        self.site_id, self.names, self.now = site_id, sorted(set(names) - {ACTIVE}), now
        self.incomplete: set[datetime] = set()  # periods whose event sets were cut
        self.seen_names: set[str] = set()
        self.loaded: dict[Piece, Sets | None] = {}

    @cached_property
    def first_bucket(self) -> datetime | None:
        """The site's earliest bucket with a state (None: none yet). Every stored set was
        sealed or rolled up from a bucket with a state (a week row from its days), and no
        state is ever deleted but with its site: a row ending at or before this one does
        not exist, and is not asked for (a young site's 24 months of lookback are not 720
        empty day reads)."""
        found = BucketState.objects.filter(site_id=self.site_id).aggregate(at=Min("bucket"))
        first: datetime | None = found["at"]
        return first

    def _before_first(self, piece: Piece) -> bool:
        """Whether `piece` ends at or before the site's first bucket: it holds no set."""
        first = self.first_bucket
        return first is None or timebuckets.next_start(piece[1], piece[0]) <= first

    def _read(self, buckets: list[Piece]) -> dict[Piece, Sets]:
        wanted = [b for b in dict.fromkeys(buckets) if b not in self.loaded]
        for piece in [p for p in wanted if self._before_first(p)]:
            self.loaded[piece] = None
        wanted = [p for p in wanted if p not in self.loaded]
        if wanted:
            found = usersets.sets_read_many(site_id=self.site_id, buckets=wanted, names=self.names)
            for key in wanted:
                sets = self.loaded[key] = found.get(key)
                if sets is None:
                    continue
                self.seen_names |= set(sets.members)
                # A cut week is not read for event sets (its days are): not flagged.
                if not sets.complete and self.names and key[0] != "week":
                    self.incomplete.add(key[1])
        return {b: sets for b in buckets if (sets := self.loaded.get(b)) is not None}

    def prefetch(self, starts: list[datetime], unit: str, before: datetime | None) -> None:
        """Read in one round every row `periods(starts, unit)` and `seen_before(before)`
        will use when stored."""
        pieces = [p for s in starts for p in self._pieces(s, unit)]
        self._read(pieces + (self._before(before) if before else []))

    def days(self, start: datetime, end: datetime) -> dict[datetime, Sets]:
        """Each day's sets in [start, end) (recent days not rolled up yet: their hours)."""
        return self._days(timebuckets.buckets_between(start, end, "day"))

    def _days(self, days: list[datetime]) -> dict[datetime, Sets]:
        found = {b: s for (_, b), s in self._read([("day", d) for d in days]).items()}
        recent = [d for d in days if d not in found and d >= self.now - timedelta(days=LIVE_DAYS)]
        hours = [
            ("hour", h)
            for d in recent
            for h in timebuckets.buckets_between(d, timebuckets.next_start(d, "day"), "hour")
        ]
        by_day: dict[datetime, list[Sets]] = {}
        for (_, hour), sets in self._read(hours).items():
            by_day.setdefault(timebuckets.floor(hour, "day"), []).append(sets)
        found.update((d, usersets.sets_merge(parts)) for d, parts in by_day.items())
        return found

    def _span(self, start: datetime, end: datetime) -> list[Piece]:
        """[start, end) as stored rows: its whole weeks that ended LIVE_DAYS ago (their
        rows hold every day row: nothing of them is read from hours), else days."""
        settled = self.now - timedelta(days=LIVE_DAYS)
        pieces: list[Piece] = []
        day = start
        while day < end:
            week_end = timebuckets.next_start(day, "week")
            whole = timebuckets.floor(day, "week") == day and week_end <= min(end, settled)
            pieces.append(("week", day) if whole else ("day", day))
            day = week_end if whole else day + timedelta(days=1)
        return pieces

    def _pieces(self, start: datetime, unit: str) -> list[Piece]:
        """The rows a period is read from: a month's row, else its weeks and days."""
        if unit == "month":
            return [("month", start)]
        return self._span(start, timebuckets.next_start(start, unit))

    def _before(self, start: datetime) -> list[Piece]:
        """The rows of the LOOKBACK_MONTHS months before `start`'s month, then its days
        (and weeks) up to `start`."""
        month = timebuckets.floor(start, "month")
        first = month
        for _ in range(LOOKBACK_MONTHS):
            first = timebuckets.floor(first - timedelta(days=1), "month")
        months = timebuckets.buckets_between(first, month, "month")
        return [("month", m) for m in months] + self._span(month, start)

    def _usable(self, piece: Piece, sets: Sets | None) -> bool:
        """A stored week stands for its days unless event sets are asked for and it cut
        some (then its days, as the days' union would keep them)."""
        return sets is not None and (piece[0] != "week" or sets.complete or not self.names)

    def _resolve(self, groups: list[list[Piece]]) -> list[list[Sets]]:
        """Each group's sets: its stored rows, and the days (or hours) of those missing."""
        found = self._read([p for group in groups for p in group])
        under: dict[Piece, list[datetime]] = {}
        for piece in (p for group in groups for p in group):
            if piece[0] != "day" and not self._usable(piece, found.get(piece)):
                # A row before the site's first bucket has no days to read instead either.
                end = timebuckets.next_start(piece[1], piece[0])
                before = self._before_first(piece)
                under[piece] = [] if before else timebuckets.buckets_between(piece[1], end, "day")
        wanted = {p[1] for group in groups for p in group if p[0] == "day"}
        days = self._days(sorted(wanted.union(*under.values())))

        def sets_of(piece: Piece) -> list[Sets]:
            if piece[0] == "day" or piece in under:
                return [days[d] for d in under.get(piece, [piece[1]]) if d in days]
            return [found[piece]]

        return [[s for piece in group for s in sets_of(piece)] for group in groups]

    def periods(self, starts: list[datetime], unit: str) -> list[Sets]:
        """The sets of each period (a month's row, else its weeks' and days')."""
        groups = self._resolve([self._pieces(s, unit) for s in starts])
        return [usersets.sets_merge(g) if len(g) != 1 else g[0] for g in groups]

    def seen_before(self, start: datetime, name: str) -> BitMap:
        """Everyone in `name`'s sets of the LOOKBACK_MONTHS months before `start`."""
        (found,) = self._resolve([self._before(start)])
        return BitMap.union(BitMap(), *(s.users(name) for s in found))
