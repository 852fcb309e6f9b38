"""An incremental snapshot through ``sparkcdc run``, killed with SIGKILL again and again.

A writer changes the snapshotted tables the whole time (inserts, updates, deletes of keys inside and
outside the chunk being read). The run is killed at random moments while the snapshot runs: between
batches, while a chunk's batch is in flight (its key range already fixed in Spark's offset log), and
between the driver writing a window's watermarks and Spark logging the offset. Each time the run is
restarted from the same checkpoint. After every kill no row has been read twice in the committed
output; at the end, a last ``--once`` run completes the snapshot and the committed output, replayed
onto empty tables, equals the source tables.
"""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import psycopg
import pytest

from sparkcdc.postgres import drop_slot, get_slot

from ..support.incremental import KEYS, create_tables, reads_twice, replay, send_signal, table_rows
from ..support.waiting import wait_until
from .support import (
    checkpoint_batches,
    checkpoint_offset,
    events_of,
    incremental_properties,
    kills_for,
    output_lines,
    server_now,
    start_run,
)

KILLS = 6
ROWS = 3000  # per table, in chunks of CHUNK rows (fewer as the writer deletes): one chunk a micro-batch
CHUNK = 150


def _last_chunk_batch(checkpoint: Path) -> int:
    """The last batch in the offset log whose offset carries a chunk (-1: none). Spark keeps the last
    100 batches of the log (spark.sql.streaming.minBatchesToRetain): an older one listed here may be
    purged before it is read (a full run saw it), and is passed over."""
    for batch in reversed(checkpoint_batches(checkpoint, "offsets")):
        try:
            incremental = checkpoint_offset(checkpoint, batch).get("incremental")
        except FileNotFoundError:
            continue
        if incremental and incremental.get("chunk"):
            return batch
    return -1


def _in_flight(checkpoint: Path) -> bool:
    """A chunk's batch is logged (its key range fixed) and not committed: it is being read."""
    offsets, commits = checkpoint_batches(checkpoint, "offsets"), checkpoint_batches(checkpoint, "commits")
    return bool(offsets) and (not commits or offsets[-1] > commits[-1]) and _last_chunk_batch(checkpoint) == offsets[-1]


def _streaming(db: psycopg.Connection, slot: str, since: object) -> bool:
    """A walsender started after ``since`` (by a task of the run started then) holds the slot: a batch is being read."""
    row = db.execute(
        "SELECT count(*) FROM pg_replication_slots s JOIN pg_stat_activity a ON a.pid = s.active_pid "
        "WHERE s.slot_name = %s AND a.backend_type = 'walsender' AND a.backend_start > %s", (slot, since),
    ).fetchone()
    return bool(row and row[0])


def _committed_lines(output: Path, checkpoint: Path) -> list[dict]:
    commits = checkpoint_batches(checkpoint, "commits")
    return output_lines(output, up_to_batch=commits[-1]) if commits else []


def _check_no_read_twice(output: Path, checkpoint: Path, name: str) -> None:
    lines = _committed_lines(output, checkpoint)
    for table, keys in KEYS.items():
        twice = reads_twice(events_of(lines, name, table), keys)
        assert not twice, f"rows of {name}_{table} read twice in the committed output: {twice[:10]}"


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_sigkill_during_an_incremental_snapshot(db: psycopg.Connection, pg_cluster, pg_major: str, unique_name: str,
                                                tmp_path: Path) -> None:
    kills = kills_for(pg_major, KILLS)
    began = time.monotonic()
    name = unique_name
    create_tables(db, name, rows_a=ROWS, rows_b=ROWS)
    config = tmp_path / "connector.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in incremental_properties(pg_cluster, name, chunk_size=CHUNK).items()))
    output, checkpoint, log = tmp_path / "out", tmp_path / "checkpoint", tmp_path / "runs.log"
    rnd = random.Random(20261124)

    def context() -> str:
        return log.read_text(errors="replace")[-3000:] if log.exists() else ""

    stop_writer = threading.Event()
    written = [0]

    def write() -> None:
        """Paced changes all over both tables' key ranges (and a little beyond: new keys)."""
        writes = random.Random(7)
        with psycopg.connect(pg_cluster.conninfo(), autocommit=True) as conn:
            while not stop_writer.wait(0.05):  # twenty transactions of six changes a second
                a, b = (writes.randint(1, ROWS + 300) for _ in range(2))
                with conn.transaction():
                    conn.execute(f"UPDATE {name}_a SET v = v || '+' WHERE id = %s", (a,))
                    conn.execute(f"DELETE FROM {name}_a WHERE id = %s", (writes.randint(1, ROWS + 300),))
                    conn.execute(f"INSERT INTO {name}_a VALUES (%s, 'w') ON CONFLICT (id) DO UPDATE SET v = 'w2'",
                                 (writes.randint(1, ROWS + 300),))
                    conn.execute(f"UPDATE {name}_b SET v = v + 1 WHERE k1 = %s AND k2 = %s", (b % 5, f"k{b}"))
                    deleted = writes.randint(1, ROWS + 300)
                    conn.execute(f"DELETE FROM {name}_b WHERE k1 = %s AND k2 = %s", (deleted % 5, f"k{deleted}"))
                    inserted = writes.randint(1, ROWS + 300)
                    conn.execute(f"INSERT INTO {name}_b VALUES (%s, %s, 0) ON CONFLICT (k1, k2) DO UPDATE SET v = -1",
                                 (inserted % 5, f"k{inserted}"))
                written[0] += 1

    writer = threading.Thread(target=write, daemon=True)
    run = start_run(config, output, checkpoint, log)
    kinds: list[str] = []
    try:
        wait_until(lambda: get_slot(db, name) is not None or run.process.poll() is not None, timeout=120,
                   what=f"the first run to create its slot\n{context()}")
        send_signal(db, name, "snapshot-1", "execute-snapshot", {"data-collections": [f"public.{name}_a", f"public.{name}_b"]})
        writer.start()
        for kill in range(kills):
            since = server_now(db)
            if kill:
                run = start_run(config, output, checkpoint, log)
            if kill % 2:
                # Mid-chunk: this run's task reads a chunk's batch (its range fixed in the offset log): the
                # one the last kill interrupted, read again, or a new one. A chunk's batch can commit within
                # the random pause: then wait for the next one (a few tries), so that the kill lands in one.
                for _ in range(5):
                    wait_until(lambda run=run, since=since: (_in_flight(checkpoint) and _streaming(db, name, since))
                               or run.process.poll() is not None, timeout=180, what=f"run {kill + 1} to read a chunk\n{context()}")
                    time.sleep(rnd.uniform(0.0, 0.3))
                    if _in_flight(checkpoint) or run.process.poll() is not None:
                        break
            else:
                # Once the run planned a chunk of its own (after reading an interrupted one, if any), anywhere:
                # planning, reading, publishing, committing, idle.
                before = _last_chunk_batch(checkpoint)
                wait_until(lambda run=run, before=before: _last_chunk_batch(checkpoint) > before or run.process.poll() is not None,
                           timeout=180, what=f"run {kill + 1} to plan a chunk\n{context()}")
                time.sleep(rnd.uniform(0.0, 1.5))
            assert run.process.poll() is None, f"sparkcdc run exited:\n{context()}"
            run.kill()
            kinds.append("in a chunk's batch" if _in_flight(checkpoint) else "between batches")
            commits = checkpoint_batches(checkpoint, "commits")
            print(f"kill {kill + 1}: {kinds[-1]}; {len(commits)} batches committed", flush=True)
            _check_no_read_twice(output, checkpoint, name)
            # The newest planned batch (committed or not: a kill can come before the first chunk's
            # batch commits) must still be inside the snapshot.
            planned = checkpoint_batches(checkpoint, "offsets")
            assert planned and checkpoint_offset(checkpoint, planned[-1]).get("incremental"), \
                "the snapshot completed before all the kills: make it longer"
    finally:
        stop_writer.set()
        writer.join(30)
        run.kill()
    killed = time.monotonic() - began

    final = start_run(config, output, checkpoint, log, once=True)
    assert final.wait(600) == 0, context()

    commits = checkpoint_batches(checkpoint, "commits")
    assert checkpoint_offset(checkpoint, commits[-1]).get("incremental") is None, "the snapshot did not complete"
    lines = _committed_lines(output, checkpoint)
    for table, keys in KEYS.items():
        events = events_of(lines, name, table)
        reads = [e for e in events if e is not None and e["op"] == "r"]
        assert len(reads) > ROWS // 2 and all(e["source"]["snapshot"] == "incremental" for e in reads)
        assert not reads_twice(events, keys)
        assert replay(events, keys) == table_rows(db, f"{name}_{table}", keys), f"{name}_{table} differs from its replay"
    # Windows whose watermarks were written but whose batch never reached the offset log (a kill
    # between planning and logging): the restarted run planned the chunk again in a new window.
    logged = {checkpoint_offset(checkpoint, b)["incremental"]["chunk"]["window"] for b in checkpoint_batches(checkpoint, "offsets")
              if (checkpoint_offset(checkpoint, b).get("incremental") or {}).get("chunk")}
    opened = {row[0].removesuffix("-open") for row in db.execute(f"SELECT id FROM {name}_signal WHERE type = 'snapshot-window-open'")}
    in_chunk = kinds.count("in a chunk's batch")
    print(f"{len(kinds)} kills ({in_chunk} in a chunk's batch), "
          f"{len(opened - logged)} windows planned but never logged, {len(logged)} chunks, {written[0]} writer transactions; "
          f"kills {killed:.0f} s, final run {time.monotonic() - began - killed:.0f} s", flush=True)
    assert in_chunk >= kills // 4, kinds
    # A batch killed in flight is read again by the next run, its window's snapshot gone with the killed driver;
    # to the end when that run waits for a chunk of its own (an even one) or is the last.
    reread = sum(1 for i, kind in enumerate(kinds) if kind == "in a chunk's batch" and ((i + 1) % 2 == 0 or i == kills - 1))
    assert log.read_text(errors="replace").count("reading the chunk as the table is now") >= reread > 0
    drop_slot(db, name, wait=30)
