"""The replication reader against the live cluster: feedback, reconnects, errors, exported snapshots."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from sparkcdc.embedded_postgres import ThrowawayCluster
from sparkcdc.pgoutput import Begin, Commit, Insert, PgOutputMessage, Relation
from sparkcdc.postgres import (
    ExportedSnapshotSlot,
    LogicalReplicationReader,
    ReconnectPolicy,
    ReplicationConnectionLost,
    ReplicationError,
    ReplicationOptions,
    SlotInUseError,
    SlotNotFoundError,
    StreamRestarted,
    WalMessage,
    create_logical_slot,
    create_publication,
    drop_slot,
    get_slot,
)

from ..support.capture import read_until
from ..support.waiting import wait_until


@pytest.fixture
def capture_setup(db: psycopg.Connection, unique_name: str) -> Iterator[tuple[str, ReplicationOptions]]:
    """A table, a publication for it and a slot; yields (table, options)."""
    table = f"t_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, v text)")
    create_publication(db, unique_name, tables=[("public", table)])
    create_logical_slot(db, unique_name)
    yield table, ReplicationOptions(unique_name, (unique_name,), status_interval=0.2)
    drop_slot(db, unique_name, wait=30)


def _transactions(db: psycopg.Connection, table: str, first: int, count: int) -> None:
    for i in range(first, first + count):
        db.execute(f"INSERT INTO {table} VALUES (%s, %s), (%s, %s)", (i * 10, f"v{i}", i * 10 + 1, f"w{i}"))


def _read_commits(reader: LogicalReplicationReader, count: int) -> list[list[PgOutputMessage]]:
    """Read ``count`` whole transactions, each as its list of messages (Begin..Commit)."""
    transactions: list[list[PgOutputMessage]] = []
    current: list[PgOutputMessage] = []
    while len(transactions) < count:
        messages = read_until(reader, lambda m: isinstance(m, Commit))
        current.extend(messages)
        transactions.append(current)
        current = []
    return transactions


def _confirmed_flush(db: psycopg.Connection, slot: str) -> int:
    state = get_slot(db, slot)
    assert state is not None and state.confirmed_flush_lsn is not None
    return state.confirmed_flush_lsn


def test_feedback_never_confirms_more_than_the_caller(
    db: psycopg.Connection, pg_cluster: ThrowawayCluster, capture_setup: tuple[str, ReplicationOptions]
) -> None:
    table, options = capture_setup
    initial = _confirmed_flush(db, options.slot_name)
    # A short wal_sender_timeout makes the server ask for a reply every half second.
    conninfo = pg_cluster.conninfo(options="-c wal_sender_timeout=1s")
    other_table = f"{table}_unpublished"
    db.execute(f"CREATE TABLE {other_table} (id int)")
    with LogicalReplicationReader(conninfo, options) as reader:
        _transactions(db, table, 1, 4)
        transactions = _read_commits(reader, 4)
        commit_ends = [tx[-1].end_lsn for tx in transactions]  # type: ignore[union-attr]

        def idle_rounds(rounds: int, expected: int) -> None:
            """Answer keepalives and send status updates while WAL grows; the slot must not move."""
            target_keepalives = reader.keepalives_received + rounds
            target_updates = reader.status_updates_sent + rounds
            while reader.keepalives_received < target_keepalives or reader.status_updates_sent < target_updates:
                db.execute(f"INSERT INTO {other_table} VALUES (1)")  # WAL the slot has no interest in
                assert reader.read(timeout=0.1) is None
                assert _confirmed_flush(db, options.slot_name) == expected
            assert reader.received_lsn > expected

        idle_rounds(4, initial)
        reader.confirm(commit_ends[1])
        wait_until(lambda: _confirmed_flush(db, options.slot_name) == commit_ends[1], what="confirmed_flush_lsn")
        idle_rounds(4, commit_ends[1])
        reader.confirm(commit_ends[0])  # going backwards is ignored
        idle_rounds(2, commit_ends[1])
        assert reader.confirmed_lsn == commit_ends[1]
    # Closing sends a last status update with the confirmed position, and no more.
    assert _confirmed_flush(db, options.slot_name) == commit_ends[1]


def _data_only(messages: list[PgOutputMessage]) -> list[PgOutputMessage]:
    return [m for m in messages if not isinstance(m, Relation)]


def test_reconnect_replays_exactly_the_unconfirmed_transactions(
    db: psycopg.Connection, pg_cluster: ThrowawayCluster, capture_setup: tuple[str, ReplicationOptions]
) -> None:
    table, options = capture_setup
    with LogicalReplicationReader(pg_cluster.conninfo(), options) as reader:
        _transactions(db, table, 1, 5)
        first_pass = _read_commits(reader, 5)
        confirmed = first_pass[1][-1].end_lsn  # type: ignore[union-attr]
        reader.confirm(confirmed)
        db.execute("SELECT pg_terminate_backend(%s)", (reader.backend_pid(),))

        restarted = None
        while restarted is None:
            item = reader.read(timeout=30)
            assert not isinstance(item, WalMessage) or not isinstance(item.message, Begin), "data before the restart"
            if isinstance(item, StreamRestarted):
                restarted = item
        assert restarted.start_lsn == confirmed and reader.restarts == 1
        replay = _read_commits(reader, 3)

    assert [_data_only(tx) for tx in replay] == [_data_only(tx) for tx in first_pass[2:]]
    assert isinstance(replay[0][0], Begin)
    assert isinstance(replay[0][1], Relation)  # a new session describes the relation again
    assert _confirmed_flush(db, options.slot_name) == confirmed


def test_reader_survives_a_server_restart(unique_name: str) -> None:
    with ThrowawayCluster() as cluster, psycopg.connect(cluster.conninfo(), autocommit=True) as db:
        db.execute("CREATE TABLE t (id int PRIMARY KEY, v text)")
        create_publication(db, "p", tables=[("public", "t")])
        create_logical_slot(db, "s")
        options = ReplicationOptions("s", ("p",), status_interval=0.2)
        reader = LogicalReplicationReader(cluster.conninfo(), options, reconnect=ReconnectPolicy(attempts=20, initial_delay=0.1, max_delay=1.0))
        with reader:
            _transactions(db, "t", 1, 2)
            first = _read_commits(reader, 2)
            reader.confirm(first[0][-1].end_lsn)  # type: ignore[union-attr]
            cluster.restart(mode="immediate")
            with psycopg.connect(cluster.conninfo(), autocommit=True) as db2:
                _transactions(db2, "t", 3, 1)
            items: list[object] = []
            while len([i for i in items if isinstance(i, WalMessage) and isinstance(i.message, Commit)]) < 2:
                item = reader.read(timeout=30)
                assert item is not None
                items.append(item)
        assert isinstance(items[0], StreamRestarted)
        inserted = [i.message.new_tuple[0] for i in items if isinstance(i, WalMessage) and isinstance(i.message, Insert)]
        assert inserted == ["20", "21", "30", "31"]  # the unconfirmed second transaction, then the new one


def test_missing_slot_is_reported_without_retrying(pg_cluster: ThrowawayCluster) -> None:
    options = ReplicationOptions("no_such_slot", ("p",))
    reader = LogicalReplicationReader(pg_cluster.conninfo(), options, reconnect=ReconnectPolicy(attempts=5, initial_delay=5))
    with pytest.raises(SlotNotFoundError, match='replication slot "no_such_slot" does not exist'):
        reader.start()


def test_slot_in_use_by_another_reader(
    pg_cluster: ThrowawayCluster, capture_setup: tuple[str, ReplicationOptions]
) -> None:
    _, options = capture_setup
    with LogicalReplicationReader(pg_cluster.conninfo(), options):
        second = LogicalReplicationReader(pg_cluster.conninfo(), options, reconnect=ReconnectPolicy(attempts=2, initial_delay=0.05))
        with pytest.raises(SlotInUseError, match="is active for PID"):
            second.start()


def test_missing_publication_is_an_error_not_a_reconnect(
    db: psycopg.Connection, pg_cluster: ThrowawayCluster, capture_setup: tuple[str, ReplicationOptions]
) -> None:
    table, options = capture_setup
    bad = ReplicationOptions(options.slot_name, ("no_such_publication",))
    with LogicalReplicationReader(pg_cluster.conninfo(), bad) as reader:
        _transactions(db, table, 1, 1)
        with pytest.raises(ReplicationError, match='publication "no_such_publication" does not exist') as info:
            while True:
                reader.read(timeout=30)
        assert not isinstance(info.value, ReplicationConnectionLost)
        assert info.value.sqlstate == "42704"


def test_exported_snapshot_and_stream_meet_without_gap_or_overlap(
    db: psycopg.Connection, pg_cluster: ThrowawayCluster, unique_name: str
) -> None:
    table = f"t_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, v text)")
    create_publication(db, unique_name, tables=[("public", table)])
    _transactions(db, table, 1, 3)  # rows 10..31 exist before the slot
    with ExportedSnapshotSlot(pg_cluster.conninfo(), unique_name) as slot:
        assert slot.output_plugin == "pgoutput" and slot.snapshot_name
        _transactions(db, table, 4, 2)  # rows 40..51 arrive after it
        with psycopg.connect(pg_cluster.conninfo()) as snapshot_conn:
            snapshot_conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            snapshot_conn.execute(f"SET TRANSACTION SNAPSHOT '{slot.snapshot_name}'")
            seen = [row[0] for row in snapshot_conn.execute(f"SELECT id FROM {table} ORDER BY id")]
        consistent_point = slot.consistent_point
    assert seen == [10, 11, 20, 21, 30, 31]
    options = ReplicationOptions(unique_name, (unique_name,))
    with LogicalReplicationReader(pg_cluster.conninfo(), options, start_lsn=consistent_point) as reader:
        streamed = [m for tx in _read_commits(reader, 2) for m in tx if isinstance(m, Insert)]
    assert [int(m.new_tuple[0]) for m in streamed] == [40, 41, 50, 51]
    drop_slot(db, unique_name, wait=30)


def test_exported_snapshot_slot_reports_existing_slot(db: psycopg.Connection, pg_cluster: ThrowawayCluster, unique_name: str) -> None:
    create_logical_slot(db, unique_name)
    with pytest.raises(ReplicationError, match=f"cannot create slot '{unique_name}': it already exists"):
        ExportedSnapshotSlot(pg_cluster.conninfo(), unique_name)
    db.execute("SELECT pg_drop_replication_slot(%s)", (unique_name,))
