"""Notifications through ``sparkcdc run --once``: Spark source, topic-files sink, checkpoint, status.

Two runs of the command on one checkpoint: the first takes an initial snapshot (Initial Snapshot
STARTED and COMPLETED around its rows); then an execute-snapshot signal arrives and the second run
(SKIPPED: a restart takes no snapshot) reads the incremental snapshot of two small tables to its
end. The notification topic's committed lines are Debezium's records, each once, in Debezium's
sequence. The checkpoint, cut back to a batch in the middle of the snapshot, is what ``sparkcdc
status`` showed at that moment: the progress of the running incremental snapshot.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from typer.testing import CliRunner

from sparkcdc.cli.app import app
from sparkcdc.postgres import drop_slot, get_slot

from ..support.notifications import assert_debezium_shape, create_facts_tables, expected_incremental_sequence, incremental_types
from .support import output_lines, properties

TOPIC = "srv.notifications"
RUNNER = CliRunner()


@dataclass(frozen=True)
class Runs:
    name: str
    config: Path
    output: Path
    checkpoint: Path
    first_run_lines: int


def _run(runs_config: Path, output: Path, checkpoint: Path) -> None:
    result = RUNNER.invoke(app, ["run", str(runs_config), "--output", str(output), "--checkpoint", str(checkpoint),
                                 "--once", "--master", "local[2]"])
    assert result.exit_code == 0, result.output


def _notification_lines(output: Path) -> list[dict[str, Any]]:
    return [line for line in output_lines(output) if line["topic"] == TOPIC]


@pytest.fixture(scope="module")
def runs(spark, pg_cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    name = "notify_run"
    tmp = tmp_path_factory.mktemp("notifications")
    with psycopg.connect(pg_cluster.conninfo(), autocommit=True) as db:
        create_facts_tables(db, name)
        props = properties(pg_cluster, name, [f"public.{name}_a", f"public.{name}_b"], **{
            "signal.data.collection": f"public.{name}_signal", "incremental.snapshot.chunk.size": "3",
            "notification.enabled.channels": "sink", "notification.sink.topic.name": TOPIC})
        config = tmp / "connector.json"
        config.write_text(json.dumps({"name": name, "config": props}))
        output, checkpoint = tmp / "out", tmp / "checkpoint"
        _run(config, output, checkpoint)
        first = len(_notification_lines(output))
        db.execute(f"INSERT INTO {name}_signal VALUES ('sig-1', 'execute-snapshot', %s)",
                   (json.dumps({"data-collections": [f"public.{name}_a", f"public.{name}_b"]}),))
        _run(config, output, checkpoint)
        yield Runs(name, config, output, checkpoint, first)
        if get_slot(db, name) is not None:
            drop_slot(db, name, wait=30)
        db.execute(f'DROP PUBLICATION IF EXISTS "{name}"')


def test_notifications_are_committed_once_as_debezium_records(runs: Runs) -> None:
    lines = _notification_lines(runs.output)
    payloads = [assert_debezium_shape(line["key"], line["value"], line["headers"]) for line in lines]
    assert len({json.dumps(p, sort_keys=True) for p in payloads}) == len(payloads), "a notification was committed twice"
    first, second = payloads[:runs.first_run_lines], payloads[runs.first_run_lines:]
    assert [(p["aggregate_type"], p["type"]) for p in first] == [("Initial Snapshot", "STARTED"), ("Initial Snapshot", "COMPLETED")]
    assert [(p["aggregate_type"], p["type"]) for p in second[:1]] == [("Initial Snapshot", "SKIPPED")]
    assert incremental_types(second, "sig-1") == expected_incremental_sequence([4, 3])
    scans = [p["additional_data"] for p in second if p["type"] == "TABLE_SCAN_COMPLETED"]
    assert [(s["scanned_collection"], s["total_rows_scanned"], s["status"]) for s in scans] == [
        (f"public.{runs.name}_a", "10", "SUCCEEDED"), (f"public.{runs.name}_b", "7", "SUCCEEDED")]
    assert {p["additional_data"]["connector_name"] for p in payloads} == {"srv"}
    reads = [line for line in output_lines(runs.output) if line["topic"] != TOPIC and json.loads(line["value"])["payload"]["op"] == "r"]
    assert len(reads) == 17 + 17  # the initial snapshot's and the incremental snapshot's


def _cut(checkpoint: Path, to: Path, last_offset: int, last_commit: int) -> Path:
    """The checkpoint as it was when batch ``last_offset`` was planned and ``last_commit`` committed."""
    for folder, last in (("offsets", last_offset), ("commits", last_commit)):
        (to / folder).mkdir(parents=True)
        for batch in range(last + 1):
            shutil.copy(checkpoint / folder / str(batch), to / folder / str(batch))
    return to


def _status(config: Path, checkpoint: Path, *, human: bool = False) -> Any:
    result = RUNNER.invoke(app, ["status", str(config), "--checkpoint", str(checkpoint)] + ([] if human else ["--json"]),
                           env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    return result.output if human else json.loads(result.stdout)["checkpoint"]["incremental_snapshot"]


def test_status_shows_the_running_incremental_snapshot(runs: Runs, tmp_path: Path) -> None:
    a, b = f"public.{runs.name}_a", f"public.{runs.name}_b"
    offsets = {int(p.name): json.loads(p.read_text().splitlines()[-1]) for p in (runs.checkpoint / "offsets").iterdir() if p.name.isdigit()}
    # The batch that reads a's second chunk (keys after 3 up to 6).
    (batch,) = [n for n, o in offsets.items() if ((o.get("incremental") or {}).get("chunk") or {}).get("after") == ["3"]
                and o["incremental"]["chunk"]["table"] == f"{runs.name}_a"]

    reading = _status(runs.config, _cut(runs.checkpoint, tmp_path / "in_flight", batch, batch - 1))
    assert reading == {"id": "sig-1", "batch": batch, "committed": False, "tables_left": [a, b], "current_table": a,
                       "chunks_read": 1, "reading": f"chunk 1 of {a} (keys after ('3',) up to ('6',))", "last_key": "3",
                       "max_key": "10", "rows_scanned": 6, "paused": False}
    done = _status(runs.config, _cut(runs.checkpoint, tmp_path / "committed", batch, batch))
    assert done == reading | {"committed": True, "chunks_read": 2, "reading": None, "last_key": "6"}
    human = _status(runs.config, tmp_path / "committed", human=True)
    assert "Incremental snapshot sig-1" in human and re.search(r"last key read +6 *\n", human) and re.search(r"chunks read +2 *\n", human)

    assert _status(runs.config, runs.checkpoint) is None, "no incremental snapshot runs once it completed"
