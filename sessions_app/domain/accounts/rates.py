"""Request budgets in fixed clock windows, counted in Redis: an API token's hour, a share
link's minute. A window's count lives under `<key>:<window start>` and expires soon after
the window; with Redis unreachable nothing is counted (the caller answers unmetered)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from redis.exceptions import RedisError

from sessions_app.foundation.core.redis_client import redis_client


@dataclass(frozen=True)
class Rate:
    """A window: its limit, what is left of it, when the next one starts (epoch s)."""

    limit: int
    remaining: int
    reset: int

    @property
    def exceeded(self) -> bool:
        return self.remaining < 0

    def retry_after(self) -> int:
        """Whole seconds until the next window (at least 1): Retry-After's value."""
        return max(1, self.reset - int(time.time()))


def window_take(key: str, *, limit: int, start: int, seconds: int) -> Rate | None:
    """Count one request under `key` in the window starting at `start` (epoch s, a
    multiple of `seconds`); None when Redis cannot count it."""
    counted = f"{key}:{start}"
    try:
        with redis_client().pipeline() as pipe:
            pipe.incr(counted)
            pipe.expire(counted, seconds + 60)
            used, _ = pipe.execute()
    except RedisError:
        return None
    return Rate(limit=limit, remaining=limit - int(used), reset=start + seconds)
