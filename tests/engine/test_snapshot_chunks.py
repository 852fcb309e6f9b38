"""The parallel snapshot: chunk planning, chunk reading, markers, and the seam with streaming.

The sequential snapshot (``engine.core.snapshot.snapshot_records``, what the in-process connector runs,
checked against Debezium by the conformance suite) is the reference: the chunks of a snapshot, put
in ordinal order, must give exactly its records. Then the chunks are read in parallel while a
writer changes the tables, and snapshot plus stream must rebuild the tables exactly.
"""

from __future__ import annotations

import pickle
import random
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import psycopg
import pytest

from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.debezium.events import EventFactory
from sparkcdc.debezium.records import ChangeRecord
from sparkcdc.debezium.table import TableSchemaFactory
from sparkcdc.embedded_postgres import ThrowawayCluster
from sparkcdc.engine.core.filters import TableFilter
from sparkcdc.engine.core.offsets import SnapshotSpec
from sparkcdc.engine.core.snapshot import (
    MAX_SNAPSHOT_TABLES,
    ROWS_PER_CHUNK_LIMIT,
    SnapshotContext,
    snapshot_ordinal,
    snapshot_records,
)
from sparkcdc.engine.core.streaming import StreamingProcessor
from sparkcdc.engine.core.tables import TableResolver
from sparkcdc.engine.snapshot_plan import SnapshotChunk, plan_snapshot_chunks
from sparkcdc.engine.snapshot_reader import SnapshotUnavailableError, TableRewrittenError, read_snapshot_chunk
from sparkcdc.postgres import LogicalReplicationReader, ReplicationOptions, create_publication, drop_slot, get_slot
from sparkcdc.postgres.catalog import Catalog
from sparkcdc.postgres.errors import ExportedSnapshotGoneError
from sparkcdc.postgres.slots import ExportedSnapshotSlot
from sparkcdc.postgres.snapshot import SnapshotTransaction

from ..support.waiting import wait_until

RUN_ID = "00000000-0000-0000-0000-00000000c0de"


def _config(cluster: ThrowawayCluster, name: str, **overrides: str) -> ConnectorConfig:
    return ConnectorConfig({
        "database.hostname": cluster.host, "database.port": str(cluster.port), "database.user": cluster.user,
        "database.dbname": "postgres", "topic.prefix": "chunks", "slot.name": name, "publication.name": name,
        **overrides,
    })


def _plan(cluster: ThrowawayCluster, config: ConnectorConfig, slot: ExportedSnapshotSlot, tables: Sequence[tuple[str, str]],
          chunk_rows: int) -> list[SnapshotChunk]:
    with SnapshotTransaction(cluster.conninfo(), snapshot_name=slot.snapshot_name) as tx:
        spec = SnapshotSpec(f"snap-{slot.slot_name}", slot.consistent_point, 4242, 1_700_000_000_123_456, tuple(tables))
        return plan_snapshot_chunks(tx.conn, config, spec, slot.snapshot_name, chunk_rows=chunk_rows)


def _sequential(cluster: ThrowawayCluster, config: ConnectorConfig, db: psycopg.Connection, slot: ExportedSnapshotSlot,
                tables: Sequence[tuple[str, str]]) -> list[ChangeRecord]:
    """The reference: ``snapshot_records`` over one transaction, built as LocalConnector builds it."""
    factory = TableSchemaFactory(config)
    events = EventFactory(config, db.info.dbname, factory.topics)
    events.set_run_id(RUN_ID)
    resolver = TableResolver(Catalog(db), factory, TableFilter(config))
    with SnapshotTransaction(cluster.conninfo(), snapshot_name=slot.snapshot_name) as tx:
        plans = []
        for schema, table in tables:
            table_schema = resolver.for_table(schema, table)
            columns = [c.name for c in table_schema.description.columns]
            override = config.get(f"snapshot.select.statement.overrides.{schema}.{table}")
            rows = list(tx.rows(override, len(columns)) if override else tx.table_rows(schema, table, columns))
            plans.append((table_schema, rows))
        context = SnapshotContext(slot.consistent_point, 4242, 1_700_000_000_123_456)
        return list(snapshot_records(events, context, plans))


def _comparable(record: ChangeRecord) -> tuple[Any, ...]:
    value = dict(record.value)
    for wall_clock in ("ts_ms", "ts_us", "ts_ns"):
        value.pop(wall_clock)
    headers = tuple((h.name, h.value) for h in record.headers)
    return (record.topic, record.key, value, headers, record.op, record.snapshot, record.schema, record.table,
            record.lsn, record.commit_lsn, record.tx_id, record.source_ts_us)


@pytest.fixture
def snapshot_tables(db: psycopg.Connection, unique_name: str) -> dict[str, tuple[str, str]]:
    """Tables covering the chunking edge cases; autovacuum off so that dead rows stay where they are."""
    names: dict[str, tuple[str, str]] = {}

    def create(label: str, rows: int = 0, *, setup: Sequence[str] = (), analyze: bool = True) -> None:
        table = f"{label}_{unique_name}"
        names[label] = ("public", table)
        # ~240 bytes a row: about 34 rows a page, so 1000 rows span ~30 pages.
        db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, v text NOT NULL) WITH (autovacuum_enabled = false)")
        if rows:
            db.execute(f"INSERT INTO {table} SELECT g, repeat(chr(97 + g % 26), 200) || g FROM generate_series(1, {rows}) g")
        for statement in setup:
            db.execute(statement.format(t=table))
        if analyze:
            db.execute(f"ANALYZE {table}")

    create("empty_a")
    create("big", 1000)
    create("one", 1)
    create("lead_dead", 1000, setup=["DELETE FROM {t} WHERE id <= 400"], analyze=False)  # no statistics either
    create("lead_vac", 1000, setup=["DELETE FROM {t} WHERE id <= 400", "VACUUM {t}"])
    create("tail_dead", 1000, setup=["DELETE FROM {t} WHERE id > 600"])
    create("tail_vac", 1000, setup=["DELETE FROM {t} WHERE id > 600", "VACUUM {t}"])
    create("gap", 1000, setup=["DELETE FROM {t} WHERE id BETWEEN 300 AND 700"])
    create("sparse", 1000, setup=["ANALYZE {t}", "DELETE FROM {t} WHERE id <> 500"], analyze=False)  # stale statistics
    create("ovr", 50)
    create("ovr_none", 50)
    create("empty_b")
    return names


def test_chunks_give_the_sequential_snapshot_record_for_record(
    db: psycopg.Connection, pg_cluster: ThrowawayCluster, unique_name: str, snapshot_tables: dict[str, tuple[str, str]]
) -> None:
    t = snapshot_tables
    config = _config(pg_cluster, unique_name, **{
        "snapshot.select.statement.overrides": f"public.{t['ovr'][1]},public.{t['ovr_none'][1]}",
        f"snapshot.select.statement.overrides.public.{t['ovr'][1]}": f"SELECT id, v FROM {t['ovr'][1]} WHERE id % 3 = 0 ORDER BY id DESC",
        f"snapshot.select.statement.overrides.public.{t['ovr_none'][1]}": f"SELECT id, v FROM {t['ovr_none'][1]} WHERE false",
    })
    scenarios = [
        list(t),  # everything, in creation order: empty first and last tables, override with no rows second to last
        ["empty_a", "one", "empty_b", "ovr_none"],  # the only row is the final one
        ["sparse", "empty_a", "ovr_none"],  # one row in the middle of a split table: first and last of it, and final
        ["big", "ovr_none"],  # a later table with rows that its override does not read
        ["lead_dead", "tail_dead"],
        ["one"],
        ["ovr", "big"],
        ["gap", "lead_vac", "tail_vac", "sparse", "one"],
        ["empty_a"],
    ]
    slot = ExportedSnapshotSlot(pg_cluster.conninfo(), unique_name)
    try:
        for labels in scenarios:
            tables = [t[label] for label in labels]
            chunks = _plan(pg_cluster, config, slot, tables, chunk_rows=60)
            _check_plan_shape(chunks, tables)
            per_chunk = [list(read_snapshot_chunk(config, chunk, run_id=RUN_ID)) for chunk in chunks]
            chunked = sorted((r for records in per_chunk for r in records), key=lambda r: r.ordinal)
            expected = _sequential(pg_cluster, config, db, slot, tables)
            assert [_comparable(r) for r in chunked] == [_comparable(r) for r in expected], labels
            ordinals = [r.ordinal for records in per_chunk for r in records]
            assert ordinals == sorted(set(ordinals)), "chunks, in plan order, read rows in ordinal order"
        # The edge cases really are edge cases: split tables, chunks without rows, a one-chunk empty table.
        chunks = _plan(pg_cluster, config, slot, [t[label] for label in t], chunk_rows=60)
        by_table = {label: [c for c in chunks if c.table == t[label][1]] for label in t}
        assert all(len(by_table[label]) > 5 for label in ("big", "lead_dead", "lead_vac", "tail_dead", "gap", "sparse"))
        assert [len(by_table[label]) for label in ("empty_a", "one", "ovr", "ovr_none", "empty_b")] == [1] * 5
        assert by_table["ovr"][0].query is not None
        empty_chunks = [c for c in by_table["lead_dead"] + by_table["gap"] + by_table["tail_dead"]
                        if not list(read_snapshot_chunk(config, c, run_id=RUN_ID))]
        assert len(empty_chunks) >= 6
    finally:
        slot.close()
        drop_slot(db, unique_name, wait=30)


def _check_plan_shape(chunks: list[SnapshotChunk], tables: Sequence[tuple[str, str]]) -> None:
    assert [(c.schema, c.table) for c in chunks if c.chunk_index == 0] == list(tables)
    for table_index in range(len(tables)):
        own = [c for c in chunks if c.table_index == table_index]
        assert [c.chunk_index for c in own] == list(range(len(own)))
        assert own[0].first_block == 0 and own[-1].end_block is None
        assert all(a.end_block == b.first_block for a, b in zip(own, own[1:], strict=False))


def test_max_threads_splits_a_large_table_at_least_that_many_ways(
    db: psycopg.Connection, pg_cluster: ThrowawayCluster, unique_name: str
) -> None:
    table = f"t_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, v text)")
    db.execute(f"INSERT INTO {table} SELECT g, repeat('x', 100) FROM generate_series(1, 3000) g")
    db.execute(f"ANALYZE {table}")
    slot = ExportedSnapshotSlot(pg_cluster.conninfo(), unique_name)
    try:
        tables = [("public", table)]
        assert len(_plan(pg_cluster, _config(pg_cluster, unique_name), slot, tables, chunk_rows=1500)) == 2
        threaded = _config(pg_cluster, unique_name, **{"snapshot.max.threads": "7"})
        assert len(_plan(pg_cluster, threaded, slot, tables, chunk_rows=1500)) == 7
        assert len(_plan(pg_cluster, threaded, slot, tables, chunk_rows=5000)) == 1  # one chunk's worth: not split
    finally:
        slot.close()
        drop_slot(db, unique_name, wait=30)


# -- snapshot + streaming, with concurrent writes ---------------------------------------------------

BIG_ROWS = 200_000


class _Writer(threading.Thread):
    """Inserts, updates and deletes in small transactions until stopped; counts its commits."""

    def __init__(self, conninfo: str, tables: Sequence[str]) -> None:
        super().__init__(name="snapshot-writer", daemon=True)
        self.conninfo, self.tables = conninfo, tables
        self.commits = 0
        self.error: BaseException | None = None
        self.stop = threading.Event()

    def run(self) -> None:
        rng = random.Random(7)
        next_id = BIG_ROWS + 1
        try:
            with psycopg.connect(self.conninfo, autocommit=True) as conn:
                while not self.stop.is_set():
                    with conn.transaction():
                        for _ in range(rng.randint(1, 4)):
                            table = rng.choice(self.tables)
                            action = rng.random()
                            if action < 0.4:
                                conn.execute(f"INSERT INTO {table} VALUES (%s, 0, md5(%s::text))", (next_id, next_id))
                                next_id += 1
                            elif action < 0.75:
                                conn.execute(f"UPDATE {table} SET k = k + 1, v = md5(v) WHERE id = %s", (rng.randint(1, next_id),))
                            else:
                                conn.execute(f"DELETE FROM {table} WHERE id = %s", (rng.randint(1, next_id),))
                    self.commits += 1
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc


def _checksum(conn: psycopg.Connection, table: str) -> tuple[Any, ...]:
    row = conn.execute(f"SELECT count(*), md5(string_agg(format('%s|%s|%s', id, k, v), ',' ORDER BY id)) FROM {table}").fetchone()
    assert row is not None
    return tuple(row)


def _stream_until(config: ConnectorConfig, db: psycopg.Connection, conninfo: str, start_lsn: int, end_prefix: str) -> list[ChangeRecord]:
    factory = TableSchemaFactory(config)
    events = EventFactory(config, db.info.dbname, factory.topics)
    processor = StreamingProcessor(config, TableResolver(Catalog(db), factory, TableFilter(config)), events)
    options = ReplicationOptions(config.get("slot.name") or "", (config.get("publication.name") or "",), status_interval=1.0)
    out: list[ChangeRecord] = []
    deadline = time.monotonic() + 60
    with LogicalReplicationReader(conninfo, options, start_lsn=start_lsn) as reader:
        while time.monotonic() < deadline:
            item = reader.read(timeout=1.0)
            if item is None:
                continue
            for record in processor.process(item):  # type: ignore[arg-type]
                if record.op == "m" and record.key == {"prefix": end_prefix}:
                    return out
                out.append(record)
    raise AssertionError("the end message did not arrive within 60 s")


def _replay(conn: psycopg.Connection, replicas: dict[str, str], snapshot: list[ChangeRecord], changes: list[ChangeRecord]) -> None:
    for source, replica in replicas.items():
        with conn.cursor().copy(f"COPY {replica} (id, k, v) FROM STDIN") as copy:
            for record in snapshot:
                if record.table == source:
                    after = record.value["after"]
                    copy.write_row((after["id"], after["k"], after["v"]))
    for record in changes:
        if record.value is None:
            continue  # tombstone
        replica = replicas[record.table or ""]
        if record.op == "c":
            after = record.value["after"]
            conn.execute(f"INSERT INTO {replica} VALUES (%s, %s, %s)", (after["id"], after["k"], after["v"]))
        elif record.op == "u":
            after = record.value["after"]
            cur = conn.execute(f"UPDATE {replica} SET k = %s, v = %s WHERE id = %s", (after["k"], after["v"], record.key["id"]))
            assert cur.rowcount == 1, f"update of a row the replica does not have: {record.key}"
        elif record.op == "d":
            cur = conn.execute(f"DELETE FROM {replica} WHERE id = %s", (record.key["id"],))
            assert cur.rowcount == 1, f"delete of a row the replica does not have: {record.key}"
        else:
            raise AssertionError(f"unexpected {record.op!r} record")


def test_parallel_chunks_and_streaming_meet_without_gap_or_overlap(
    db: psycopg.Connection, pg_cluster: ThrowawayCluster, unique_name: str
) -> None:
    timings: dict[str, float] = {}
    started = time.perf_counter()
    big, small_a, small_b = (f"{label}_{unique_name}" for label in ("big", "sa", "sb"))
    for table, rows in ((big, BIG_ROWS), (small_a, 300), (small_b, 20)):
        db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, k int NOT NULL, v text)")
        db.execute(f"INSERT INTO {table} SELECT g, g % 7, md5(g::text) FROM generate_series(1, {rows}) g")
        db.execute(f"ANALYZE {table}")
        db.execute(f"CREATE TABLE {table}_r (LIKE {table} INCLUDING ALL)")
    tables = [("public", big), ("public", small_a), ("public", small_b)]
    create_publication(db, unique_name, tables=tables)
    config = _config(pg_cluster, unique_name, **{"table.include.list": ",".join(f"public\\.{t}" for _, t in tables),
                                                  "snapshot.max.threads": "4"})
    timings["load"] = time.perf_counter() - started

    slot = ExportedSnapshotSlot(pg_cluster.conninfo(), unique_name)
    writer = _Writer(pg_cluster.conninfo(), [big, big, small_a, small_b])
    try:
        writer.start()
        wait_until(lambda: writer.commits >= 20 or writer.error, timeout=30, what="the writer's first commits")
        started = time.perf_counter()
        with SnapshotTransaction(pg_cluster.conninfo(), snapshot_name=slot.snapshot_name) as planning:
            spec = SnapshotSpec(uuid.uuid4().hex, slot.consistent_point, 1, time.time_ns() // 1000, tuple(tables))
            chunks = plan_snapshot_chunks(planning.conn, config, spec, slot.snapshot_name, chunk_rows=20_000)
            timings["plan"] = time.perf_counter() - started
            commits_before = writer.commits
            started = time.perf_counter()
            with ThreadPoolExecutor(max_workers=4) as pool:
                results = list(pool.map(lambda c: list(read_snapshot_chunk(config, c, run_id=RUN_ID)), chunks))
            timings["read"] = time.perf_counter() - started
            commits_during = writer.commits - commits_before
        wait_until(lambda: writer.commits >= commits_before + commits_during + 20 or writer.error, timeout=30,
                   what="more commits after the snapshot")
    finally:
        writer.stop.set()
        writer.join(30)
        slot.close()
    assert writer.error is None, writer.error
    assert commits_during > 0, "the writer committed nothing while the chunks were read"
    assert len([c for c in chunks if c.table == big]) >= 10

    end_lsn = db.execute("SELECT pg_logical_emit_message(true, 'chunks-test-end', '')").fetchone()
    assert end_lsn is not None
    def released() -> bool:
        state = get_slot(db, unique_name)
        return state is not None and not state.active

    wait_until(released, timeout=30, what="the exporting connection to release the slot")
    started = time.perf_counter()
    changes = _stream_until(config, db, pg_cluster.conninfo(), slot.consistent_point, "chunks-test-end")
    timings["stream"] = time.perf_counter() - started
    try:
        snapshot = sorted((r for records in results for r in records), key=lambda r: r.ordinal)
        keys = [(r.table, r.key["id"]) for r in snapshot]
        assert len(keys) == len(set(keys)), "a row was read by two chunks"
        assert [r.snapshot for r in snapshot].count("last") == 1 and snapshot[-1].snapshot == "last"
        assert snapshot[0].snapshot == "first"
        assert {r.lsn for r in snapshot} == {slot.consistent_point}
        started = time.perf_counter()
        _replay(db, {t: f"{t}_r" for _, t in tables}, snapshot, changes)
        timings["replay"] = time.perf_counter() - started
        for _, table in tables:
            assert _checksum(db, f"{table}_r") == _checksum(db, table), table
    finally:
        drop_slot(db, unique_name, wait=30)
    print(f"\n200k-row snapshot: {len(chunks)} chunks, {len(snapshot)} rows, {writer.commits} writer commits "
          f"({commits_during} during the read), {len(changes)} streamed records; "
          + ", ".join(f"{k} {v:.2f}s" for k, v in timings.items()))


def test_ordinals_fit_a_long_and_order_tables_chunks_and_rows() -> None:
    positions = [(0, 0, 0), (0, 0, ROWS_PER_CHUNK_LIMIT - 1), (0, 1, 0), (0, 1, 5), (1, 0, 0), (MAX_SNAPSHOT_TABLES - 1, 0, 0)]
    ordinals = [snapshot_ordinal(t, c, r, last_chunk=False) for t, c, r in positions]
    assert ordinals == sorted(ordinals) and len(set(ordinals)) == len(ordinals)
    assert max(ordinals) < 1 << 63
    assert snapshot_ordinal(0, 1, ROWS_PER_CHUNK_LIMIT * 3, last_chunk=True) < snapshot_ordinal(1, 0, 0, last_chunk=False)
    with pytest.raises(OverflowError):
        snapshot_ordinal(0, 0, ROWS_PER_CHUNK_LIMIT, last_chunk=False)  # would collide with chunk 1's rows
    with pytest.raises(OverflowError):
        snapshot_ordinal(MAX_SNAPSHOT_TABLES, 0, 0, last_chunk=True)


def test_a_chunk_survives_pickling() -> None:
    chunk = SnapshotChunk("id", "00000003-00000002-1", 10, 7, 5, "s", "t", 0, 2, 1, 3, 10, 20, (("s", "u"),), None, ("a", "b"), 16384)
    assert pickle.loads(pickle.dumps(chunk)) == chunk
    assert chunk.ctid_condition() == "ctid >= '(10,0)'::tid AND ctid < '(20,0)'::tid"
    assert replace(chunk, chunk_index=0, first_block=0).ctid_condition() == "ctid < '(20,0)'::tid"
    assert replace(chunk, chunk_index=2, end_block=None).ctid_condition() == "ctid >= '(10,0)'::tid"


# -- bad input --------------------------------------------------------------------------------------


@pytest.fixture
def split_table(db: psycopg.Connection, pg_cluster: ThrowawayCluster, unique_name: str) -> Iterator[tuple[str, ExportedSnapshotSlot]]:
    table = f"t_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, v text)")
    db.execute(f"INSERT INTO {table} SELECT g, repeat('x', 100) FROM generate_series(1, 2000) g")
    db.execute(f"ANALYZE {table}")
    slot = ExportedSnapshotSlot(pg_cluster.conninfo(), unique_name)
    try:
        yield table, slot
    finally:
        slot.close()
        drop_slot(db, unique_name, wait=30)


def test_a_chunk_whose_snapshot_is_gone_names_it(pg_cluster: ThrowawayCluster, unique_name: str,
                                                 split_table: tuple[str, ExportedSnapshotSlot]) -> None:
    table, slot = split_table
    config = _config(pg_cluster, unique_name)
    chunk = _plan(pg_cluster, config, slot, [("public", table)], chunk_rows=500)[1]
    slot.close()  # the export ends with the connection that created the slot

    def gone() -> bool:
        try:
            SnapshotTransaction(pg_cluster.conninfo(), snapshot_name=chunk.snapshot_name).close()
        except ExportedSnapshotGoneError:
            return True
        return False

    wait_until(gone, timeout=30, what="the exported snapshot to go away")
    with pytest.raises(SnapshotUnavailableError, match=chunk.snapshot_name) as caught:
        list(read_snapshot_chunk(config, chunk, run_id=RUN_ID))
    assert table in str(caught.value)
    with pytest.raises(ValueError, match="is not an exported snapshot name"):
        replace(chunk, snapshot_name="x'; DROP TABLE t; --")


def test_a_table_rewritten_after_planning_is_refused(db: psycopg.Connection, pg_cluster: ThrowawayCluster, unique_name: str,
                                                     split_table: tuple[str, ExportedSnapshotSlot]) -> None:
    table, slot = split_table
    config = _config(pg_cluster, unique_name)
    chunks = _plan(pg_cluster, config, slot, [("public", table)], chunk_rows=500)
    assert len(chunks) > 1
    db.execute(f"VACUUM FULL {table}")  # possible because the planning transaction has ended
    with pytest.raises(TableRewrittenError, match="rewritten"):
        list(read_snapshot_chunk(config, chunks[0], run_id=RUN_ID))


def test_a_partition_is_split_like_a_table_and_its_root_read_whole(
    db: psycopg.Connection, pg_cluster: ThrowawayCluster, unique_name: str
) -> None:
    """A pattern matching a root and a partition snapshots both (as Debezium does): the leaf partition
    is a plain heap cut into block ranges; the root has no heap of its own, so it is one chunk."""
    root = f"proot_{unique_name}"
    db.execute(f"CREATE TABLE {root} (id int, k int, v text NOT NULL, PRIMARY KEY (id, k)) PARTITION BY LIST (k)")
    db.execute(f"CREATE TABLE {root}_1 PARTITION OF {root} FOR VALUES IN (1) WITH (autovacuum_enabled = false)")
    db.execute(f"CREATE TABLE {root}_2 PARTITION OF {root} FOR VALUES IN (2) WITH (autovacuum_enabled = false)")
    db.execute(f"INSERT INTO {root} SELECT g, 1 + g % 2, repeat('x', 200) || g FROM generate_series(1, 1000) g")
    db.execute(f"ANALYZE {root}")
    tables = [("public", root), ("public", f"{root}_2")]
    config = _config(pg_cluster, unique_name)
    slot = ExportedSnapshotSlot(pg_cluster.conninfo(), unique_name)
    try:
        chunks = _plan(pg_cluster, config, slot, tables, chunk_rows=60)
        _check_plan_shape(chunks, tables)
        assert len([c for c in chunks if c.table == root]) == 1
        assert len([c for c in chunks if c.table == f"{root}_2"]) > 5
        chunked = sorted((r for c in chunks for r in read_snapshot_chunk(config, c, run_id=RUN_ID)), key=lambda r: r.ordinal)
        expected = _sequential(pg_cluster, config, db, slot, tables)
        assert [_comparable(r) for r in chunked] == [_comparable(r) for r in expected]
        assert [r.table for r in chunked].count(root) == 1000 and [r.table for r in chunked].count(f"{root}_2") == 500
    finally:
        slot.close()
        drop_slot(db, unique_name, wait=30)
