"""The server's errors become sparkcdc's classes by SQLSTATE (postgres/errors.py), against the real server."""

from __future__ import annotations

import psycopg
import pytest

from sparkcdc.embedded_postgres import ThrowawayCluster
from sparkcdc.errors import ProtocolError, ServerError
from sparkcdc.postgres import (
    LogicalReplicationReader,
    ReconnectPolicy,
    ReplicationError,
    ReplicationOptions,
    SlotInUseError,
    SlotNotFoundError,
    advance_slot,
    create_logical_slot,
    create_publication,
    drop_slot,
)
from sparkcdc.postgres.errors import ServerUnavailableError, from_psycopg, server_error


def test_start_replication_on_a_missing_slot_names_the_slot(pg_cluster: ThrowawayCluster, unique_name: str) -> None:
    options = ReplicationOptions(f"missing_{unique_name}", ("any_publication",))
    reader = LogicalReplicationReader(pg_cluster.conninfo(), options, reconnect=ReconnectPolicy(attempts=1))
    with pytest.raises(SlotNotFoundError) as info:
        reader.start()
    assert info.value.slot == f"missing_{unique_name}"
    assert info.value.sqlstate == "42704"
    assert f"missing_{unique_name}" in str(info.value)


def test_a_missing_publication_while_streaming_is_not_a_missing_slot(
    db: psycopg.Connection, pg_cluster: ThrowawayCluster, unique_name: str
) -> None:
    """Same SQLSTATE (42704), other object: once the stream runs the slot is ours, so it is not the slot."""
    db.execute(f"CREATE TABLE t_{unique_name} (id int PRIMARY KEY)")
    create_logical_slot(db, unique_name)
    try:
        options = ReplicationOptions(unique_name, ("no_such_publication",), status_interval=0.2)
        with LogicalReplicationReader(pg_cluster.conninfo(), options, reconnect=ReconnectPolicy(attempts=1)) as reader:
            db.execute(f"INSERT INTO t_{unique_name} VALUES (1)")
            with pytest.raises(ReplicationError) as info:
                while True:
                    reader.read(timeout=30)
        assert info.value.sqlstate == "42704" and info.value.slot == unique_name
        assert not isinstance(info.value, (SlotNotFoundError, ServerUnavailableError))
    finally:
        drop_slot(db, unique_name, wait=30)


def test_slot_functions_on_a_missing_slot(db: psycopg.Connection, unique_name: str) -> None:
    with pytest.raises(SlotNotFoundError) as advanced:
        advance_slot(db, f"missing_{unique_name}", 0x1000000)
    with pytest.raises(SlotNotFoundError) as dropped:
        drop_slot(db, f"missing_{unique_name}", missing_ok=False)
    assert advanced.value.slot == dropped.value.slot == f"missing_{unique_name}"
    assert drop_slot(db, f"missing_{unique_name}") is False  # missing_ok: not an error


def test_dropping_a_slot_in_use_names_the_slot(db: psycopg.Connection, pg_cluster: ThrowawayCluster, unique_name: str) -> None:
    db.execute(f"CREATE TABLE t_{unique_name} (id int PRIMARY KEY)")
    create_publication(db, unique_name, tables=[("public", f"t_{unique_name}")])  # never FOR ALL TABLES: the cluster is shared
    create_logical_slot(db, unique_name)
    options = ReplicationOptions(unique_name, (unique_name,), status_interval=0.2)
    with LogicalReplicationReader(pg_cluster.conninfo(), options) as reader:
        assert reader.connected  # START_REPLICATION answered: the walsender holds the slot
        with pytest.raises(SlotInUseError) as info:
            drop_slot(db, unique_name, wait=0)
        assert (info.value.slot, info.value.sqlstate) == (unique_name, "55006")
    drop_slot(db, unique_name, wait=30)


def test_a_driver_error_carries_the_table_from_the_diagnostic_fields(db: psycopg.Connection, unique_name: str) -> None:
    db.execute(f"CREATE TABLE t_{unique_name} (id int PRIMARY KEY)")
    db.execute(f"INSERT INTO t_{unique_name} VALUES (1)")
    with pytest.raises(psycopg.Error) as info:
        db.execute(f"INSERT INTO t_{unique_name} VALUES (1)")
    error = from_psycopg(info.value, "inserting")
    assert type(error) is ServerError
    assert (error.sqlstate, error.table) == ("23505", f"public.t_{unique_name}")
    assert str(error).startswith("inserting: duplicate key")


def test_a_terminated_backend_is_a_lost_connection(db: psycopg.Connection, pg_cluster: ThrowawayCluster) -> None:
    with psycopg.connect(pg_cluster.conninfo(), autocommit=True) as victim:
        db.execute("SELECT pg_terminate_backend(%s)", (victim.info.backend_pid,))
        with pytest.raises(psycopg.Error) as info:
            victim.execute("SELECT 1")
    error = from_psycopg(info.value, "probing")
    assert isinstance(error, ServerUnavailableError)


def test_an_unreachable_server_is_unavailable() -> None:
    with pytest.raises(psycopg.Error) as info:
        psycopg.connect("host=127.0.0.1 port=1 dbname=postgres connect_timeout=5")
    error = from_psycopg(info.value, "cannot connect")
    assert isinstance(error, ServerUnavailableError) and error.sqlstate is None


@pytest.mark.parametrize(
    ("sqlstate", "kwargs", "expected"),
    [
        ("42704", {"slot": "s", "slot_request": True}, SlotNotFoundError),
        ("42704", {"slot": "s", "replication": True}, ReplicationError),  # the stream: a publication, not the slot
        ("42704", {}, ServerError),
        ("55006", {"slot": "s", "slot_request": True}, SlotInUseError),
        ("57P01", {"replication": True}, ServerUnavailableError),
        ("08006", {}, ServerUnavailableError),
        (None, {}, ServerUnavailableError),
        ("42501", {"replication": True}, ReplicationError),
        ("42501", {"replication": True, "connected": False}, ServerUnavailableError),
    ],
)
def test_the_mapping_reads_the_sqlstate_only(sqlstate: str | None, kwargs: dict, expected: type[ServerError]) -> None:
    # The text says "slot" and "does not exist" in every case: it must not matter.
    error = server_error('replication slot "s" does not exist', sqlstate, **kwargs)
    assert isinstance(error, expected) and not isinstance(error, ProtocolError)
    if expected in (ReplicationError, ServerError):
        assert type(error) is expected  # not a slot class, not a lost connection
