"""The replication reader over a connection that goes silent without closing (tests/support/tcp_proxy.py).

The server's ``wal_sender_timeout`` is 2 s on these connections (a user setting, in the startup
options), so the reader's receive timeout is 2 s: an idle but live stream must never trip it, a
silent one must, and the reader then comes back on a new connection from the confirmed position.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import psycopg
import pytest

from sparkcdc.embedded_postgres import ThrowawayCluster
from sparkcdc.pgoutput import Commit, Insert
from sparkcdc.postgres import (
    LogicalReplicationReader,
    ReconnectPolicy,
    ReplicationOptions,
    StreamRestarted,
    create_logical_slot,
    create_publication,
    drop_slot,
)
from sparkcdc.postgres.replication import parse_duration

from ..support.tcp_proxy import TcpProxy
from ..support.waiting import wait_until


@pytest.fixture
def silent_setup(db: psycopg.Connection, pg_cluster: ThrowawayCluster, unique_name: str) -> Iterator[tuple[str, TcpProxy]]:
    table = f"t_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY)")
    create_publication(db, unique_name, tables=[("public", table)])
    create_logical_slot(db, unique_name)
    with TcpProxy(pg_cluster.host, pg_cluster.port) as proxy:
        yield table, proxy
    drop_slot(db, unique_name, wait=30)


def _next_insert(reader: LogicalReplicationReader, timeout: float = 30) -> int | StreamRestarted:
    """The id of the next inserted row, or the StreamRestarted that comes first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        item = reader.read(timeout=0.5)
        if isinstance(item, StreamRestarted):
            return item
        if item is not None and isinstance(item.message, Insert):
            return int(item.message.new_tuple[0])  # type: ignore[arg-type]
    raise AssertionError("no insert within the timeout")


def test_a_silent_connection_is_detected_and_the_reader_resumes_from_the_confirmed_position(
    db: psycopg.Connection, pg_cluster: ThrowawayCluster, silent_setup: tuple[str, TcpProxy], unique_name: str
) -> None:
    table, proxy = silent_setup
    conninfo = pg_cluster.conninfo(host="127.0.0.1", port=proxy.port, options="-c wal_sender_timeout=2s")
    options = ReplicationOptions(unique_name, (unique_name,), status_interval=0.5)
    reader = LogicalReplicationReader(conninfo, options, reconnect=ReconnectPolicy(attempts=20, initial_delay=0.2, max_delay=0.5))
    with reader:
        db.execute(f"INSERT INTO {table} VALUES (1)")
        assert _next_insert(reader) == 1
        commit = None
        while commit is None:
            item = reader.read(timeout=5)
            if item is not None and isinstance(item.message, Commit):
                commit = item.message
        reader.confirm(commit.end_lsn)

        # Idle for twice the receive timeout on a live connection: answered requests, no false alarm.
        idle_until = time.monotonic() + 4.5
        while time.monotonic() < idle_until:
            assert reader.read(timeout=0.5) is None
        assert reader.receive_timeouts == 0 and reader.restarts == 0
        assert reader.keepalives_received > 0, "the reader asked the idle walsender for replies"

        proxy.silence_next_replication_status()
        silenced_at = time.monotonic()
        while not proxy.silenced_links():  # the idle reader's next request for a reply is swallowed
            assert reader.read(timeout=0.2) is None
        db.execute(f"INSERT INTO {table} VALUES (2)")  # stuck behind the silent link
        restarted = _next_insert(reader, timeout=60)
        detected_after = time.monotonic() - silenced_at
        assert isinstance(restarted, StreamRestarted), restarted
        assert "no reply from the server" in restarted.reason and "receive timeout 2 s" in restarted.reason, restarted.reason
        assert reader.receive_timeouts == 1
        assert detected_after < 20, f"detected after {detected_after:.1f} s"
        silent = proxy.silenced_links()
        assert silent == [{"closed": False}], "the proxy silenced one connection and kept it open"
        # From the confirmed position: row 1 is not sent again, row 2 comes once.
        assert _next_insert(reader) == 2
        db.execute(f"INSERT INTO {table} VALUES (3)")
        assert _next_insert(reader) == 3
    wait_until(lambda: db.execute("SELECT NOT active FROM pg_replication_slots WHERE slot_name = %s",
                                  (unique_name,)).fetchone()[0], timeout=30, what="the slot to be released")


def test_the_receive_timeout_can_be_turned_off_and_durations_are_read_as_the_server_shows_them() -> None:
    assert ReplicationOptions("s", ("p",), receive_timeout=0).receive_timeout == 0
    with pytest.raises(ValueError, match="receive_timeout"):
        ReplicationOptions("s", ("p",), receive_timeout=-1)
    assert [parse_duration(text) for text in ("60s", "1min", "500ms", "0", "2500", "1h")] == [60, 60, 0.5, 0, 2.5, 3600]
