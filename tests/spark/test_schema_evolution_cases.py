"""Schema changes the mirror must get exactly right, one case each (docs/schema-evolution.md):

* a column added with a constant default: the rows the source already had hold the default's value
  (PostgreSQL wrote it nowhere in the WAL), in the mirror too, without reading the table again;
* a column added with a volatile default: its values for those rows are in no WAL record either, so
  an incremental snapshot the applier signals reads them again;
* a backfill (an incremental snapshot) running while the table's shape changes loses nothing;
* the strict policy and an unsafe change stop the run with an error naming the table, the column
  and the change; once the mirror has the change (made by hand), the run resumes where it stopped.
"""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest

from sparkcdc.errors import PipelineError
from sparkcdc.spark.runner import run_pipeline

from ..support.waiting import wait_until
from .support import PipelineProcess, properties

pytestmark = pytest.mark.slow


def _setup(db: psycopg.Connection, prefix: str, rows: int = 300) -> None:
    db.execute(f"CREATE TABLE {prefix}_t (id integer PRIMARY KEY, v text, n integer)")
    db.execute(f"CREATE TABLE {prefix}_signal (id varchar(64) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048))")
    db.execute(f"INSERT INTO {prefix}_t SELECT g, 'v' || g, g FROM generate_series(1, {rows}) g")
    for suffix in ("mirror", "history"):
        db.execute(f'CREATE DATABASE "{prefix}_{suffix}"')


def _targets(pg_cluster, prefix: str) -> list[tuple[str, int]]:
    base = f"postgresql://{pg_cluster.user}@{pg_cluster.host}:{pg_cluster.port}"
    return [(f"{base}/{prefix}_mirror", 1), (f"{base}/{prefix}_history", 2)]


def _props(pg_cluster, prefix: str, **overrides: str) -> dict[str, str]:
    return properties(pg_cluster, f"{prefix}_slot", [f"public.{prefix}_t"], **{
        "signal.data.collection": f"public.{prefix}_signal", "incremental.snapshot.chunk.size": "100", **overrides})


def _differences(pg_cluster, db: psycopg.Connection, prefix: str) -> list[str]:
    """How the mirror (SCD1) and the history's open versions (SCD2) differ from the source, column by column."""
    columns = [row[0] for row in db.execute(
        "SELECT attname::text FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
        (f"{prefix}_t",)).fetchall()]
    listed = ", ".join(columns)
    source = db.execute(f"SELECT {listed} FROM {prefix}_t ORDER BY id").fetchall()
    out = []
    for suffix, where in (("mirror", ""), ("history", 'WHERE "__END_AT" IS NULL')):
        with psycopg.connect(pg_cluster.conninfo(f"{prefix}_{suffix}"), autocommit=True) as conn:
            try:
                found = conn.execute(f"SELECT {listed} FROM {prefix}_t {where} ORDER BY id").fetchall()
            except psycopg.errors.UndefinedColumn as exc:
                out.append(f"{suffix}: {str(exc).strip()}")
                continue
        if found != source:
            first = next((pair for pair in zip(found, source, strict=False) if pair[0] != pair[1]), None)
            out.append(f"{suffix}: {len(found)} rows, the source {len(source)}; first difference (mirror, source): {first}")
    return out


def _signals(db: psycopg.Connection, prefix: str) -> list[dict]:
    """The execute-snapshot signals in the signal table (not the incremental snapshots' watermarks)."""
    rows = db.execute(f"SELECT data FROM {prefix}_signal WHERE type = 'execute-snapshot' ORDER BY id").fetchall()
    return [json.loads(row[0]) for row in rows]


def _run_until_equal(pg_cluster, db, prefix: str, props: dict[str, str], checkpoint: Path, runs: int = 4) -> None:
    for _ in range(runs):
        run_pipeline(props, output=None, checkpoint=checkpoint, once=True, master="local[2]", apply_to=_targets(pg_cluster, prefix))
        if not _differences(pg_cluster, db, prefix):
            return
    assert _differences(pg_cluster, db, prefix) == []


def test_rows_older_than_an_added_column_hold_what_the_source_gave_them(pg_cluster, db, tmp_path, unique_name):
    prefix = f"df{abs(hash(unique_name)) % 10**6}"
    _setup(db, prefix)
    props, checkpoint = _props(pg_cluster, prefix), tmp_path / "checkpoint"
    run_pipeline(props, output=None, checkpoint=checkpoint, once=True, master="local[2]", apply_to=_targets(pg_cluster, prefix))
    # Constant defaults: the 300 rows take them without a WAL record; one row changes after, so the
    # stream sees the table's new shape.
    db.execute(f"ALTER TABLE {prefix}_t ADD COLUMN c integer NOT NULL DEFAULT 42")
    db.execute(f"ALTER TABLE {prefix}_t ADD COLUMN d text DEFAULT 'x y'")
    db.execute(f"ALTER TABLE {prefix}_t ADD COLUMN e timestamptz DEFAULT now()")  # stable: evaluated once
    db.execute(f"UPDATE {prefix}_t SET v = 'changed', c = 1 WHERE id = 1")
    run_pipeline(props, output=None, checkpoint=checkpoint, once=True, master="local[2]", apply_to=_targets(pg_cluster, prefix))
    assert _differences(pg_cluster, db, prefix) == []
    assert _signals(db, prefix) == []  # applied in the same commit as the columns, not read again
    with psycopg.connect(pg_cluster.conninfo(f"{prefix}_mirror"), autocommit=True) as mirror:
        assert mirror.execute(f"SELECT count(*) FROM {prefix}_t WHERE c = 42 AND d = 'x y' AND e IS NOT NULL").fetchone()[0] == 299

    # A volatile default: the values were computed into the rows by a table rewrite, which logical
    # decoding does not carry; an incremental snapshot reads them again.
    db.execute(f"ALTER TABLE {prefix}_t ADD COLUMN r double precision DEFAULT random()")
    db.execute(f"UPDATE {prefix}_t SET v = 'again' WHERE id = 2")
    _run_until_equal(pg_cluster, db, prefix, props, checkpoint)
    signals = _signals(db, prefix)
    assert [s["data-collections"] for s in signals] == [[f"public.{prefix}_t"]] * 2  # one per target (mirror, history)


def test_a_backfill_running_while_the_shape_changes_loses_nothing(pg_cluster, db, tmp_path, unique_name):
    prefix = f"bf{abs(hash(unique_name)) % 10**6}"
    _setup(db, prefix, rows=2000)
    props = _props(pg_cluster, prefix, **{"snapshot.mode": "no_data"})
    with PipelineProcess(tmp_path, props, _targets(pg_cluster, prefix)) as run, \
            psycopg.connect(pg_cluster.conninfo(f"{prefix}_mirror"), autocommit=True) as mirror:
        run.start()
        db.execute(f"INSERT INTO {prefix}_signal VALUES ('backfill', 'execute-snapshot', %s)",
                   (json.dumps({"data-collections": [f"public.{prefix}_t"], "type": "incremental"}),))

        def mirrored() -> int:
            run.alive()
            exists = mirror.execute("SELECT to_regclass(%s) IS NOT NULL", (f"{prefix}_t",)).fetchone()[0]
            return mirror.execute(f"SELECT count(*) FROM {prefix}_t").fetchone()[0] if exists else 0

        wait_until(lambda: mirrored() >= 200, timeout=120, interval=0.1, what=lambda: f"the backfill to start\n{run.context()}")
        assert mirrored() < 2000, "the backfill ended before the shape changed: make it slower"
        db.execute(f"ALTER TABLE {prefix}_t ADD COLUMN extra integer DEFAULT 5")
        db.execute(f"UPDATE {prefix}_t SET n = n + 1 WHERE id % 10 = 0")
        db.execute(f"ALTER TABLE {prefix}_t RENAME COLUMN v TO w")
        db.execute(f"DELETE FROM {prefix}_t WHERE id % 97 = 0")
        db.execute(f"ALTER TABLE {prefix}_t ALTER COLUMN n TYPE bigint")
        db.execute(f"INSERT INTO {prefix}_t SELECT g, 'new' || g, g, g FROM generate_series(5001, 5100) g")
        assert mirrored() < 2000, "the backfill ended before the shape changed: make it slower"
        wait_until(lambda: not _differences(pg_cluster, db, prefix), timeout=240, interval=1.0,
                   what=lambda: f"the mirrors to equal the source: {_differences(pg_cluster, db, prefix)}\n{run.context()}")


def test_the_strict_policy_stops_naming_the_change_and_resumes_once_the_mirror_has_it(pg_cluster, db, tmp_path, unique_name):
    prefix = f"st{abs(hash(unique_name)) % 10**6}"
    _setup(db, prefix)
    props, checkpoint = _props(pg_cluster, prefix, **{"sparkcdc.apply.schema.evolution": "strict"}), tmp_path / "checkpoint"
    run_pipeline(props, output=None, checkpoint=checkpoint, once=True, master="local[2]", apply_to=_targets(pg_cluster, prefix))
    db.execute(f"ALTER TABLE {prefix}_t ADD COLUMN flag boolean")
    db.execute(f"INSERT INTO {prefix}_t VALUES (1001, 'new', 1, true)")
    with pytest.raises(PipelineError, match=rf"source table public.{prefix}_t: column flag \(boolean\) was added, and "
                                            r"sparkcdc.apply.schema.evolution is strict.*make the same change to the mirror"):
        run_pipeline(props, output=None, checkpoint=checkpoint, once=True, master="local[2]", apply_to=_targets(pg_cluster, prefix))
    with psycopg.connect(pg_cluster.conninfo(f"{prefix}_mirror"), autocommit=True) as mirror:
        assert mirror.execute(f"SELECT count(*) FROM {prefix}_t").fetchone()[0] == 300  # nothing of the batch applied
        mirror.execute(f"ALTER TABLE {prefix}_t ADD COLUMN flag boolean")  # what the user does
    with psycopg.connect(pg_cluster.conninfo(f"{prefix}_history"), autocommit=True) as history:
        history.execute(f"ALTER TABLE {prefix}_t ADD COLUMN flag boolean")
    _run_until_equal(pg_cluster, db, prefix, props, checkpoint, runs=1)


def test_an_unsafe_change_stops_naming_column_and_types_and_resumes_once_the_mirror_has_it(pg_cluster, db, tmp_path, unique_name):
    prefix = f"us{abs(hash(unique_name)) % 10**6}"
    _setup(db, prefix)
    props, checkpoint = _props(pg_cluster, prefix), tmp_path / "checkpoint"
    run_pipeline(props, output=None, checkpoint=checkpoint, once=True, master="local[2]", apply_to=_targets(pg_cluster, prefix))
    db.execute(f"UPDATE {prefix}_t SET n = n + 1 WHERE id <= 10")
    db.execute(f"ALTER TABLE {prefix}_t ALTER COLUMN v TYPE integer USING length(v)")  # text -> integer: incompatible
    db.execute(f"UPDATE {prefix}_t SET v = 7 WHERE id = 3")
    with pytest.raises(PipelineError, match=rf"source table public.{prefix}_t: column v changed type from text to integer, a "
                                            r"narrower or incompatible type .*ALTER TABLE public\.\S+ ALTER COLUMN v TYPE"):
        run_pipeline(props, output=None, checkpoint=checkpoint, once=True, master="local[2]", apply_to=_targets(pg_cluster, prefix))
    for suffix in ("mirror", "history"):
        with psycopg.connect(pg_cluster.conninfo(f"{prefix}_{suffix}"), autocommit=True) as conn:
            assert conn.execute(f"SELECT n FROM {prefix}_t WHERE id = 1").fetchone()[0] == 1  # the batch was not applied
            conn.execute(f"ALTER TABLE {prefix}_t ALTER COLUMN v TYPE integer USING length(v)")  # the user's remedy
    # The rows the batch changed before the ALTER hold what its USING made of them, which no WAL
    # record carries: the applier has the table read again.
    _run_until_equal(pg_cluster, db, prefix, props, checkpoint)
    assert [s.get("read-again") for s in _signals(db, prefix)] == [True, True]
