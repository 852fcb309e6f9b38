"""Partitioned tables through the postgres-cdc source, on the topics Debezium 3.6.3 uses.

One pipeline captures a partition named in ``table.include.list`` (its own topic) and a partition
root published with ``publish.via.partition.root`` (the root's topic, the snapshot reading the root
once); tests/conformance/test_partition_conformance.py shows Debezium doing the same.
"""

from __future__ import annotations

from pathlib import Path

import psycopg

from sparkcdc.postgres import drop_slot

from .support import output_lines, payload, properties, run_once


def _partitioned(db: psycopg.Connection, name: str) -> None:
    db.execute(f"CREATE TABLE {name} (id int NOT NULL, region text NOT NULL, v text, PRIMARY KEY (id, region)) PARTITION BY LIST (region)")
    db.execute(f"CREATE TABLE {name}_a PARTITION OF {name} FOR VALUES IN ('a')")
    db.execute(f"CREATE TABLE {name}_b PARTITION OF {name} FOR VALUES IN ('b')")
    db.execute(f"INSERT INTO {name} VALUES (1, 'a', 'x'), (2, 'b', 'y')")


def _events(output: Path) -> list[tuple[str, str, int]]:
    """(topic, op, id) of every change event, in commit order."""
    events = []
    for line in output_lines(output):
        value = payload(line)
        if value is not None and value.get("op") in ("r", "c", "u", "d"):
            events.append((line["topic"], value["op"], (value["after"] or value["before"])["id"]))
    return events


def test_partition_and_partition_root_in_snapshot_and_stream(spark, db, pg_cluster, unique_name: str, tmp_path: Path) -> None:
    leaf_parent, root = f"lp_{unique_name}", f"rt_{unique_name}"
    _partitioned(db, leaf_parent)
    _partitioned(db, root)
    props = properties(
        pg_cluster, unique_name, [f"public.{leaf_parent}_a", f"public.{root}"], **{"publish.via.partition.root": "true"}
    )
    output, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    leaf_topic, root_topic = f"srv.public.{leaf_parent}_a", f"srv.public.{root}"

    run_once(props, output, checkpoint)
    assert _events(output) == [(leaf_topic, "r", 1), (root_topic, "r", 1), (root_topic, "r", 2)]

    for table in (leaf_parent, root):
        db.execute(f"INSERT INTO {table} VALUES (3, 'a', 'z'), (4, 'b', 'w')")
        db.execute(f"UPDATE {table} SET v = 'q' WHERE id IN (1, 2)")
        db.execute(f"DELETE FROM {table} WHERE id IN (3, 4)")
    run_once(props, output, checkpoint)
    assert _events(output)[3:] == [
        # Only the listed partition of the first table; its sibling (ids 2 and 4) is not captured.
        (leaf_topic, "c", 3), (leaf_topic, "u", 1), (leaf_topic, "d", 3),
        # Every partition of the root, under the root's name.
        (root_topic, "c", 3), (root_topic, "c", 4), (root_topic, "u", 1), (root_topic, "u", 2),
        (root_topic, "d", 3), (root_topic, "d", 4),
    ]
    assert {path.name for path in output.iterdir() if path.is_dir() and path.name.startswith("srv.public.")} == {leaf_topic, root_topic}
    drop_slot(db, unique_name, wait=30)
