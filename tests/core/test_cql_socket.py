"""The driver's connections send each request at once (TCP_NODELAY): with Nagle's
algorithm on, a request the driver writes in more than one piece waited for the node's
delayed ACK (40 ms a 5 KB write against ~1 ms; bench/RESULTS.md, 2026-11-28)."""

from __future__ import annotations

import socket

import pytest

from sessions_app.foundation.core.cql import cassandra_session

pytestmark = pytest.mark.django_db(databases=["cassandra"])


def test_every_connection_to_the_node_has_nagle_off():
    session = cassandra_session()
    session.execute("SELECT release_version FROM system.local")  # connected
    connections = [
        connection
        for holder in session.cluster.get_connection_holders()
        for connection in holder.get_connections()
    ]
    assert connections
    for connection in connections:
        assert connection._socket.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
