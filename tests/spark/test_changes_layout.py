"""The ``changes`` layout's two block builders agree: a snapshot chunk typed a run at a time from
its text values (``chunk_blocks``) and the same chunk's records (``change_blocks``) give the same
blocks, for several chunks, a keyless table and a blocking snapshot's kind."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.debezium.descriptions import description_digest
from sparkcdc.engine.planner import ConnectorPlanner
from sparkcdc.engine.snapshot_plan import SnapshotChunk
from sparkcdc.engine.snapshot_reader import read_chunk_columns
from sparkcdc.engine.work import read_work_records
from sparkcdc.postgres import drop_slot
from sparkcdc.spark.outputs.changes import blocks as blocks_module
from sparkcdc.spark.outputs.changes.blocks import change_blocks, chunk_blocks
from sparkcdc.spark.outputs.changes.schema import CHANGES_ARROW_SCHEMA
from sparkcdc.spark.views import describe_table
from sparkcdc.spark.views.versions import view_of_description

from .support import properties


def _decoded(batches: list[pa.RecordBatch]) -> tuple[list[Any], pa.Table | None]:
    """(the block rows without their payload, the changes of every block concatenated)."""
    heads, tables = [], []
    for batch in batches:
        assert batch.schema.equals(CHANGES_ARROW_SCHEMA)
        for row in batch.to_pylist():
            tables.append(pa.ipc.open_stream(row.pop("block")).read_all())
            heads.append(row)
    return heads, pa.concat_tables(tables) if tables else None


@pytest.mark.parametrize("keyed", [True, False])
def test_chunk_blocks_equal_record_blocks(db, pg_cluster, unique_name: str, tmp_path: Path, keyed: bool) -> None:
    table = f"t_{unique_name}"
    key = "PRIMARY KEY" if keyed else ""
    db.execute(f"CREATE TABLE {table} (id bigint {key}, label text, price numeric(10,2), at timestamptz, flags boolean[], raw bytea)")
    db.execute(f"INSERT INTO {table} SELECT i, CASE WHEN i % 7 = 0 THEN NULL ELSE 'l' || i END, i / 3.0, "
               f"'2026-01-01'::timestamptz + i * interval '1 second', ARRAY[i % 2 = 0], decode(md5(i::text), 'hex') "
               f"FROM generate_series(1, 2500) i")
    if not keyed:
        db.execute(f"ALTER TABLE {table} REPLICA IDENTITY FULL")
    props = properties(pg_cluster, unique_name, [f"public.{table}"], **{
        "sparkcdc.snapshot.chunk.rows": "1000", "sparkcdc.state.location": str(tmp_path / "state")})
    config = ConnectorConfig(props)
    planner = ConnectorPlanner(config)
    try:
        start = planner.initial_offset()
        works = [w for w in planner.partitions(start, planner.latest_offset(start)) if isinstance(w, SnapshotChunk)]
        assert len(works) >= 2, "the table is read in several chunks"
        rows = 0
        for work in works:
            for kind in ("initial", "blocking"):
                typed = _decoded(list(chunk_blocks(read_chunk_columns(config, work, run_id="r"), config, kind=kind)))
                records = read_work_records(config, work, run_id="r")
                if kind != "initial":
                    records = (setattr(r, "snapshot", kind) or r for r in records)
                expected = _decoded(list(change_blocks(records, config)))
                assert typed[0] == expected[0]
                assert (typed[1] is None) == (expected[1] is None)
                if typed[1] is not None:
                    assert typed[1].equals(expected[1]), (typed[1].slice(0, 2).to_pylist(), expected[1].slice(0, 2).to_pylist())
                    rows += typed[1].num_rows if kind == "initial" else 0
        assert rows == 2500
        # Each block carries the description of the table version it was read with, and its digest:
        # the driver builds from it the view the catalog describes, without asking the catalog.
        heads = _decoded(list(chunk_blocks(read_chunk_columns(config, works[0], run_id="r"), config)))[0]
        assert {h["shape"] for h in heads} == {description_digest(heads[0]["description"])}
        described = describe_table(props, f"public.{table}")
        assert view_of_description(heads[0]["description"], props) == described
        assert [c.attnum for c in described.columns] == [1, 2, 3, 4, 5, 6]
        planner.stop()  # its snapshot transaction holds a lock the ALTER would wait for
        db.execute(f"ALTER TABLE {table} ADD COLUMN extra int DEFAULT 7")
        changed = describe_table(props, f"public.{table}")
        assert changed.column("extra").attnum == 7 and changed.column("extra").fill == 7 and changed.column("extra").fill_known
    finally:
        planner.stop()
        drop_slot(db, unique_name, wait=30)


def test_a_transaction_over_several_tables_makes_big_blocks_in_each_tables_order(db, pg_cluster, unique_name: str,
                                                                                 tmp_path: Path) -> None:
    """Changes that alternate between tables gather per table: a block per ``block_rows`` changes of
    a table, not one per run of one table (which made blocks of one change on such a workload); a
    table's changes keep their order across its blocks, and a new version of a table cuts its block."""
    a, b = f"a_{unique_name}", f"b_{unique_name}"
    for t in (a, b):
        db.execute(f"CREATE TABLE {t} (id int PRIMARY KEY, n int)")
    props = properties(pg_cluster, unique_name, [f"public.{a}", f"public.{b}"], **{
        "snapshot.mode": "no_data", "sparkcdc.state.location": str(tmp_path / "state")})
    config = ConnectorConfig(props)
    planner = ConnectorPlanner(config)
    try:
        start = planner.initial_offset()
        with db.transaction():
            for i in range(250):
                db.execute(f"INSERT INTO {a} VALUES (%s, 0)", (i,))
                db.execute(f"INSERT INTO {b} VALUES (%s, 0)", (i,))
        db.execute(f"ALTER TABLE {a} ADD COLUMN extra int")
        with db.transaction():
            for i in range(250, 300):
                db.execute(f"INSERT INTO {a} VALUES (%s, 0, 1)", (i,))
                db.execute(f"INSERT INTO {b} VALUES (%s, 0)", (i,))
        records = [r for work in planner.partitions(start, planner.latest_offset(start))
                   for r in read_work_records(config, work, run_id="r") if r.op == "c"]
        assert len(records) == 600
        heads = [row for batch in change_blocks(records, config, block_rows=100) for row in batch.to_pylist()]
        by_table: dict[str, list[Any]] = {}
        for head in heads:
            by_table.setdefault(head["table"], []).append(head)
        # a: 250 changes of its first version (3 blocks: 100, 100, 50), then 50 of its second; b: 300 in 3 blocks
        assert [h["rows"] for h in by_table[a]] == [100, 100, 50, 50]
        assert len({h["shape"] for h in by_table[a][:3]}) == 1 and by_table[a][3]["shape"] != by_table[a][0]["shape"]
        assert [h["rows"] for h in by_table[b]] == [100, 100, 100]
        for table, blocks in by_table.items():  # each table's blocks in the order of its changes
            firsts = [(h["commit_lsn"], h["lsn"], h["ordinal"]) for h in blocks]
            assert firsts == sorted(firsts), table
            expected = [(r.commit_lsn, r.lsn, r.ordinal) for r in records if r.table == table]
            assert firsts == [expected[i] for i in ((0, 100, 200, 250) if table == a else (0, 100, 200))], table
            rows = [pa.ipc.open_stream(h["block"]).read_all() for h in blocks]
            assert [p for t in rows for p in zip(*(t[c].to_pylist() for c in ("__commit_lsn", "__lsn", "__ordinal")), strict=True)] == expected
        # The changes waiting across tables are bounded: with room for one block (100 changes) across both tables,
        # every block is cut before it holds 100 (50 and 50 while both tables take turns; 25 and 75 after a's
        # new version cut its block).
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(blocks_module, "PENDING_BLOCKS", 1)
            bounded = [row for batch in change_blocks(records, config, block_rows=100) for row in batch.to_pylist()]
        assert {h["rows"] for h in bounded} == {25, 50, 75} and sum(h["rows"] for h in bounded) == 600
    finally:
        planner.stop()
        drop_slot(db, unique_name, wait=30)
