"""Deterministic TimeUUIDs: the same client event always maps to the same row key.

A version-1 UUID carries a 60-bit timestamp (100 ns since 1582-10-15) plus a
14-bit clock sequence and a 48-bit node. Here the time comes from the event's
timestamp and clock sequence + node from a hash of the client's event id, so a
retried beacon writes the same rows instead of new ones (never CQL now()/uuid()).
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime, timedelta

from sessions_app.foundation.core.timebuckets import EPOCH, as_utc

# 100 ns intervals between 1582-10-15 (the UUID epoch) and 1970-01-01.
UUID_EPOCH_OFFSET = 0x01B21DD213814000


def time_uuid(ts: datetime, entropy: str) -> uuid.UUID:
    """Return the version-1 UUID for ts whose clock-seq/node bits hash entropy."""
    digest = hashlib.blake2b(entropy.encode("utf-8"), digest_size=8).digest()
    tail = int.from_bytes(digest, "big")
    clock_seq = (tail >> 48) & 0x3FFF
    node = (tail & 0xFFFFFFFFFFFF) | 0x010000000000  # multicast bit: not a real MAC
    return _v1(_intervals(ts), ((clock_seq >> 8) & 0x3F) | 0x80, clock_seq & 0xFF, node)


def time_uuid_bound(ts: datetime, *, upper: bool = False) -> uuid.UUID:
    """Return the smallest (or largest) TimeUUID Cassandra sorts at instant ts.

    Cassandra orders TimeUUIDs by time, then by the remaining bytes compared as
    signed: 0x80 is the lowest byte and 0x7f the highest. Exact integer math,
    unlike the driver's float-based min_uuid_from_time.
    """
    byte = 0x7F if upper else 0x80
    node = int.from_bytes(bytes([byte]) * 6, "big")
    return _v1(_intervals(ts), byte, byte, node)


def cassandra_order(value: uuid.UUID) -> tuple[int, bytes]:
    """Return a sort key that orders TimeUUIDs as Cassandra does (see time_uuid_bound)."""
    return value.time, bytes(b ^ 0x80 for b in value.bytes[8:])


def _intervals(ts: datetime) -> int:
    delta = as_utc(ts) - EPOCH
    micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return micros * 10 + UUID_EPOCH_OFFSET


def _v1(timestamp: int, clock_seq_hi: int, clock_seq_low: int, node: int) -> uuid.UUID:
    return uuid.UUID(
        fields=(
            timestamp & 0xFFFFFFFF,
            (timestamp >> 32) & 0xFFFF,
            ((timestamp >> 48) & 0x0FFF) | 0x1000,
            clock_seq_hi,
            clock_seq_low,
            node,
        )
    )


def uuid_time(value: uuid.UUID) -> datetime:
    """Return the UTC instant encoded in a version-1 UUID (microsecond precision)."""
    intervals = value.time - UUID_EPOCH_OFFSET
    return EPOCH + timedelta(microseconds=intervals // 10)


def event_uuid(*, site_id: uuid.UUID, client_event_id: str, ts: datetime) -> uuid.UUID:
    """Return the row key of a client event: same site, id and time → same UUID."""
    return time_uuid(ts, f"{site_id}:{client_event_id}")
