"""Every ``snapshot.mode`` through Spark: what the first run and a restart emit, and the slot."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest

from sparkcdc.errors import ConfigurationError
from sparkcdc.postgres import drop_slot, get_slot

from .support import output_lines, payload, properties, run_once


def _ops(output: Path) -> list[tuple[str, int]]:
    return [(payload(line)["op"], (payload(line)["after"] or payload(line)["before"])["id"])
            for line in output_lines(output) if payload(line) and payload(line).get("op") in ("r", "c", "u", "d")]


def _last_committed_lsn(checkpoint: Path) -> int:
    batches = sorted(int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit())
    return int(json.loads((checkpoint / "offsets" / str(batches[-1])).read_text().splitlines()[-1])["lsn"])


@pytest.fixture
def table(db: psycopg.Connection, unique_name: str) -> str:
    name = f"t_{unique_name}"
    db.execute(f"CREATE TABLE {name} (id int PRIMARY KEY, v text)")
    db.execute(f"INSERT INTO {name} SELECT g, 'before' FROM generate_series(1, 3) g")
    return name


def _run(pg_cluster, unique_name: str, table: str, tmp_path: Path, mode: str, **extra: str) -> tuple[Path, Path, dict]:
    props = properties(pg_cluster, unique_name, [f"public.{table}"], **{"snapshot.mode": mode, **extra})
    output, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    run_once(props, output, checkpoint)
    return output, checkpoint, props


def test_initial_snapshots_once_then_streams(spark, db, pg_cluster, unique_name, table, tmp_path) -> None:
    output, checkpoint, props = _run(pg_cluster, unique_name, table, tmp_path, "initial")
    assert _ops(output) == [("r", 1), ("r", 2), ("r", 3)]
    # The slot starts exactly where the committed snapshot batch ends.
    assert get_slot(db, unique_name).confirmed_flush_lsn == _last_committed_lsn(checkpoint)  # type: ignore[union-attr]
    db.execute(f"INSERT INTO {table} VALUES (4, 'after')")
    run_once(props, output, checkpoint)
    assert _ops(output) == [("r", 1), ("r", 2), ("r", 3), ("c", 4)]
    drop_slot(db, unique_name, wait=30)


def test_initial_only_snapshots_and_never_streams(spark, db, pg_cluster, unique_name, table, tmp_path) -> None:
    output, checkpoint, props = _run(pg_cluster, unique_name, table, tmp_path, "initial_only")
    assert _ops(output) == [("r", 1), ("r", 2), ("r", 3)]
    db.execute(f"INSERT INTO {table} VALUES (4, 'after')")
    run_once(props, output, checkpoint)
    assert _ops(output) == [("r", 1), ("r", 2), ("r", 3)]
    assert get_slot(db, unique_name) is None, "the snapshot's slot was temporary"


def test_always_snapshots_at_every_start(spark, db, pg_cluster, unique_name, table, tmp_path) -> None:
    output, checkpoint, props = _run(pg_cluster, unique_name, table, tmp_path, "always")
    db.execute(f"INSERT INTO {table} VALUES (4, 'after')")
    run_once(props, output, checkpoint)
    assert _ops(output) == [("r", 1), ("r", 2), ("r", 3), ("r", 1), ("r", 2), ("r", 3), ("r", 4)]
    drop_slot(db, unique_name, wait=30)


def test_no_data_streams_without_a_snapshot(spark, db, pg_cluster, unique_name, table, tmp_path) -> None:
    output, checkpoint, props = _run(pg_cluster, unique_name, table, tmp_path, "no_data")
    assert _ops(output) == []
    db.execute(f"UPDATE {table} SET v = 'x' WHERE id = 2")
    run_once(props, output, checkpoint)
    assert _ops(output) == [("u", 2)]
    drop_slot(db, unique_name, wait=30)


def test_when_needed_snapshots_again_when_the_slot_is_gone(spark, db, pg_cluster, unique_name, table, tmp_path) -> None:
    output, checkpoint, props = _run(pg_cluster, unique_name, table, tmp_path, "when_needed")
    assert _ops(output) == [("r", 1), ("r", 2), ("r", 3)]
    db.execute(f"INSERT INTO {table} VALUES (4, 'after')")
    run_once(props, output, checkpoint)
    assert _ops(output)[3:] == [("c", 4)], "with its slot intact, a restart streams"
    drop_slot(db, unique_name, wait=30)
    db.execute(f"INSERT INTO {table} VALUES (5, 'lost')")
    run_once(props, output, checkpoint)
    assert _ops(output)[4:] == [("r", 1), ("r", 2), ("r", 3), ("r", 4), ("r", 5)], "a lost slot means a new snapshot"
    drop_slot(db, unique_name, wait=30)


@pytest.mark.parametrize(("data", "stream"), [("true", "false"), ("false", "true")])
def test_configuration_based(spark, db, pg_cluster, unique_name, table, tmp_path, data: str, stream: str) -> None:
    output, checkpoint, props = _run(
        pg_cluster, unique_name, table, tmp_path, "configuration_based",
        **{"snapshot.mode.configuration.based.snapshot.data": data, "snapshot.mode.configuration.based.start.stream": stream},
    )
    db.execute(f"INSERT INTO {table} VALUES (4, 'after')")
    run_once(props, output, checkpoint)
    expected = ([("r", 1), ("r", 2), ("r", 3)] if data == "true" else []) + ([("c", 4)] if stream == "true" else [])
    assert _ops(output) == expected
    drop_slot(db, unique_name, wait=30)


def test_custom_is_refused_before_connecting(pg_cluster, unique_name, tmp_path) -> None:
    with pytest.raises(ConfigurationError, match="snapshot.mode"):
        _run(pg_cluster, unique_name, "t", tmp_path, "custom")
