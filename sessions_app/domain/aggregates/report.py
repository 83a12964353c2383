"""The site report: a period's buckets in the site's zone added up from the stored
buckets inside them (months, days, hours), the unsealed hours counted live."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

from django.conf import settings
from django.db.models import Q

from sessions_app.domain.aggregates import breakdowns, totals
from sessions_app.domain.aggregates.products import BREAKDOWNS, TOTALS
from sessions_app.domain.aggregates.seal import hour_live
from sessions_app.domain.aggregates.stored import aggregates_ranges
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.models import BucketState

STATE_RUNS = 50  # hour ranges OR-ed in one bucket-state query
MAX_LIVE_HOURS = 72
MAX_REPORT_BUCKETS = 744  # 31 days of hours; a period of days is at most 92, of months 25
MAX_REPORT_DAYS = 732  # periods.MAX_DAYS (731), widened to whole buckets
MAX_STORED_HOURS = 4_000  # sealed hour rows a report reads: a zone's day and month edges, open days
HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
GRAINS = ("hour", "day", "month")


@dataclass(frozen=True)
class ReportBucket:
    """One bucket of a site report and where its numbers came from."""

    bucket: datetime  # its start, UTC
    state: str  # "sealed" (stored), "live" (raw rows read now), "pending", "future"
    aggregates: totals.Aggregates


Unit = tuple[str, datetime]  # (granularity, UTC start): a stored bucket or an hour


def local_edges(start: datetime, end: datetime, zone: tzinfo, grain: str) -> list[datetime]:
    """The UTC starts of the zone's `grain` buckets covering [start, end), and the end of
    the last; each must fall on a UTC hour (a whole-hour offset) or RangeError("zone")."""
    if grain not in GRAINS:
        raise RangeError("grain", "hour, day or month")
    local = start.astimezone(zone)
    if grain == "day":
        local = local.replace(hour=0, minute=0, second=0, microsecond=0)
    elif grain == "month":
        local = local.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    edges = [timebuckets.floor(start, "hour")] if grain == "hour" else [_utc(local, zone)]
    while edges[-1] < end:
        if len(edges) > MAX_REPORT_BUCKETS:
            raise RangeError("end", f"at most {MAX_REPORT_BUCKETS} {grain} buckets")
        if grain == "hour":
            edges.append(edges[-1] + HOUR)
            continue
        day = edges[-1].astimezone(zone).date()
        following = (
            day + timedelta(days=1)
            if grain == "day"
            else (day.replace(day=28) + timedelta(days=4)).replace(day=1)
        )
        edges.append(_utc(datetime(following.year, following.month, following.day), zone))
    return edges


def _utc(local: datetime, zone: tzinfo) -> datetime:
    """A zone's wall time in UTC, refused unless it is a whole UTC hour."""
    moment = local.replace(tzinfo=zone).astimezone(UTC)
    if moment.minute or moment.second:
        raise RangeError(
            "zone",
            f"{zone} is {moment.astimezone(zone):%z} from UTC here: days and months are "
            "answered from UTC hour buckets, so only whole-hour offsets are shown in the "
            "site's zone (this one is shown in UTC)",
        )
    return moment


def report_range(start: datetime, end: datetime) -> tuple[datetime, datetime]:
    """[start, end) in UTC, or RangeError("end") past MAX_REPORT_DAYS or not after start."""
    start, end = timebuckets.as_utc(start), timebuckets.as_utc(end)
    if end <= start:
        raise RangeError("end", "must be after start")
    if end - start > timedelta(days=MAX_REPORT_DAYS):
        raise RangeError("end", f"at most {MAX_REPORT_DAYS - 1} days; narrow the range")
    return start, end


def cover(start: datetime, end: datetime, sealed: set[Unit]) -> list[Unit]:
    """The stored buckets that add up to [start, end) (whole UTC hours): sealed months and
    days wholly inside it, else its hours. (A year of hours is walked: plain datetime
    arithmetic, no bucket-width lookups.)"""
    units: list[Unit] = []
    at = timebuckets.as_utc(start)
    while at < end:
        if at.hour == 0:
            if at.day == 1 and ("month", at) in sealed:
                following = timebuckets.next_start(at, "month")
                if following <= end:
                    units.append(("month", at))
                    at = following
                    continue
            if ("day", at) in sealed and at + DAY <= end:
                units.append(("day", at))
                at += DAY
                continue
        units.append(("hour", at))
        at += HOUR
    return units


def site_report(
    *,
    site_id: uuid.UUID,
    shards: int,
    start: datetime,
    end: datetime,
    width: str = "hour",
    zone: tzinfo = UTC,
    cut: datetime | None = None,
    breakdown: bool = True,
) -> dict[str, Any]:
    """Return a site's numbers per hour, day or month of `zone` over [start, end), widened
    to whole buckets.

    Each bucket adds up the largest sealed buckets inside it (a UTC month, a UTC day,
    else hours: a zone's day edges come from hours, no rescan); an unsealed hour is
    counted live from its raw rows (MAX_LIVE_HOURS at most, later ones "pending"); hours
    not begun yet are "future". `totals` (and its KPIs) are those before `cut` (default:
    all), so a comparison counts only its elapsed part; the breakdowns (sessions started
    in range) come from the same stored buckets.
    """
    return site_report_begin(
        site_id=site_id,
        shards=shards,
        start=start,
        end=end,
        width=width,
        zone=zone,
        cut=cut,
        breakdown=breakdown,
    )()


def site_report_begin(
    *,
    site_id: uuid.UUID,
    shards: int,
    start: datetime,
    end: datetime,
    width: str = "hour",
    zone: tzinfo = UTC,
    cut: datetime | None = None,
    breakdown: bool = True,
) -> Callable[[], dict[str, Any]]:
    """`site_report` in two steps: plan it and send its stored rows' reads (this call),
    then wait, count the live hours and add up (the returned call). A page with two
    reports (a period and its comparison) sends both before it waits for either."""
    plan = bucket_plan(site_id=site_id, start=start, end=end, zone=zone, width=width, cut=cut)
    sealed = [u for u in plan.units if u in plan.sealed]
    # The sealed buckets' breakdowns are asked for first: the node answers them while
    # this process parses the aggregates and counts the live hours.
    started = breakdowns.breakdowns_begin(site_id=site_id, buckets=sealed) if breakdown else None
    stored_begun = _stored_begin(site_id, sealed)
    return lambda: _report(plan, stored_begun(), started, site_id, shards, width, zone, breakdown)


def _report(
    plan: BucketPlan,
    stored: dict[Unit, totals.Aggregates],
    started: Callable[[], dict[Unit, breakdowns.Breakdown]] | None,
    site_id: uuid.UUID,
    shards: int,
    width: str,
    zone: tzinfo,
    breakdown: bool,
) -> dict[str, Any]:
    edges, segments, pieces, states = plan.edges, plan.segments, plan.pieces, plan.states
    counted = _Counted(site_id, shards, states, datetime.now(UTC), settings.ALLOWED_LATENESS)
    parts = [counted.piece(piece, stored, breakdown=breakdown) for piece in pieces]
    report: list[ReportBucket] = []
    for a, b in itertools.pairwise(edges):
        inside = [
            p for (s, _), p in zip(itertools.pairwise(segments), parts, strict=True) if a <= s < b
        ]
        merged = totals.aggregates_merge([p[0] for p in inside])
        report.append(ReportBucket(a, _state([p[1] for p in inside]), merged))
    before_cut = [
        p[0] for (s, _), p in zip(itertools.pairwise(segments), parts, strict=True) if s < plan.cut
    ]
    summed = totals.aggregates_merge(before_cut) if before_cut else totals.Aggregates()
    return {
        "breakdowns": counted.breakdown(started()) if started is not None else {},
        "breakdown_live_hours": counted.live_hours,
        "start": edges[0],
        "end": edges[-1],
        "width": width,
        "zone": str(zone),
        "buckets": report,
        "totals": summed,
        "kpis": totals.kpis_of(summed),
        "live_hours": counted.live_hours,
        "raw_partitions_read": counted.partitions,
        "pending": sum(1 for r in report if r.state == "pending"),
    }


@dataclass(frozen=True)
class BucketPlan:
    """Which stored buckets add up a report: the zone's bucket `edges`, the `segments`
    between them and `cut`, each segment's `pieces` (cover), the hours' states, and the
    sealed units among them."""

    edges: list[datetime]
    cut: datetime
    segments: list[datetime]
    pieces: list[list[Unit]]
    states: dict[datetime, tuple[str, int]]
    sealed: set[Unit]

    @property
    def units(self) -> list[Unit]:
        return [u for piece in self.pieces for u in piece]


def bucket_plan(
    *,
    site_id: uuid.UUID,
    start: datetime,
    end: datetime,
    zone: tzinfo,
    width: str,
    cut: datetime | None,
) -> BucketPlan:
    """Plan a report over [start, end) in `zone` (site_report, filtered.value_report);
    RangeError("end") past MAX_STORED_HOURS sealed hours not rolled up."""
    start, end = report_range(start, end)
    edges = local_edges(start, end, zone, width)
    cut = min(timebuckets.ceil(cut, "hour"), edges[-1]) if cut is not None else edges[-1]
    segments = sorted({*edges, cut} if edges[0] < cut < edges[-1] else set(edges))
    sealed = sealed_above_hours(site_id, edges[0], edges[-1])
    pieces = [cover(a, b, sealed) for a, b in itertools.pairwise(segments)]
    hours = [u[1] for piece in pieces for u in piece if u[0] == "hour"]
    states = hour_states(site_id, hours)  # SQL; an hour without one had no events
    sealed_hours = {("hour", h) for h, (state, _) in states.items() if state == BucketState.SEALED}
    if len(sealed_hours) > MAX_STORED_HOURS:
        raise RangeError("end", "too many days in range not rolled up yet; narrow it")
    return BucketPlan(edges, cut, segments, pieces, states, sealed | sealed_hours)


def _state(states: list[str]) -> str:
    """A bucket's state from its pieces': the least final one."""
    for state in ("pending", "live", "future"):
        if state in states:
            return state
    return "sealed"


class _Counted:
    """The pieces of a report as they are added up: stored buckets, hours counted live
    (and their breakdowns), within MAX_LIVE_HOURS."""

    def __init__(
        self,
        site_id: uuid.UUID,
        shards: int,
        hour_states: dict[datetime, tuple[str, int]],
        now: datetime,
        lateness: timedelta,
    ) -> None:
        self.site_id, self.shards, self.hour_states = site_id, shards, hour_states
        self.now, self.settled = now, now - lateness
        self.live_hours = self.partitions = 0
        self.breakdowns: list[breakdowns.Breakdown] = []
        self.wanted: list[Unit] = []

    def piece(
        self, units: list[Unit], stored: dict[Unit, totals.Aggregates], *, breakdown: bool
    ) -> tuple[totals.Aggregates, str]:
        """The merged aggregates of one piece's units and its state."""
        parts: list[totals.Aggregates] = []
        state = "sealed"
        for unit in units:
            hour = unit[1]
            if unit in stored:
                parts.append(stored[unit])
                self.wanted.append(unit)
            elif unit[0] != "hour" or self._empty(hour):
                continue  # sealed without a row, or no state once settled: empty
            elif hour >= self.now:
                state = "future" if state == "sealed" else state
            elif self.hour_states.get(hour, ("", 0))[0] == BucketState.SEALED:
                continue  # sealed, no stored row: it had no events
            elif self.live_hours < MAX_LIVE_HOURS:
                state = "live" if state != "pending" else state
                parts.append(self._live(hour, breakdown=breakdown))
            else:
                state = "pending"
        return (totals.aggregates_merge(parts) if parts else totals.Aggregates()), state

    def _empty(self, hour: datetime) -> bool:
        """An hour without a state once settled: no event ever arrived for it."""
        return hour not in self.hour_states and hour + HOUR <= self.settled

    def _live(self, hour: datetime, *, breakdown: bool) -> totals.Aggregates:
        used = max(self.shards, self.hour_states.get(hour, ("", 1))[1])  # every shard it had
        self.live_hours += 1
        self.partitions += used
        products = (TOTALS, BREAKDOWNS) if breakdown else (TOTALS,)
        counted = hour_live(site_id=self.site_id, hour=hour, shards=used, products=products)
        if breakdown:
            self.breakdowns.append(counted[BREAKDOWNS.name])
        return counted[TOTALS.name]

    def breakdown(self, read: dict[Unit, breakdowns.Breakdown]) -> breakdowns.Breakdown:
        """The breakdown of every piece: the stored buckets' (of those `read`, the ones
        whose aggregates were stored) and the live hours'."""
        parts = [read[unit] for unit in self.wanted if unit in read] + self.breakdowns
        return breakdowns.breakdown_merge(parts) if parts else {}


def sealed_above_hours(site_id: uuid.UUID, start: datetime, end: datetime) -> set[Unit]:
    """The sealed days and months in [start, end)."""
    states = BucketState.objects.filter(
        site_id=site_id,
        granularity__in=("day", "month"),
        state=BucketState.SEALED,
        bucket__gte=timebuckets.floor(start, "month"),
        bucket__lt=end,
    )
    return {(g, timebuckets.as_utc(b)) for g, b in states.values_list("granularity", "bucket")}


def hour_states(site_id: uuid.UUID, hours: list[datetime]) -> dict[datetime, tuple[str, int]]:
    """The state and shards of each of these hours that has one: one range query per run
    of consecutive hours (a year of hours with no sealed day is one query), at most
    STATE_RUNS ranges per query."""
    found: dict[datetime, tuple[str, int]] = {}
    wanted = set(hours)
    runs = hour_runs(sorted(wanted))
    for offset in range(0, len(runs), STATE_RUNS):
        ranges = Q()
        for low, high in runs[offset : offset + STATE_RUNS]:
            ranges |= Q(bucket__gte=low, bucket__lte=high)
        rows = BucketState.objects.filter(ranges, site_id=site_id, granularity="hour")
        for bucket, state, used in rows.values_list("bucket", "state", "shards"):
            if timebuckets.as_utc(bucket) in wanted:
                found[timebuckets.as_utc(bucket)] = (state, used)
    return found


def hour_runs(hours: list[datetime]) -> list[tuple[datetime, datetime]]:
    """Sorted hours as runs of consecutive hours: (first, last) each."""
    runs: list[tuple[datetime, datetime]] = []
    for hour in hours:
        if runs and hour - runs[-1][1] == HOUR:
            runs[-1] = (runs[-1][0], hour)
        else:
            runs.append((hour, hour))
    return runs


def _stored_begin(
    site_id: uuid.UUID, units: list[Unit]
) -> Callable[[], dict[Unit, totals.Aggregates]]:
    """Start reading the stored aggregates of these sealed units: one slice per
    granularity and run of adjacent buckets (at most MAX_AGGREGATE_ROWS rows each), all
    at once; the returned call waits for them."""
    runs: list[tuple[str, datetime, datetime]] = []
    for granularity, bucket in sorted(units):
        following = timebuckets.next_start(bucket, granularity)
        if runs and runs[-1][0] == granularity and runs[-1][2] == bucket:
            runs[-1] = (granularity, runs[-1][1], following)
        else:
            runs.append((granularity, bucket, following))

    pending = aggregates_ranges(site_id=site_id, runs=runs)
    return lambda: {
        (run[0], b): a for run, rows in zip(runs, pending(), strict=True) for b, a in rows
    }


def range_cover(
    start: datetime,
    end: datetime,
    sealed_at: set[tuple[str, datetime]],
    known: dict[tuple[str, datetime], str],
    now: datetime,
) -> tuple[list[tuple[str, datetime]], list[datetime]]:
    """Which stored buckets cover [start, end) and which hours must be counted live:
    sealed days wholly inside it, else their sealed hours, else the hours that have
    a state or may still get events (oldest first)."""
    wanted: list[tuple[str, datetime]] = []
    live: list[datetime] = []
    day_start, day_end = timebuckets.floor(start, "day"), timebuckets.ceil(end, "day")
    for day in timebuckets.buckets_between(day_start, day_end, "day"):
        following = timebuckets.next_start(day, "day")
        if start <= day and following <= end and ("day", day) in sealed_at:
            wanted.append(("day", day))
            continue
        for hour in timebuckets.buckets_between(max(day, start), min(following, end), "hour"):
            if ("hour", hour) in sealed_at:
                wanted.append(("hour", hour))
            elif ("hour", hour) in known or (
                hour <= now < timebuckets.next_start(hour, "hour") + settings.ALLOWED_LATENESS
            ):  # a state: it has sessions; none yet, begun but not settled: it may have
                live.append(hour)
    return wanted, live


def bucket_cover(
    *, site_id: uuid.UUID, start: datetime, end: datetime
) -> tuple[list[tuple[str, datetime]], list[datetime], dict[datetime, int]]:
    """`range_cover` of [start, end) from the site's bucket states; also each hour's shards."""
    known, shards, sealed_at = _bucket_states(site_id, start, end)
    wanted, live = range_cover(start, end, sealed_at, known, datetime.now(UTC))
    return wanted, live, shards


def _bucket_states(
    site_id: uuid.UUID, start: datetime, end: datetime
) -> tuple[dict[tuple[str, datetime], str], dict[datetime, int], set[tuple[str, datetime]]]:
    """The states of the site's buckets in [start, end) ({(granularity, bucket): state}),
    each hour's shards, and the sealed ones."""
    known: dict[tuple[str, datetime], str] = {}
    shards: dict[datetime, int] = {}
    states = BucketState.objects.filter(site_id=site_id, bucket__gte=start, bucket__lt=end)
    for g, b, state, used in states.values_list("granularity", "bucket", "state", "shards"):
        known[g, timebuckets.as_utc(b)] = state
        if g == "hour":
            shards[timebuckets.as_utc(b)] = used
    sealed_at = {key for key, state in known.items() if state == BucketState.SEALED}
    return known, shards, sealed_at
