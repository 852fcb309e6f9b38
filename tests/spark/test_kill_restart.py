"""``sparkcdc run`` killed with SIGKILL at random moments, during the snapshot and while streaming.

After every kill the committed output has no duplicate and no gap, and the slot never moved past the
last batch Spark committed; a final run then delivers every change exactly once.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter
from pathlib import Path

import psycopg
import pytest

from sparkcdc.postgres import drop_slot, get_slot

from ..support.waiting import wait_until
from .support import checkpoint_batches, checkpoint_offset, kills_for, output_lines, payload, properties, server_now, start_run

#: Each kill costs a whole ``sparkcdc run`` start (a JVM and Spark): 7 per phase took 385 s on 15 and
#: 250 s on 18 (2026-11-28, serial), the suite's longest test; 4 (2 on 18) keeps both phases covered.
KILLS_PER_PHASE = 4


def _committed_end_lsn(checkpoint: Path) -> int | None:
    committed = checkpoint_batches(checkpoint, "commits")
    if not committed:
        return None
    return int(checkpoint_offset(checkpoint, committed[-1])["lsn"])


def _copying(db: psycopg.Connection, since: object) -> bool:
    """A snapshot task of the run started at ``since`` is reading its chunk (its COPY is running).

    A killed run's backends can outlive it for a moment; ``since`` keeps them from counting.
    """
    row = db.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'COPY%%' AND backend_start > %s",
        (since,),
    ).fetchone()
    return bool(row and row[0])


def _ids(output: Path) -> list[int]:
    """Row ids of snapshot reads and inserts, in commit order."""
    return [payload(line)["after"]["id"] for line in output_lines(output)
            if payload(line) and payload(line).get("op") in ("r", "c")]


def _check_committed_output(output: Path, checkpoint: Path, db: psycopg.Connection, slot: str) -> None:
    ids = _ids(output)
    duplicates = [i for i, n in Counter(ids).items() if n > 1]
    assert not duplicates, f"duplicated ids in the output: {duplicates[:10]}"
    assert sorted(ids) == list(range(1, len(ids) + 1)), "the committed output has a gap"
    state = get_slot(db, slot)
    committed = _committed_end_lsn(checkpoint)
    if state is not None and committed is not None and checkpoint_batches(checkpoint, "commits")[-1] >= 1:
        assert (state.confirmed_flush_lsn or 0) <= committed, "the slot passed a batch Spark had not committed"


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_sigkill_during_snapshot_and_streaming(spark, db: psycopg.Connection, pg_cluster, pg_major: str, unique_name: str,
                                               tmp_path: Path) -> None:
    kills_per_phase = kills_for(pg_major, KILLS_PER_PHASE)
    table = f"k_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, pad text)")
    db.execute(f"INSERT INTO {table} SELECT g, repeat('x', 50) FROM generate_series(1, 150000) g")
    db.execute(f"ANALYZE {table}")
    props = properties(pg_cluster, unique_name, [f"public.{table}"], **{
        "sparkcdc.snapshot.chunk.rows": "15000",
        "sparkcdc.max.batch.wal.bytes": "262144",  # short streaming batches: kills land between and inside them
    })
    config = tmp_path / "connector.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    output, checkpoint, log = tmp_path / "out", tmp_path / "checkpoint", tmp_path / "runs.log"
    rnd = random.Random(20261121)

    def context() -> str:
        return log.read_text(errors="replace")[-3000:] if log.exists() else ""

    # -- during the snapshot ---------------------------------------------------------------------
    snapshot_kills = 0
    while snapshot_kills < kills_per_phase:
        since = server_now(db)
        run = start_run(config, output, checkpoint, log)
        wait_until(lambda run=run, since=since: _copying(db, since) or 0 in checkpoint_batches(checkpoint, "commits")
                   or run.process.poll() is not None,
                   timeout=180, interval=0.02, what=f"the snapshot tasks to start\n{context()}")
        assert run.process.poll() is None, f"sparkcdc run exited:\n{context()}"
        time.sleep(rnd.uniform(0.0, 1.0))  # a random moment within the snapshot batch: this is the test's point
        during = 0 not in checkpoint_batches(checkpoint, "commits")
        run.kill()
        print(f"snapshot kill {snapshot_kills + 1}: inside the snapshot batch: {during}", flush=True)
        snapshot_kills += during
        _check_committed_output(output, checkpoint, db, unique_name)
        if not during:
            break  # the snapshot finished first (fast machine): go on with streaming kills
    assert snapshot_kills >= kills_per_phase, f"only {snapshot_kills} kills landed inside the snapshot"

    # -- while streaming, with a writer ----------------------------------------------------------
    next_id = [150001]
    stop_writer = threading.Event()

    def write() -> None:
        with psycopg.connect(pg_cluster.conninfo(), autocommit=True) as conn:
            # Paced (a few hundred rows a second, ten per transaction) so that batches stay small.
            while not stop_writer.wait(0.02):
                with conn.transaction():
                    for _ in range(10):
                        conn.execute(f"INSERT INTO {table} VALUES (%s, 'streamed')", (next_id[0],))
                        next_id[0] += 1

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    streaming_kills = 0
    try:
        while streaming_kills < kills_per_phase:
            run = start_run(config, output, checkpoint, log)
            committed_before = len(checkpoint_batches(checkpoint, "commits"))
            # Let it get into the stream: at least one more batch committed, then a random moment.
            wait_until(lambda run=run, before=committed_before: len(checkpoint_batches(checkpoint, "commits")) > before
                       or run.process.poll() is not None,
                       timeout=180, interval=0.05, what=f"a streaming batch\n{context()}")
            assert run.process.poll() is None, f"sparkcdc run exited:\n{context()}"
            time.sleep(rnd.uniform(0.0, 2.0))
            streaming_kills += 0 in checkpoint_batches(checkpoint, "commits")
            run.kill()
            print(f"streaming kill {streaming_kills}: {len(checkpoint_batches(checkpoint, 'commits'))} batches committed", flush=True)
            _check_committed_output(output, checkpoint, db, unique_name)
    finally:
        stop_writer.set()
        writer.join(30)

    # -- a final, uninterrupted run delivers everything exactly once ------------------------------
    final = start_run(config, output, checkpoint, log, once=True, summary=tmp_path / "summary.json")
    assert final.wait(600) == 0, context()
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["batches"] == len(summary["batch_durations_ms"]) >= 1 and summary["startup_seconds"] > 0
    _check_committed_output(output, checkpoint, db, unique_name)
    assert _ids(output) == list(range(1, next_id[0])), "every row exactly once, in commit order"
    assert get_slot(db, unique_name).confirmed_flush_lsn == _committed_end_lsn(checkpoint)  # type: ignore[union-attr]
    drop_slot(db, unique_name, wait=30)
