"""End to end through Spark: a parallel snapshot under concurrent writes, then streaming; replaying
every emitted record in order onto empty tables reproduces every source table exactly."""

from __future__ import annotations

import random
import threading
from pathlib import Path

import psycopg

from sparkcdc.spark.runner import run_pipeline

from ..support.waiting import wait_until
from .support import output_lines, payload, properties

TABLES = {
    "big": "id int PRIMARY KEY, grp int NOT NULL, label text, flag boolean",
    "small_a": "id int PRIMARY KEY, grp int NOT NULL, label text, flag boolean",
    "small_b": "id bigint PRIMARY KEY, grp int NOT NULL, label text, flag boolean",
}


def _writer(conninfo: str, prefix: str, stop: threading.Event, counts: dict[str, int]) -> None:
    rnd = random.Random(7)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        next_id = {"big": 200_001, "small_a": 1_001, "small_b": 501}
        while not stop.is_set():
            table = rnd.choice(list(TABLES))
            name = f"{prefix}_{table}"
            action = rnd.random()
            with conn.transaction():
                if action < 0.4:
                    conn.execute(f"INSERT INTO {name} VALUES (%s, %s, %s, %s)", (next_id[table], rnd.randint(0, 9), "new", True))
                    next_id[table] += 1
                elif action < 0.8:
                    conn.execute(f"UPDATE {name} SET label = %s, grp = grp + 1 WHERE id = %s",
                                 (f"u{rnd.randint(0, 99)}", rnd.randint(1, next_id[table])))
                else:
                    conn.execute(f"DELETE FROM {name} WHERE id = %s", (rnd.randint(1, next_id[table]),))
            counts["transactions"] = counts.get("transactions", 0) + 1


def _replay(lines: list[dict], tables: list[str]) -> dict[str, dict[object, tuple]]:
    state: dict[str, dict[object, tuple]] = {t: {} for t in tables}
    for line in lines:
        event = payload(line)
        if event is None or "op" not in event or event["op"] == "m":
            continue
        table = event["source"]["table"]
        if event["op"] == "t":
            state[table].clear()
        elif event["op"] == "d":
            state[table].pop(event["before"]["id"], None)
        else:
            row = event["after"]
            state[table][row["id"]] = (row["grp"], row["label"], row["flag"])
    return state


def test_parallel_snapshot_under_concurrent_writes_then_streaming(
    spark, db: psycopg.Connection, pg_cluster, unique_name: str, tmp_path: Path
) -> None:
    prefix = f"c{len(unique_name)}_{unique_name[-4:].strip('_')}"
    names = [f"{prefix}_{t}" for t in TABLES]
    for table, columns in TABLES.items():
        db.execute(f"CREATE TABLE {prefix}_{table} ({columns})")
    db.execute(f"INSERT INTO {prefix}_big SELECT g, g % 10, 'row ' || g, g % 3 = 0 FROM generate_series(1, 200000) g")
    db.execute(f"INSERT INTO {prefix}_small_a SELECT g, g % 10, 'a' || g, false FROM generate_series(1, 1000) g")
    db.execute(f"INSERT INTO {prefix}_small_b SELECT g, g % 10, 'b' || g, true FROM generate_series(1, 500) g")
    db.execute(f"ANALYZE {prefix}_big")

    props = properties(pg_cluster, unique_name, [f"public.{n}" for n in names],
                       **{"sparkcdc.snapshot.chunk.rows": "40000"})
    output, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    stop_writer, stop_query = threading.Event(), threading.Event()
    counts: dict[str, int] = {}
    result: dict[str, object] = {}
    writer = threading.Thread(target=_writer, args=(pg_cluster.conninfo(), prefix, stop_writer, counts), daemon=True)
    writer.start()

    def run() -> None:
        try:
            result["summary"] = run_pipeline(props, output=output, checkpoint=checkpoint, master="local[2]",
                                             stop_event=stop_query, trigger_interval="500 milliseconds")
        except Exception as exc:  # noqa: BLE001 - the test reports it
            result["error"] = exc

    query = threading.Thread(target=run, daemon=True)
    query.start()

    def snapshot_done() -> bool:
        if "error" in result:
            raise AssertionError(f"the query failed: {result['error']}")
        return any(payload(line) and payload(line)["source"].get("snapshot") == "last" for line in output_lines(output))

    wait_until(snapshot_done, timeout=300, interval=0.5, what="the snapshot")
    writes_during_snapshot = counts.get("transactions", 0)
    wait_until(lambda: counts.get("transactions", 0) > writes_during_snapshot + 50, timeout=60, what="writes while streaming")
    stop_writer.set()
    writer.join(30)
    # A last marker transaction: once its record is out, everything before it is too.
    db.execute(f"INSERT INTO {prefix}_small_a VALUES (999999, 0, 'the end', true)")

    def caught_up() -> bool:
        if "error" in result:
            raise AssertionError(f"the query failed: {result['error']}")
        return any(payload(line) and (payload(line).get("after") or {}).get("id") == 999999 for line in output_lines(output))

    wait_until(caught_up, timeout=300, interval=0.5, what="streaming to catch up")
    stop_query.set()
    query.join(120)

    lines = output_lines(output)
    markers = [payload(line)["source"]["snapshot"] for line in lines if payload(line) and payload(line)["op"] == "r"]
    assert markers.count("first") == 1 and markers.count("last") == 1
    assert markers.count("last_in_data_collection") == 2 and markers.count("first_in_data_collection") == 2
    assert writes_during_snapshot > 0, "the writer must have run while the snapshot was read"

    replayed = _replay(lines, names)
    for name in names:
        source = {row[0]: (row[1], row[2], row[3]) for row in db.execute(f"SELECT id, grp, label, flag FROM {name}")}
        assert replayed[name] == source, f"{name}: replay differs from the source"
