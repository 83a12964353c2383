"""One Redis connection pool per process, from settings.REDIS_URL."""

from __future__ import annotations

import os

import redis
from django.conf import settings

_clients: dict[tuple[int, str], redis.Redis] = {}


def redis_client() -> redis.Redis:
    """Return this process's client for settings.REDIS_URL (a new one after fork)."""
    key = (os.getpid(), settings.REDIS_URL)
    client = _clients.get(key)
    if client is None:
        client = redis.Redis.from_url(
            settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2, health_check_interval=30
        )
        _clients[key] = client
    return client
