"""A world built once for a module's tests that only read it.

Building a site's traffic through /collect and sealing it takes seconds; a module whose
tests each check a different product, page or range of the same traffic builds it once
(`built_once`, a module-scoped fixture) and hands it to each test (`restored`).

Its Cassandra rows stay: they are the site's own partitions. Its SQL rows (the site, its
goals and bucket states) do not: the Cassandra alias has no transactions, so Django runs
every test that uses both databases as a transactional one and flushes the SQL tables
after it. They are kept as a snapshot instead, and each test starts by loading it, as
the walk's tests do. A test that changes the world builds one of its own.

A module that builds one puts its tests in one xdist group, so one worker builds it once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from django.apps import apps
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.core import serializers
from django.core.cache import cache
from django.core.management import call_command
from django.db import connections, router

T = TypeVar("T")


def shop_site() -> Any:
    """A fresh site whose allowed origin is https://shop.example (the `site` fixture's)."""
    from sessions_app.domain.ledger import sites

    return sites.site_create(name="Shop", origins=["https://shop.example"])


@dataclass(frozen=True)
class Span:
    """A built world's site and the time range its traffic covers."""

    site: Any
    start: datetime
    end: datetime


@dataclass(frozen=True)
class World(Generic[T]):
    """What a module's build made, and its SQL rows as they were when it was done."""

    value: T
    snapshot: str


def built_once(django_db_blocker: Any, build: Callable[[], T]) -> Iterator[World[T]]:
    """Yield what `build` made with the databases open, with its SQL snapshot; flush the
    SQL tables when the module is done (a test that ran no flush leaves none behind)."""
    with django_db_blocker.unblock():
        world = World(build(), sql_snapshot())
    try:
        yield world
    finally:
        with django_db_blocker.unblock():
            call_command("flush", database="default", interactive=False, verbosity=0)


def restored(world: World[T]) -> T:
    """The world for one test: its SQL rows loaded again (the last test's flush removed
    them) and this process's cache emptied (an answer an earlier test cached under the
    world's ids would answer this one). Call it from a function-scoped fixture that uses
    the database."""
    connections["default"].creation.deserialize_db_from_string(world.snapshot)
    cache.clear()
    return world.value


def sql_snapshot() -> str:
    """Every SQL row but those a flush makes again (content types, permissions)."""
    remade = {ContentType, Permission}
    models = [
        m for m in apps.get_models() if m not in remade and router.allow_migrate_model("default", m)
    ]
    rows = (row for m in models for row in m._base_manager.using("default").order_by("pk"))
    return serializers.serialize("json", rows)
