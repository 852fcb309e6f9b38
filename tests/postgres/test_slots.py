"""SQL helpers for WAL positions and slots."""

from __future__ import annotations

import psycopg
import pytest

from sparkcdc.postgres import (
    LogicalReplicationReader,
    ReplicationError,
    ReplicationOptions,
    SlotInUseError,
    SlotNotFoundError,
    advance_slot,
    create_logical_slot,
    current_wal_lsn,
    drop_publication,
    drop_slot,
    ensure_publication,
    ensure_slot,
    get_slot,
    publication_exists,
    publication_tables,
)


def test_current_wal_lsn_moves_forward(db: psycopg.Connection, unique_name: str) -> None:
    before = current_wal_lsn(db)
    db.execute(f"CREATE TABLE t_{unique_name} AS SELECT generate_series(1, 1000) AS x")
    assert current_wal_lsn(db) > before


def test_slot_lifecycle(db: psycopg.Connection, unique_name: str) -> None:
    assert get_slot(db, unique_name) is None
    consistent_point = create_logical_slot(db, unique_name)
    state = get_slot(db, unique_name)
    assert state is not None
    assert (state.plugin, state.slot_type, state.database, state.active, state.active_pid) == (
        "pgoutput", "logical", "postgres", False, None
    )
    assert state.confirmed_flush_lsn == consistent_point
    assert state.restart_lsn is not None and state.restart_lsn <= consistent_point

    db.execute(f"CREATE TABLE t_{unique_name} AS SELECT generate_series(1, 1000) AS x")
    target = current_wal_lsn(db)
    assert advance_slot(db, unique_name, target) == target
    assert get_slot(db, unique_name).confirmed_flush_lsn == target  # type: ignore[union-attr]

    assert drop_slot(db, unique_name) is True
    assert drop_slot(db, unique_name) is False
    with pytest.raises(SlotNotFoundError, match=unique_name):
        drop_slot(db, unique_name, missing_ok=False)
    with pytest.raises(SlotNotFoundError, match=unique_name):
        advance_slot(db, unique_name, target)


def test_ensure_slot_creates_then_reuses(db: psycopg.Connection, unique_name: str) -> None:
    created, was_created = ensure_slot(db, unique_name)
    reused, was_created_again = ensure_slot(db, unique_name)
    assert was_created and not was_created_again
    assert reused.confirmed_flush_lsn == created.confirmed_flush_lsn
    drop_slot(db, unique_name)


def test_ensure_slot_refuses_a_slot_of_another_plugin(db: psycopg.Connection, unique_name: str) -> None:
    create_logical_slot(db, unique_name, plugin="test_decoding")
    with pytest.raises(ReplicationError, match=f"slot '{unique_name}' exists but is a logical slot for plugin 'test_decoding'"):
        ensure_slot(db, unique_name)
    drop_slot(db, unique_name)


def test_ensure_publication_creates_then_reuses(db: psycopg.Connection, unique_name: str) -> None:
    db.execute(f"CREATE TABLE t_{unique_name} (id int PRIMARY KEY)")
    assert ensure_publication(db, unique_name, tables=[("public", f"t_{unique_name}")]) is True
    assert ensure_publication(db, unique_name, tables=[]) is False
    assert publication_tables(db, unique_name) == [("public", f"t_{unique_name}")]
    drop_publication(db, unique_name)
    assert not publication_exists(db, unique_name)


def test_drop_slot_waits_for_the_walsender_to_let_go(db: psycopg.Connection, pg_cluster, unique_name: str) -> None:
    create_logical_slot(db, unique_name)
    options = ReplicationOptions(unique_name, ("unused",))
    reader = LogicalReplicationReader(pg_cluster.conninfo(), options).start()
    with pytest.raises(SlotInUseError):
        drop_slot(db, unique_name)  # still streaming: in use, no wait
    reader.close()
    assert drop_slot(db, unique_name, wait=30) is True
    assert get_slot(db, unique_name) is None
