"""Incremental snapshots through the path users run: ``sparkcdc run`` (the ``postgres-cdc`` Spark
source writing topic files), here ``--once`` (Spark's ``availableNow``).

The signal is in the signal table before the run starts; the run must not stop before the snapshot
it asks for is complete, although each chunk's window lies beyond the WAL position ``--once``
aimed at when it started.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkcdc.postgres import drop_slot

from ..support.incremental import KEYS, create_tables, reads_twice, replay, send_signal, table_rows
from .support import checkpoint_batches, checkpoint_offset, events_of, incremental_properties, output_lines, run_once

ROWS = {"a": 120, "b": 75}


@pytest.fixture
def name(db, unique_name):
    create_tables(db, unique_name, rows_a=ROWS["a"], rows_b=ROWS["b"])
    yield unique_name
    drop_slot(db, unique_name, wait=30)
    db.execute(f'DROP PUBLICATION IF EXISTS "{unique_name}"')


@pytest.mark.slow
def test_once_completes_a_signalled_incremental_snapshot(spark, db, pg_cluster, name, tmp_path: Path) -> None:
    props = incremental_properties(pg_cluster, name, chunk_size=40)
    output, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    run_once(props, output, checkpoint)  # creates the slot: nothing to emit yet (no_data)
    assert output_lines(output) == []
    send_signal(db, name, "sig-1", "execute-snapshot", {"data-collections": [f"public.{name}_a", f"public.{name}_b"]})
    db.execute(f"UPDATE {name}_a SET v = 'changed' WHERE id = 7")  # a change in the same run, before the snapshot

    summary = run_once(props, output, checkpoint)

    assert checkpoint_offset(checkpoint, checkpoint_batches(checkpoint, "commits")[-1]).get("incremental") is None, \
        "the run stopped before the snapshot completed"

    lines = output_lines(output)
    for table, keys in KEYS.items():
        events = events_of(lines, name, table)
        reads = [e for e in events if e is not None and e["op"] == "r"]
        assert len(reads) == ROWS[table] and all(e["source"]["snapshot"] == "incremental" for e in reads)
        assert all(e["source"]["snapshot"] in ("false", None) for e in events if e is not None and e["op"] != "r")
        assert not reads_twice(events, keys), "a row was read twice"
        assert replay(events, keys) == table_rows(db, f"{name}_{table}", keys)
    # 120 + 75 rows in chunks of 40: at least 3 + 2 batches, one chunk each, in this one run.
    assert summary.batches >= 5  # type: ignore[attr-defined]
    assert {e["op"] for e in events_of(lines, name, "a") if e is not None} == {"u", "r"}
