"""The schema change topic (``include.schema.changes=true``) through ``sparkcdc run`` writing topic
files: a CREATE before the snapshot's rows and one ALTER per change of the table's columns, on the
``<topic.prefix>`` topic, in order with the row changes, exactly once although the run is killed
with SIGKILL (twice, at random moments) while the table changes shape under a writer.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg
import pytest

from sparkcdc.postgres import drop_slot

from ..support.waiting import wait_until
from .support import checkpoint_batches, output_lines, payload, properties, start_run

STEPS = 16  # shape changes: ADD, RENAME, retype, DROP, four times over
KILLS = 4
ROWS_PER_STEP = 4
SNAPSHOT_ROWS = 50


def _shape_steps(table: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """(DDL, the table's columns after it as (name, type)) for each step."""
    columns = [("id", "int4"), ("v", "text")]
    steps = []
    for round_ in range(STEPS // 4):
        added, renamed = f"c{round_}", f"r{round_}"
        for ddl, after in [
            (f"ALTER TABLE {table} ADD COLUMN {added} int", [*columns, (added, "int4")]),
            (f"ALTER TABLE {table} RENAME COLUMN {added} TO {renamed}", [*columns, (renamed, "int4")]),
            (f"ALTER TABLE {table} ALTER COLUMN {renamed} TYPE bigint", [*columns, (renamed, "int8")]),
            (f"ALTER TABLE {table} DROP COLUMN {renamed}", list(columns)),
        ]:
            steps.append((ddl, after))
    return steps


def _reading(checkpoint: Path) -> bool:
    """A streaming batch is planned (in the offsets log) and not committed."""
    planned, done = checkpoint_batches(checkpoint, "offsets"), checkpoint_batches(checkpoint, "commits")
    return bool(planned) and bool(done) and planned[-1] > done[-1]


def _merged(output: Path) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """Every line of the output as (topic, its line, its value's payload), in commit order."""
    return [(line["topic"], line, payload(line)) for line in output_lines(output)]  # type: ignore[misc]


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_schema_changes_come_in_order_with_the_rows_exactly_once_across_sigkills(
    db: psycopg.Connection, pg_cluster: Any, unique_name: str, tmp_path: Path
) -> None:
    table = f"w_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, v text)")
    db.execute(f"INSERT INTO {table} SELECT g, 'snap' FROM generate_series(1, {SNAPSHOT_ROWS}) g")
    props = properties(pg_cluster, unique_name, [f"public.{table}"], **{
        "include.schema.changes": "true",
        "sparkcdc.max.batch.wal.bytes": "32768",  # short batches: kills land between and inside them
    })
    config = tmp_path / "connector.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    output, checkpoint, log = tmp_path / "out", tmp_path / "checkpoint", tmp_path / "runs.log"
    rnd = random.Random(20261127)
    steps = _shape_steps(table)

    def context() -> str:
        return log.read_text(errors="replace")[-3000:] if log.exists() else ""

    next_id = [SNAPSHOT_ROWS + 1]
    written = threading.Event()
    failure: list[BaseException] = []

    def write() -> None:
        try:
            with psycopg.connect(pg_cluster.conninfo(), autocommit=True) as conn:
                for ddl, after in steps:
                    conn.execute(ddl)
                    names = [name for name, _ in after]
                    for _ in range(ROWS_PER_STEP):
                        values = [next_id[0], "streamed"] + [next_id[0]] * (len(names) - 2)
                        conn.execute(f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join(['%s'] * len(names))})", values)
                        next_id[0] += 1
                    time.sleep(1.0)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            failure.append(exc)
        finally:
            written.set()

    run = start_run(config, output, checkpoint, log)
    try:
        wait_until(lambda: 0 in checkpoint_batches(checkpoint, "commits") or run.process.poll() is not None,
                   timeout=300, interval=0.05, what=f"the snapshot batch to commit\n{context()}")
        assert run.process.poll() is None, f"sparkcdc run exited:\n{context()}"
        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        inside = 0  # kills that left a planned batch uncommitted (read again by the next run)
        for kill in range(KILLS):
            # one more batch committed (the one the last kill interrupted, read again), then the next one
            # planned and not yet committed, then a random moment: inside it, mostly
            committed = len(checkpoint_batches(checkpoint, "commits"))
            wait_until(lambda run=run, before=committed: (len(checkpoint_batches(checkpoint, "commits")) > before
                                                          and _reading(checkpoint)) or run.process.poll() is not None,
                       timeout=300, interval=0.01, what=f"a streaming batch\n{context()}")
            assert run.process.poll() is None, f"sparkcdc run exited:\n{context()}"
            time.sleep(rnd.uniform(0.0, 0.3))
            run.kill()
            planned, done = checkpoint_batches(checkpoint, "offsets"), checkpoint_batches(checkpoint, "commits")
            inside += bool(planned) and (not done or planned[-1] > done[-1])
            alters = sum(topic == "srv" for topic, _, _ in _merged(output)) - 1
            print(f"kill {kill + 1}: {len(done)} batches committed, {len(planned)} planned, {alters} ALTER records out; "
                  f"writer done: {written.is_set()}", flush=True)
            run = start_run(config, output, checkpoint, log)
        assert inside >= 2, f"only {inside} kills landed inside a batch"
        writer.join(120)
        assert written.is_set() and not failure, failure
        run.kill()
        final = start_run(config, output, checkpoint, log, once=True)
        assert final.wait(600) == 0, context()
    finally:
        run.kill()

    lines = _merged(output)
    schema_lines = [(line, value) for topic, line, value in lines if topic == "srv"]
    kinds = [value["tableChanges"][0]["type"] for _, value in schema_lines]
    assert kinds == ["CREATE"] + ["ALTER"] * STEPS, "one CREATE (the snapshot's) and one ALTER per shape change, each once"
    positions = [(line["commit_lsn"], line["lsn"], line["ordinal"]) for topic, line, _ in lines]
    assert not [p for p, n in Counter(positions).items() if n > 1], "no record twice"
    shapes = [[(c["name"], c["typeName"]) for c in value["tableChanges"][0]["table"]["columns"]] for _, value in schema_lines]
    assert shapes == [[("id", "int4"), ("v", "text")]] + [after for _, after in steps]
    for _, value in schema_lines:
        assert value["databaseName"] == "postgres" and value["schemaName"] == "public" and value["ddl"] is None
        assert value["tableChanges"][0]["id"] == f'"postgres"."public"."{table}"'
        assert value["tableChanges"][0]["table"]["primaryKeyColumnNames"] == ["id"]
    assert schema_lines[0][1]["source"]["snapshot"] == "first" and schema_lines[1][1]["source"]["snapshot"] == "false"

    # In commit order, every row has the columns of the last schema change record before it.
    current: list[str] | None = None
    ids = []
    for topic, _, value in lines:
        if topic == "srv":
            current = [c["name"] for c in value["tableChanges"][0]["table"]["columns"]]
        elif topic == f"srv.public.{table}" and value is not None and value["op"] in ("r", "c"):
            assert current is not None and list(value["after"]) == current, (value["after"], current)
            ids.append(value["after"]["id"])
    assert ids == list(range(1, next_id[0])), "every row exactly once, in commit order"
    drop_slot(db, unique_name, wait=30)
