"""The postgres-cdc source streaming through Spark: exactly-once batches, confirm after commit."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg

from sparkcdc.postgres import get_slot

from .support import output_lines, payload, properties, run_once


def _committed_end_lsn(checkpoint: Path) -> int:
    """The source offset of the last batch Spark committed (offsets/<n> whose commits/<n> exists)."""
    committed = sorted(int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit())
    offset_line = (checkpoint / "offsets" / str(committed[-1])).read_text().splitlines()[-1]
    return int(json.loads(offset_line)["lsn"])


def test_runs_continue_from_the_checkpoint_exactly_once(
    spark, db: psycopg.Connection, pg_cluster, unique_name: str, tmp_path: Path
) -> None:
    table = f"t_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, v text)")
    props = properties(pg_cluster, unique_name, [f"public.{table}"], **{"snapshot.mode": "no_data"})
    output, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    run_once(props, output, checkpoint)  # creates the slot; nothing to stream yet
    assert output_lines(output) == []
    expected_ids = []
    for round_number in range(3):
        for i in range(round_number * 10, round_number * 10 + 10):
            db.execute(f"INSERT INTO {table} VALUES (%s, %s)", (i, f"v{i}"))
            expected_ids.append(i)
        db.execute(f"UPDATE {table} SET v = 'changed' WHERE id = %s", (round_number * 10,))
        db.execute(f"DELETE FROM {table} WHERE id = %s", (round_number * 10 + 1,))
        run_once(props, output, checkpoint)

        lines = output_lines(output)
        creates = [payload(line)["after"]["id"] for line in lines if payload(line) and payload(line)["op"] == "c"]
        assert creates == expected_ids, "every insert exactly once, in commit order"
        assert sum(1 for line in lines if payload(line) and payload(line)["op"] == "u") == round_number + 1
        assert sum(1 for line in lines if line["value"] is None) == round_number + 1  # tombstones
        # The slot never passes the end of the last committed batch.
        confirmed = get_slot(db, unique_name).confirmed_flush_lsn  # type: ignore[union-attr]
        assert confirmed is not None and confirmed <= _committed_end_lsn(checkpoint)

    # Every record's position is consistent with its value.
    for line in output_lines(output):
        if line["value"] is not None:
            assert payload(line)["source"]["lsn"] == line["lsn"]
    db.execute("SELECT pg_drop_replication_slot(%s)", (unique_name,))
