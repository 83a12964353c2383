"""What a sealed product is: one declaration of how it counts an hour, merges buckets and
is stored (the products themselves: domain/aggregates/products.py; the driver that seals
them: domain/aggregates/seal.py)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, Protocol, TypeVar

from sessions_app.domain.aggregates.sources import Hour

V = TypeVar("V")


class Write(Protocol):
    def __call__(
        self,
        *,
        site_id: uuid.UUID,
        granularity: str,
        bucket: datetime,
        value: Any,
        ttl: int,
        now: datetime,
    ) -> None: ...


class Read(Protocol):
    def __call__(
        self, *, site_id: uuid.UUID, granularity: str, buckets: list[datetime]
    ) -> list[Any]: ...


@dataclass(frozen=True)
class Product(Generic[V]):
    """One aggregate product. The driver calls, for each sealed bucket:

    - `hour(source)`: count one hour from the `sources.Hour` every product shares (its
      tally, its sessions' summaries, its started sessions: each read once, whichever
      product asks first);
    - `merge(parts, start=...)`: a day from its hours, a month from its days (`parts` the
      children's stored values, none: the empty value; `start` the parent's start);
    - `write(site_id=, granularity=, bucket=, value=, ttl=, now=)`: overwrite the bucket's
      stored value whole (rows carry `ttl`, the aggregate retention of the resolution);
    - `read(site_id=, granularity=, buckets=)`: the stored values of these buckets, the
      ones that have one.

    A product without pages that read a slice of a bucket stores its value on the generic
    store (domain/aggregates/product_rows.py: `declare`), which brings write and read.
    """

    name: str
    hour: Callable[[Hour], V]
    merge: Callable[..., V]  # (parts: list[V], *, start: datetime) -> V
    write: Write
    read: Read
