"""Per-site and per-client-IP request rate limits in Redis (fixed one-second windows)."""

from __future__ import annotations

import time
import uuid

from django.conf import settings

from sessions_app.core.redis_client import redis_client


def rate_limited(*, site_id: uuid.UUID, ip: str | None) -> str | None:
    """Count this request; return which limit it exceeds ("site" or "ip"), or None."""
    second = int(time.time())
    checks = []
    if settings.COLLECT_RATE_PER_SITE > 0:
        checks.append(("site", f"cs:rl:site:{site_id}:{second}", settings.COLLECT_RATE_PER_SITE))
    if settings.COLLECT_RATE_PER_IP > 0 and ip:
        checks.append(("ip", f"cs:rl:ip:{ip}:{second}", settings.COLLECT_RATE_PER_IP))
    if not checks:
        return None
    pipe = redis_client().pipeline(transaction=False)
    for _, key, _ in checks:
        pipe.incr(key)
        pipe.expire(key, 2)
    counts = pipe.execute()[::2]
    for (name, _, limit), count in zip(checks, counts, strict=True):
        if int(count) > limit:
            return name
    return None
