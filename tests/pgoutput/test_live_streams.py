"""The decoder on pgoutput streams captured live from the throwaway cluster, message type by type."""

from __future__ import annotations

import struct

import psycopg
import pytest

from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.debezium.events import EventFactory
from sparkcdc.debezium.table import TableSchemaFactory
from sparkcdc.engine.core.filters import TableFilter
from sparkcdc.engine.core.streaming import StreamingProcessor, UnexpectedMessageError
from sparkcdc.engine.core.tables import TableResolver
from sparkcdc.lsn import parse_lsn
from sparkcdc.pgoutput import (
    UNCHANGED_TOAST,
    Begin,
    BeginPrepare,
    Commit,
    CommitPrepared,
    Decoder,
    Delete,
    Insert,
    LogicalMessage,
    Origin,
    Prepare,
    Relation,
    ReplicaIdentity,
    RollbackPrepared,
    StreamAbort,
    StreamCommit,
    StreamPrepare,
    StreamStart,
    StreamStop,
    Truncate,
    TypeMessage,
    Update,
)
from sparkcdc.postgres import LogicalReplicationReader, ReplicationOptions, WalMessage
from sparkcdc.postgres.catalog import Catalog

from ..support.capture import kinds, of_type, read_until, slot_capture, wait_for_wal_flush


def _oid(db: psycopg.Connection, table: str) -> int:
    row = db.execute("SELECT %s::regclass::oid", (table,)).fetchone()
    assert row is not None
    return int(row[0])


def test_begin_relation_insert_commit(db: psycopg.Connection, unique_name: str) -> None:
    table = f"t_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, name text, amount numeric(10,2), created timestamptz)")
    with slot_capture(db, unique_name, [("public", table)]) as cap:
        with db.transaction():
            db.execute(f"INSERT INTO {table} VALUES (1, 'ann', 12.50, '2024-01-02 03:04:05.123456+00'), (2, NULL, NULL, NULL)")
            xid = db.execute("SELECT txid_current()").fetchone()[0]  # type: ignore[index]
        messages = cap.decoded()

    assert kinds(messages) == ["Begin", "Relation", "Insert", "Insert", "Commit"]
    begin, relation, first, second, commit = messages
    assert isinstance(begin, Begin) and begin.xid == xid
    assert isinstance(commit, Commit)
    assert begin.final_lsn == commit.commit_lsn < commit.end_lsn
    assert begin.commit_ts_us == commit.commit_ts_us
    # The commit time is "now" in Unix microseconds (the decoder moved it off the 2000-01-01 epoch).
    now_us = int(db.execute("SELECT extract(epoch from now()) * 1000000").fetchone()[0])  # type: ignore[index]
    assert abs(now_us - commit.commit_ts_us) < 60_000_000

    assert isinstance(relation, Relation)
    assert (relation.namespace, relation.name, relation.relation_id) == ("public", table, _oid(db, table))
    assert relation.replica_identity is ReplicaIdentity.DEFAULT
    assert [(c.name, c.type_oid, c.type_modifier, c.is_key) for c in relation.columns] == [
        ("id", 23, -1, True),
        ("name", 25, -1, False),
        ("amount", 1700, (10 << 16 | 2) + 4, False),
        ("created", 1184, -1, False),
    ]
    assert first == Insert(None, relation.relation_id, ("1", "ann", "12.50", "2024-01-02 03:04:05.123456+00"))
    assert second == Insert(None, relation.relation_id, ("2", None, None, None))


def test_type_message_for_user_defined_type(db: psycopg.Connection, unique_name: str) -> None:
    table, mood = f"t_{unique_name}", f"mood_{unique_name}"
    db.execute(f"CREATE TYPE {mood} AS ENUM ('sad', 'ok', 'happy')")
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, m {mood})")
    with slot_capture(db, unique_name, [("public", table)]) as cap:
        db.execute(f"INSERT INTO {table} VALUES (1, 'happy')")
        messages = cap.decoded()
    type_oid = int(db.execute("SELECT %s::regtype::oid", (mood,)).fetchone()[0])  # type: ignore[index]
    assert kinds(messages) == ["Begin", "TypeMessage", "Relation", "Insert", "Commit"]
    assert messages[1] == TypeMessage(None, type_oid, "public", mood)
    assert messages[2].columns[1].type_oid == type_oid  # type: ignore[union-attr]
    assert messages[3].new_tuple == ("1", "happy")  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("identity", "expected"),
    [
        ("DEFAULT", {"update": (None, None), "key_change": ("K", ("1", None, None)), "delete": ("K", ("2", None, None))}),
        ("FULL", {"update": ("O", ("1", "a", "x")), "key_change": ("O", ("1", "a", "y")), "delete": ("O", ("2", "b", "x"))}),
        ("INDEX", {"update": (None, None), "key_change": ("K", (None, "a", None)), "delete": ("K", (None, "b", None))}),
    ],
)
def test_update_and_delete_per_replica_identity(
    db: psycopg.Connection, unique_name: str, identity: str, expected: dict[str, tuple[str | None, tuple | None]]
) -> None:
    table = f"t_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, code text NOT NULL, note text)")
    db.execute(f"CREATE UNIQUE INDEX {table}_code ON {table} (code)")
    if identity == "INDEX":
        db.execute(f"ALTER TABLE {table} REPLICA IDENTITY USING INDEX {table}_code")
    else:
        db.execute(f"ALTER TABLE {table} REPLICA IDENTITY {identity}")
    db.execute(f"INSERT INTO {table} VALUES (1, 'a', 'x'), (2, 'b', 'x')")
    with slot_capture(db, unique_name, [("public", table)]) as cap:
        db.execute(f"UPDATE {table} SET note = 'y' WHERE id = 1")  # no key column changes
        if identity == "INDEX":
            db.execute(f"UPDATE {table} SET code = 'c' WHERE id = 1")  # the identity index column changes
        else:
            db.execute(f"UPDATE {table} SET id = 10 WHERE id = 1")  # the primary key changes
        db.execute(f"DELETE FROM {table} WHERE id = 2")
        messages = cap.decoded()

    relation = of_type(messages, Relation)[0]
    assert relation.replica_identity is {"DEFAULT": ReplicaIdentity.DEFAULT, "FULL": ReplicaIdentity.FULL,
                                         "INDEX": ReplicaIdentity.INDEX}[identity]
    key_flags = [c.is_key for c in relation.columns]
    assert key_flags == {"DEFAULT": [True, False, False], "FULL": [True, True, True], "INDEX": [False, True, False]}[identity]

    update, key_change = of_type(messages, Update)
    (delete,) = of_type(messages, Delete)
    assert (update.old_kind, update.old_tuple) == expected["update"]
    assert update.new_tuple == ("1", "a", "y")
    assert (key_change.old_kind, key_change.old_tuple) == expected["key_change"]
    assert key_change.new_tuple == (("1", "c", "y") if identity == "INDEX" else ("10", "a", "y"))
    assert (delete.old_kind, delete.old_tuple) == expected["delete"]


def test_replica_identity_nothing(db: psycopg.Connection, unique_name: str) -> None:
    """NOTHING: the Relation says so; the server refuses UPDATE/DELETE while they are published."""
    table = f"t_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, note text)")
    db.execute(f"ALTER TABLE {table} REPLICA IDENTITY NOTHING")
    with slot_capture(db, unique_name, [("public", table)]) as cap:
        db.execute(f"INSERT INTO {table} VALUES (1, 'x'), (2, 'x')")
        with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState, match="replica identity"):
            db.execute(f"UPDATE {table} SET note = 'y' WHERE id = 1")
        with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState, match="replica identity"):
            db.execute(f"DELETE FROM {table} WHERE id = 2")
        db.execute(f"ALTER PUBLICATION {cap.publication} SET (publish = 'insert, truncate')")
        db.execute(f"UPDATE {table} SET note = 'y' WHERE id = 1")
        db.execute(f"DELETE FROM {table} WHERE id = 2")
        db.execute(f"INSERT INTO {table} VALUES (3, 'z')")
        messages = cap.decoded()
    relation = of_type(messages, Relation)[0]
    assert relation.replica_identity is ReplicaIdentity.NOTHING
    assert not any(c.is_key for c in relation.columns)
    assert [m.new_tuple for m in of_type(messages, Insert)] == [("1", "x"), ("2", "x"), ("3", "z")]
    assert not of_type(messages, Update) and not of_type(messages, Delete)


def test_unchanged_toast_value(db: psycopg.Connection, unique_name: str) -> None:
    table = f"t_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, big text, small text)")
    db.execute(f"ALTER TABLE {table} ALTER COLUMN big SET STORAGE EXTERNAL")  # out of line, uncompressed
    big = "0123456789abcdef" * 1000
    db.execute(f"INSERT INTO {table} VALUES (1, %s, 'a')", (big,))
    with slot_capture(db, unique_name, [("public", table)]) as cap:
        db.execute(f"UPDATE {table} SET small = 'b' WHERE id = 1")
        db.execute(f"UPDATE {table} SET big = big || '!' WHERE id = 1")
        messages = cap.decoded()
    untouched, touched = of_type(messages, Update)
    assert untouched.new_tuple == ("1", UNCHANGED_TOAST, "b")
    assert touched.new_tuple == ("1", big + "!", "b")


def test_binary_format_tuples(db: psycopg.Connection, unique_name: str) -> None:
    table = f"t_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, big bigint, f float8, t text, b bytea, flag bool, n int)")
    with slot_capture(db, unique_name, [("public", table)], binary=True) as cap:
        db.execute(f"INSERT INTO {table} VALUES (42, -5, 1.5, 'héllo', '\\x00ff'::bytea, true, NULL)")
        messages = cap.decoded()
    (insert,) = of_type(messages, Insert)
    assert insert.new_tuple == (
        struct.pack(">i", 42),
        struct.pack(">q", -5),
        struct.pack(">d", 1.5),
        "héllo".encode(),
        b"\x00\xff",
        b"\x01",
        None,
    )


def test_transactional_and_non_transactional_messages(db: psycopg.Connection, unique_name: str) -> None:
    with slot_capture(db, unique_name, []) as cap:
        with db.transaction():
            db.execute("SELECT pg_logical_emit_message(true, 'audit', 'in a transaction')")
            xid = db.execute("SELECT txid_current()").fetchone()[0]  # type: ignore[index]
        lsn = parse_lsn(db.execute("SELECT pg_logical_emit_message(false, 'beat', '\\x00ff01'::bytea)::text").fetchone()[0])  # type: ignore[index]
        messages = cap.decoded()
    assert kinds(messages) == ["Begin", "LogicalMessage", "Commit", "LogicalMessage"]
    begin, transactional, _, plain = messages
    assert isinstance(begin, Begin) and begin.xid == xid
    assert isinstance(transactional, LogicalMessage) and transactional.transactional
    assert (transactional.prefix, transactional.content, transactional.xid) == ("audit", b"in a transaction", None)
    assert isinstance(plain, LogicalMessage) and not plain.transactional
    assert (plain.prefix, plain.content, plain.lsn) == ("beat", b"\x00\xff\x01", lsn)


def test_messages_option_off_suppresses_messages(db: psycopg.Connection, unique_name: str) -> None:
    with slot_capture(db, unique_name, [], messages=False) as cap:
        db.execute("SELECT pg_logical_emit_message(false, 'beat', 'x')")
        assert cap.decoded() == []


def test_multi_table_truncate_cascade_restart_identity(db: psycopg.Connection, unique_name: str) -> None:
    parent, child, other = f"p_{unique_name}", f"c_{unique_name}", f"o_{unique_name}"
    db.execute(f"CREATE TABLE {parent} (id serial PRIMARY KEY)")
    db.execute(f"CREATE TABLE {child} (id serial PRIMARY KEY, parent int REFERENCES {parent})")
    db.execute(f"CREATE TABLE {other} (id serial PRIMARY KEY)")
    db.execute(f"INSERT INTO {parent} DEFAULT VALUES; INSERT INTO {child} (parent) VALUES (1); INSERT INTO {other} DEFAULT VALUES")
    tables = [("public", parent), ("public", child), ("public", other)]
    with slot_capture(db, unique_name, tables) as cap:
        db.execute(f"TRUNCATE {parent}, {other} RESTART IDENTITY CASCADE")
        db.execute(f"TRUNCATE {other}")
        messages = cap.decoded()
    first, second = of_type(messages, Truncate)
    assert first.cascade and first.restart_identity and first.options == 3
    assert sorted(first.relation_ids) == sorted(_oid(db, t) for t in (parent, child, other))
    assert not second.cascade and not second.restart_identity
    assert second.relation_ids == (_oid(db, other),)
    # TRUNCATE gives the tables new relfilenodes, so their Relation messages are sent again later.
    assert {r.name for r in of_type(messages, Relation)} == {parent, child, other}


def test_origin_message(db: psycopg.Connection, pg_cluster, unique_name: str) -> None:
    table, origin = f"t_{unique_name}", f"origin_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY)")
    db.execute("SELECT pg_replication_origin_create(%s)", (origin,))
    try:
        with slot_capture(db, unique_name, [("public", table)]) as cap:
            with psycopg.connect(pg_cluster.conninfo()) as other:
                other.execute("SELECT pg_replication_origin_session_setup(%s)", (origin,))
                other.execute("SELECT pg_replication_origin_xact_setup('0/ABCDEF', now())")
                other.execute(f"INSERT INTO {table} VALUES (1)")
                other.commit()
                other.execute("SELECT pg_replication_origin_session_reset()")
                other.commit()
            messages = cap.decoded()
    finally:
        db.execute("SELECT pg_replication_origin_drop(%s)", (origin,))
    assert kinds(messages) == ["Begin", "Origin", "Relation", "Insert", "Commit"]
    assert messages[1] == Origin(0xABCDEF, origin)


def _fill(db: psycopg.Connection, table: str, start: int, count: int) -> None:
    db.execute(f"INSERT INTO {table} SELECT g, repeat('x', 200) FROM generate_series(%s::int, %s::int) g", (start, start + count - 1))


def test_streamed_transaction_commit(db: psycopg.Connection, unique_name: str) -> None:
    table = f"t_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, pad text)")
    with slot_capture(db, unique_name, [("public", table)], proto_version=2, streaming=True, work_mem="64kB") as cap:
        with db.transaction():
            _fill(db, table, 1, 3000)
            xid = db.execute("SELECT txid_current()").fetchone()[0]  # type: ignore[index]
        messages = cap.decoded()

    starts = of_type(messages, StreamStart)
    assert len(starts) >= 2, "a transaction over logical_decoding_work_mem must be streamed in several segments"
    assert starts[0].first_segment and not any(s.first_segment for s in starts[1:])
    assert all(s.xid == xid for s in starts)
    assert len(of_type(messages, StreamStop)) == len(starts)
    (commit,) = of_type(messages, StreamCommit)
    assert commit.xid == xid and commit.commit_lsn < commit.end_lsn
    assert not of_type(messages, Begin) and not of_type(messages, Commit)
    inserts = of_type(messages, Insert)
    assert [int(m.new_tuple[0]) for m in inserts] == list(range(1, 3001))
    # Inside a stream every data message (and the Relation) carries the transaction's xid.
    assert all(m.xid == xid for m in inserts)
    assert of_type(messages, Relation)[0].xid == xid
    # Framing: data only between Stream Start and Stream Stop, commit after the last stop.
    depth = 0
    for message in messages:
        if isinstance(message, StreamStart):
            assert depth == 0
            depth = 1
        elif isinstance(message, StreamStop):
            assert depth == 1
            depth = 0
        elif isinstance(message, (Insert, Relation)):
            assert depth == 1
    assert isinstance(messages[-1], StreamCommit)


def test_streamed_transaction_abort_with_subtransaction_rollback(
    db: psycopg.Connection, pg_cluster, unique_name: str
) -> None:
    """Read from one live walsender session while the transaction runs.

    PG 15 does not stream changes of a transaction it already knows to be aborted, and separate SQL
    decoding sessions re-decode from the slot's restart point, so only a continuous session shows
    deterministically what a subscriber sees.
    """
    table = f"t_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, pad text)")
    conninfo = pg_cluster.conninfo(options="-c logical_decoding_work_mem=64kB")
    options = ReplicationOptions(unique_name, (unique_name,), proto_version=2, streaming="on")
    with slot_capture(db, unique_name, [("public", table)]), LogicalReplicationReader(conninfo, options) as reader:
        with psycopg.connect(pg_cluster.conninfo()) as tx:
            _fill(tx, table, 1, 2000)
            xid = int(tx.execute("SELECT txid_current()").fetchone()[0])  # type: ignore[index]
            tx.execute("SAVEPOINT sp")
            _fill(tx, table, 5001, 2000)
            in_progress = read_until(reader, lambda m: isinstance(m, Insert) and m.new_tuple[0] == "6000")
            tx.execute("ROLLBACK TO SAVEPOINT sp")
            _fill(tx, table, 9001, 2000)
            tx.rollback()
        after = read_until(reader, lambda m: isinstance(m, StreamAbort) and m.subxid == xid)

    # While open, the top-level rows and the subtransaction's rows were streamed; each data message
    # carries the xid of its own (sub)transaction, which is what lets an abort discard them.
    assert all(s.xid == xid for s in of_type(in_progress, StreamStart))
    rows = {int(m.new_tuple[0]): m.xid for m in of_type(in_progress + after, Insert)}
    assert {x for i, x in rows.items() if i <= 2000} == {xid}
    sub_xids = {x for i, x in rows.items() if 5001 <= i <= 7000}
    assert len(sub_xids) == 1 and xid not in sub_xids
    (subxid,) = sub_xids

    aborts = of_type(in_progress + after, StreamAbort)
    # ROLLBACK TO SAVEPOINT aborts the subtransaction; the final ROLLBACK aborts what was streamed of
    # the subtransaction ROLLBACK TO re-opened (if any was), then the top-level transaction.
    assert aborts[0] == StreamAbort(xid, subxid)
    assert aborts[-1] == StreamAbort(xid, xid)
    assert all(a.xid == xid and a.subxid not in (xid, subxid) for a in aborts[1:-1])
    assert all(a.abort_lsn is None and a.abort_ts_us is None for a in aborts)  # v4-only fields
    assert not of_type(in_progress + after, StreamCommit)


def _prepare_commit_and_rollback(db: psycopg.Connection, table: str, unique_name: str) -> list[tuple[int, str]]:
    """Two prepared transactions inserting 1 and 2; the first committed, the second rolled back.

    Returns their (xid, gid)."""
    prepared = []
    for row in (1, 2):
        gid = f"gid-{unique_name}-{row}"
        db.execute("BEGIN")
        db.execute(f"INSERT INTO {table} VALUES ({row})")
        prepared.append((int(db.execute("SELECT txid_current()").fetchone()[0]), gid))  # type: ignore[index]
        db.execute(f"PREPARE TRANSACTION '{gid}'")
    db.execute(f"COMMIT PREPARED '{prepared[0][1]}'")
    db.execute(f"ROLLBACK PREPARED '{prepared[1][1]}'")
    return prepared


def _assert_prepared_committed_and_rolled_back(messages: list, prepared: list[tuple[int, str]]) -> None:
    """The messages of :func:`_prepare_commit_and_rollback`, field by field."""
    assert kinds(messages) == [
        "BeginPrepare", "Relation", "Insert", "Prepare",
        "BeginPrepare", "Insert", "Prepare",
        "CommitPrepared", "RollbackPrepared",
    ]
    begin1, _, insert1, prepare1, begin2, insert2, prepare2, committed, rolled_back = messages
    (xid1, gid1), (xid2, gid2) = prepared
    assert isinstance(begin1, BeginPrepare) and (begin1.xid, begin1.gid) == (xid1, gid1)
    assert isinstance(prepare1, Prepare) and (prepare1.xid, prepare1.gid) == (xid1, gid1)
    assert begin1.prepare_lsn == prepare1.prepare_lsn and begin1.end_lsn == prepare1.end_lsn
    assert isinstance(insert1, Insert) and insert1.new_tuple == ("1",)
    assert isinstance(insert2, Insert) and insert2.new_tuple == ("2",)
    assert isinstance(begin2, BeginPrepare) and begin2.gid == gid2
    assert isinstance(prepare2, Prepare) and prepare2.xid == xid2
    assert isinstance(committed, CommitPrepared) and (committed.xid, committed.gid) == (xid1, gid1)
    assert committed.commit_lsn > prepare1.end_lsn
    assert isinstance(rolled_back, RollbackPrepared) and (rolled_back.xid, rolled_back.gid) == (xid2, gid2)
    assert rolled_back.prepare_end_lsn == prepare2.end_lsn
    assert rolled_back.prepare_ts_us == prepare2.prepare_ts_us <= rolled_back.rollback_ts_us


def test_two_phase_commit_and_rollback_prepared(db: psycopg.Connection, unique_name: str) -> None:
    table = f"t_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY)")
    with slot_capture(db, unique_name, [("public", table)], proto_version=3, two_phase=True) as cap:
        prepared = _prepare_commit_and_rollback(db, table, unique_name)
        messages = cap.decoded()
    _assert_prepared_committed_and_rolled_back(messages, prepared)


def test_streamed_two_phase_transaction(db: psycopg.Connection, unique_name: str) -> None:
    table = f"t_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, pad text)")
    options = {"proto_version": 3, "two_phase": True, "streaming": True, "work_mem": "64kB"}
    with slot_capture(db, unique_name, [("public", table)], **options) as cap:
        db.execute("BEGIN")
        _fill(db, table, 1, 3000)
        xid = int(db.execute("SELECT txid_current()").fetchone()[0])  # type: ignore[index]
        db.execute(f"PREPARE TRANSACTION 'sgid-{unique_name}'")
        db.execute(f"COMMIT PREPARED 'sgid-{unique_name}'")
        messages = cap.decoded()
    (prepare,) = of_type(messages, StreamPrepare)
    assert (prepare.xid, prepare.gid) == (xid, f"sgid-{unique_name}")
    assert of_type(messages, StreamStart) and len(of_type(messages, Insert)) == 3000
    (committed,) = of_type(messages, CommitPrepared)
    assert committed.xid == xid
    assert kinds(messages)[-2:] == ["StreamPrepare", "CommitPrepared"]


def test_two_phase_slot_sends_prepared_transactions_to_a_version_1_reader(
    db: psycopg.Connection, pg_cluster, unique_name: str
) -> None:
    """A slot created with two_phase decodes prepared transactions whatever the reader asks for.

    The reader asks for protocol version 1 and no two_phase option, as sparkcdc itself does; PostgreSQL
    15 still sends Begin Prepare / Prepare / Commit Prepared / Rollback Prepared, and every message must
    decode. The streaming processor then refuses them naming the message, its LSN and the slot's two_phase.
    """
    table = f"t_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY)")
    with slot_capture(db, unique_name, [("public", table)], two_phase=True) as cap:
        prepared = _prepare_commit_and_rollback(db, table, unique_name)
        wait_for_wal_flush(db)
        rows = db.execute(
            "SELECT lsn::text, data FROM pg_logical_slot_peek_binary_changes(%s, NULL, NULL, "
            "'proto_version', '1', 'publication_names', %s)",
            (cap.slot, cap.publication),
        ).fetchall()
        decoder = Decoder(1)
        messages = [decoder.decode(bytes(data)) for _, data in rows]
        _assert_prepared_committed_and_rolled_back(messages, prepared)

        config = ConnectorConfig({
            "database.hostname": pg_cluster.host, "database.port": str(pg_cluster.port), "database.user": pg_cluster.user,
            "database.dbname": db.info.dbname, "topic.prefix": "tp", "table.include.list": f"public.{table}",
        })
        factory = TableSchemaFactory(config)
        processor = StreamingProcessor(
            config, TableResolver(Catalog(db), factory, TableFilter(config)), EventFactory(config, db.info.dbname, factory.topics)
        )
        first_lsn = rows[0][0]
        with pytest.raises(UnexpectedMessageError) as refused:
            processor.process(WalMessage(parse_lsn(first_lsn), parse_lsn(first_lsn), 0, messages[0]))
        (xid1, gid1), _ = prepared
        assert str(refused.value) == (
            f"BeginPrepare message (xid {xid1}, gid '{gid1}') at LSN {first_lsn}: the replication slot was created "
            "with two_phase, which sparkcdc never asks for; use a slot created without two_phase"
        )
