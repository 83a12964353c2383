"""The transaction log's part of an erasure: the user's events, sessions and identity links
taken out of every logged plan that names them (the replay task would write them again)."""

from __future__ import annotations

import json
import uuid
import zlib
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings

from sessions_app.domain.erasure.scan import pages_many, table_ttl, write_all
from sessions_app.domain.ingest.plan import Plan, plan_decode, plan_encode, plan_without
from sessions_app.domain.ingest.txlog import LOG_WIDTH
from sessions_app.foundation.core import stamps, timebuckets
from sessions_app.foundation.models import TransactionLog
from sessions_app.foundation.tables import transaction_log

# An event's receipt is at most MAX_AHEAD before its ts: where the log scan starts.
RECEIPT_BEFORE_TS = stamps.MAX_AHEAD


def log_entries_strip(
    *,
    site_id: uuid.UUID,
    keys: set[str],
    earliest: datetime | None,
    now: datetime,
    progress: Callable[[str], None],
) -> Counter[str]:
    """Strip the keys from transaction-log plans: delete entries left empty, rewrite others.

    Scans the log from a day before the user's earliest event (or the whole
    TTL when nothing was found) up to now, every shard, decompressing each
    entry and decoding only those whose text holds a key.
    """
    ttl = table_ttl(TransactionLog)
    start = now - ttl
    if earliest is not None:
        start = max(start, earliest - RECEIPT_BEFORE_TS)
    minutes = timebuckets.buckets_between(start, now + timedelta(minutes=10), LOG_WIDTH)
    needles = [json.dumps(k).encode() for k in keys]
    counts: Counter[str] = Counter()
    deleted: list[tuple[Any, ...]] = []
    rewritten: list[tuple[Any, ...]] = []
    shards = list(range(settings.TXLOG_SHARDS))
    step = transaction_log.MINUTES_PER_READ
    reads = [(site_id, minutes[i : i + step], shards) for i in range(0, len(minutes), step)]
    progress(f"transaction log: {len(minutes)} buckets")
    for row in pages_many(transaction_log.SELECT_MINUTES, reads, window=4):
        minute = timebuckets.from_driver(row["minute"])
        key = (site_id, minute, row["shard"], row["batch_id"])
        try:
            kept = _plan_kept(row["payload"], needles, keys)
        except UnreadableError:  # no reader could apply it: when in doubt, delete
            counts["transaction_log_unreadable"] += 1
            deleted.append(key)
            continue
        if kept is None:
            continue
        if not kept.events and not kept.sessions and not kept.links:
            deleted.append(key)
            continue
        received = row["received_at"]
        expires = (timebuckets.from_driver(received) if received else minute) + ttl
        left = expires - now
        rewritten.append(
            (
                max(1, int(left.total_seconds())),
                plan_encode(kept),
                len(kept.events),
                *key,
            )
        )
    counts["transaction_log"] += write_all(transaction_log.DELETE_ENTRY, deleted) + write_all(
        transaction_log.REWRITE_ENTRY, rewritten
    )
    counts["transaction_log_rewritten"] += len(rewritten)
    return counts


class UnreadableError(ValueError):
    """A stored row no reader can read (damaged, or of a format no longer known)."""


def _plan_kept(payload: bytes | None, needles: list[bytes], keys: set[str]) -> Plan | None:
    """A log entry's plan without the keys, None if it holds none of them; UnreadableError
    if it is not zlib, or not a plan."""
    try:
        text = zlib.decompress(payload or b"")
    except zlib.error:
        raise UnreadableError("not zlib") from None
    if not any(n in text for n in needles):
        return None
    try:
        return plan_without(plan_decode(payload or b""), keys)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        raise UnreadableError(f"not a plan ({type(exc).__name__})") from None
