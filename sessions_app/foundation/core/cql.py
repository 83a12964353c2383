"""Access to the Cassandra session and prepared statements for the hot paths.

cqlengine models define and sync the schema; reads and writes on request paths
go through statements prepared once per process here (cqlengine never prepares,
and django-cassandra-engine's queryset adds ALLOW FILTERING to everything).
"""

from __future__ import annotations

import atexit
import os
import struct
import sys
import threading
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from cassandra import ConsistencyLevel
from cassandra.cluster import ResponseFuture, Session
from cassandra.concurrent import execute_concurrent
from cassandra.cqlengine import connection as cql_connection
from cassandra.query import (
    UNSET_VALUE,
    BoundStatement,
    PreparedStatement,
)
from django.conf import settings
from django.db import connections

from sessions_app.foundation.core import timebuckets


def cassandra_session() -> Session:
    """Return this process's driver session (connecting on first use).

    Rows come back as dicts: cqlengine sets dict_factory on the session it
    shares with this module.
    """
    # One lookup of the connection (a thread-local): selectors call this per query.
    wrapper = connections[ALIAS]
    _guarded(wrapper.settings_dict["NAME"])
    registered = wrapper.connection
    current = registered.session
    if current is None:
        # cqlengine's lazy connect flips its flag before setup() finishes, so a
        # second thread can see no session yet; wait on its lock for the setup.
        with cql_connection.get_connection(ALIAS).lazy_connect_lock:
            current = registered.session
    shutdown_at_exit()
    return current


def shutdown_at_exit() -> None:
    """Shut the clusters down at exit, before the driver's own atexit hooks run.

    Registered after them (the driver registers on import), so it runs first;
    otherwise they log "Event loop thread could not be joined" at exit.
    """
    global _shutdown_registered
    if not _shutdown_registered:
        atexit.register(_shutdown)
        _shutdown_registered = True


ALIAS = "cassandra"
_lock = threading.Lock()
_prepared: dict[tuple[int, str, str], PreparedStatement] = {}
_shutdown_registered = False


class KeyspaceGuardError(RuntimeError):
    """A statement was about to run against a keyspace the settings forbid."""


def keyspace() -> str:
    """Return the active keyspace; refuse one without the required prefix (tests: test_)."""
    return _guarded(connections[ALIAS].settings_dict["NAME"])


def _guarded(value: object) -> str:
    """The keyspace name, unless the settings forbid it."""
    name = str(value)
    prefix = settings.CASSANDRA_REQUIRED_KEYSPACE_PREFIX
    if prefix and not name.startswith(prefix):
        raise KeyspaceGuardError(
            f"refusing keyspace {name!r}: these settings only allow keyspaces starting with "
            f"{prefix!r} (mark the test with django_db(databases=['default', 'cassandra']))"
        )
    return name


def _shutdown() -> None:
    for registered in list(cql_connection._connections.values()):
        if registered.cluster is not None:
            registered.cluster.shutdown()
    _stop_event_loop()


def _stop_event_loop() -> None:
    """End the driver's libev loop thread now that no connection is left.

    The driver's own atexit hook (registered at import, so it runs after this one)
    stops the loop's prepare watcher before waking the loop, so the timer armed for
    the last request's timeout (cancelled, but still armed) keeps the loop running:
    its 5 s join times out, exit takes 5 s longer, and it logs "Event loop thread
    could not be joined" (under pytest after the captured stderr was closed:
    "--- Logging error ---"). Flagged here, with the prepare watcher still running,
    the loop's next pass stops that timer and returns; the hook then finds the
    thread gone.
    """
    reactor = sys.modules.get("cassandra.io.libevreactor")
    loop: Any = getattr(reactor, "_global_loop", None)
    if loop is None or loop._thread is None or loop._pid != os.getpid() or loop._live_conns:
        return
    loop._shutdown = True
    loop.notify()
    loop._thread.join(timeout=2.0)


class _SpentTimer:
    """Stands in for a finished request's cancelled timeout timer."""

    __slots__ = ()

    def cancel(self) -> None:
        return None


_SPENT_TIMER = _SpentTimer()


def _cancel_timer(future: ResponseFuture) -> None:
    timer = future._timer
    if timer:
        timer.cancel()
        future._timer = _SPENT_TIMER


def free_finished_requests() -> None:
    """Let a finished request's rows be freed at once instead of by the cyclic GC.

    The driver's ResponseFuture keeps its cancelled timeout timer, and the timer
    holds the future's bound `_on_timeout`: a reference cycle through the future's
    result. Every query's rows (1,000 dicts and 2,000 UUIDs for a timeline) thus
    outlived the request until Python's cycle collector ran, which made the
    collections frequent and slow (the timeline's p95). The cancelled timer is
    replaced by a placeholder that holds nothing; it is not None, so the driver
    behaves exactly as before (`_start_timer` starts no new timer for later pages).
    """
    ResponseFuture._cancel_timer = _cancel_timer


free_finished_requests()


def consistency(name: str) -> int:
    """Return the driver consistency level for a setting value such as LOCAL_QUORUM."""
    return int(getattr(ConsistencyLevel, name))


def prepare(cql: str, *, idempotent: bool = False, write: bool = False) -> PreparedStatement:
    """Return the prepared form of cql, whose `{ks}` names the active keyspace.

    Statements are cached per process and keyspace: a forked worker prepares its
    own, and the test keyspace never shares statements with the real one. Reads are
    always idempotent, so the driver may retry them on another node when one dies.
    """
    name = keyspace()
    key = (os.getpid(), name, cql)
    statement = _prepared.get(key)
    if statement is None:
        with _lock:
            statement = _prepared.get(key)
            if statement is None:
                statement = cassandra_session().prepare(cql.format(ks=name))
                statement.is_idempotent = idempotent or cql.lstrip().upper().startswith("SELECT")
                level = (
                    settings.CASSANDRA_WRITE_CONSISTENCY
                    if write
                    else settings.CASSANDRA_READ_CONSISTENCY
                )
                statement.consistency_level = consistency(level)
                _prepared[key] = statement
    return statement


_INT64 = struct.Struct(">q").pack
_INT32 = struct.Struct(">i").pack
_INT16 = struct.Struct(">h").pack
_BOOLEANS = {True: b"\x01", False: b"\x00"}


def _timestamp(value: datetime) -> bytes:
    # DateType.serialize's integer arithmetic without utctimetuple + timegm; a naive
    # datetime raises TypeError, and the driver's own path handles it.
    return _INT64(timebuckets.epoch_ms(value))


def _boolean(value: bool) -> bytes:
    if type(value) is not bool:
        raise TypeError("not a bool")  # the driver's path decides
    return _BOOLEANS[value]


_SERIALIZERS: dict[str, Callable[[Any], bytes]] = {
    "uuid": lambda value: value.bytes,
    "timeuuid": lambda value: value.bytes,
    "text": lambda value: value.encode(),
    "varchar": lambda value: value.encode(),
    "timestamp": _timestamp,
    "boolean": _boolean,
    "int": _INT32,
    "smallint": _INT16,
    "bigint": _INT64,
    "blob": lambda value: value if type(value) is bytes else bytes(value),
}

_MAP_VALUES: dict[str, Callable[[Any], bytes]] = {"bigint": _INT64, "int": _INT32}


def _text_map(pack_value: Callable[[Any], bytes]) -> Callable[[Any], bytes]:
    """A map<text, bigint|int> as the driver writes it (protocol v3+): the pair count,
    then each key's and value's length and bytes. Its keys' text is only encoded once
    (a seal binds one map per user, of a few event keys)."""
    count, length, size = _INT32, _INT32, len(pack_value(0))
    value_length = length(size)

    def serialize(value: Any) -> bytes:
        if type(value) is not dict:
            raise TypeError("not a dict")  # the driver's path decides
        parts = [count(len(value))]
        for key, n in value.items():
            data = key.encode()
            parts += (length(len(data)), data, value_length, pack_value(n))
        return b"".join(parts)

    return serialize


def _serializer(kind: Any, version: int) -> Callable[[Any], bytes]:
    """A column's serializer: a fast one for its type, else the driver's."""
    name = kind.typename
    if name == "map" and version >= 3:
        key, value = (sub.typename for sub in kind.subtypes)
        if key in ("text", "varchar") and value in _MAP_VALUES:
            return _text_map(_MAP_VALUES[value])
    return _SERIALIZERS.get(name) or _driver(kind, version)


_binders: dict[
    int, tuple[PreparedStatement, list[tuple[Callable[[Any], bytes], Any]], list[Any]]
] = {}

# Values whose bytes a column may reuse when the next row passes the same object:
# immutable, so the same object always serializes the same.
_REUSABLE = frozenset({str, int, bool, uuid.UUID, datetime})


def bind(statement: PreparedStatement, params: Sequence[Any]) -> BoundStatement:
    """Bind a write's values, None and {} as UNSET (no tombstone), like statement.bind.

    The driver's bind builds a column descriptor per value (for client-side
    encryption, unused here) and serializes timestamps through utctimetuple; on
    the collector's write path that was most of the CPU of writing a row. Here
    each column's serializer is looked up once per prepared statement; the bytes
    are the driver's (tests/core/test_cql_bind.py compares them), and any value a
    fast serializer does not take goes through the driver's own. Each column also
    remembers its last value and bytes: rows written together mostly repeat their
    site, bucket and TTL, and those are serialized once.
    """
    entry = _binders.get(id(statement))
    if entry is None or entry[0] is not statement:
        version = statement.protocol_version
        columns = [
            (_serializer(column.type, version), column.type) for column in statement.column_metadata
        ]
        entry = _binders[id(statement)] = (statement, columns, [None] * len(columns))
    _, columns, last = entry
    if len(params) != len(columns):
        raise ValueError(f"{len(params)} values for {len(columns)} bind markers")
    values: list[Any] = []
    for index, value in enumerate(params):
        if value is None or (type(value) is dict and not value):
            values.append(UNSET_VALUE)
            continue
        seen = last[index]
        if seen is not None and seen[0] is value:
            values.append(seen[1])
            continue
        serialize, kind = columns[index]
        try:
            data = serialize(value)
        except (AttributeError, TypeError, struct.error):
            data = kind.serialize(value, statement.protocol_version)
        if type(value) in _REUSABLE:
            last[index] = (value, data)
        values.append(data)
    for index in statement.routing_key_indexes or ():
        if values[index] is UNSET_VALUE:
            name = statement.column_metadata[index].name
            raise ValueError(f"no value for {name!r}, part of the partition key")
    bound = BoundStatement(statement)
    bound.raw_values = params
    bound.values = values
    return bound


def _driver(kind: Any, version: int) -> Callable[[Any], bytes]:
    return lambda value: kind.serialize(value, version)


def execute_windowed(work: list[tuple[Any, Any]], *, window: int = 128) -> None:
    """Run (statement, params) pairs with at most `window` in flight; raise the first error.

    For background jobs that write thousands of rows (seals): the driver's
    execute_concurrent keeps the window full without flooding the node.
    """
    if work:
        execute_concurrent(cassandra_session(), work, concurrency=window, raise_on_first_error=True)


def read_windowed(
    statement: PreparedStatement, params: Sequence[Sequence[Any]], *, window: int = 128
) -> list[list[Any]]:
    """Each parameter set's rows, in order, at most `window` reads in flight (the
    driver's own threads: a report reading dozens of partitions starts none of its own)."""
    if not params:
        return []
    work = [(statement, p) for p in params]
    done = execute_concurrent(
        cassandra_session(), work, concurrency=window, raise_on_first_error=True
    )
    return [list(result) for _, result in done]


def read_begin(
    statement: PreparedStatement, params: Sequence[Sequence[Any]], *, window: int = 128
) -> Callable[[], list[list[Any]]]:
    """Start reading each parameter set's rows now; the returned call waits for them (in
    order), so a caller computes while the node answers. More than `window` sets are read
    by `read_windowed` when called (never more than `window` in flight)."""
    if len(params) > window:
        return lambda: read_windowed(statement, params, window=window)
    session = cassandra_session()
    futures = [session.execute_async(statement, p) for p in params]
    return lambda: [list(future.result()) for future in futures]


def reset_after_fork() -> None:
    """Forget the driver objects inherited across fork(); the next query reconnects.

    Only drops references: shutting down an inherited Cluster would close
    sockets the parent still uses and join threads that do not exist here.
    """
    for registered in list(cql_connection._connections.values()):
        registered.cluster = None
        registered.session = None
        registered.lazy_connect = True
    cql_connection.cluster = None
    cql_connection.session = None
    _prepared.clear()
