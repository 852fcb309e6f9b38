"""Partitioned tables against Debezium 3.6.3: which names the snapshot reads and the stream uses.

What the oracle does (recorded in docs/debezium-oracle-notes.md): a partition in
``table.include.list`` is a table like any other, snapshotted and streamed on its own topic; a listed
root is snapshotted once under its own name, and streamed under it only with
``publish.via.partition.root`` (without it the server sends the changes under the partitions'
names, which the include list drops, so only the snapshot shows the rows); a pattern matching the
root and its partitions snapshots every row twice, under the root and under its partition.
"""

from __future__ import annotations

from .differential import run_conformance

PREFIX = "test_server"


def _setup(p: str) -> list[str]:
    return [
        f"CREATE TABLE {p} (id int NOT NULL, region text NOT NULL, v text, PRIMARY KEY (id, region)) PARTITION BY LIST (region)",
        f"CREATE TABLE {p}_a PARTITION OF {p} FOR VALUES IN ('a')",
        f"CREATE TABLE {p}_b PARTITION OF {p} FOR VALUES IN ('b')",
        f"INSERT INTO {p} VALUES (1, 'a', 'x'), (2, 'b', 'y'), (5, 'a', 'gone')",
    ]


def _workload(p: str) -> list[str]:
    return [
        f"INSERT INTO {p} VALUES (3, 'a', 'z'), (4, 'b', 'w')",
        f"UPDATE {p} SET v = 'q' WHERE id IN (1, 2)",
        f"DELETE FROM {p} WHERE id IN (4, 5)",
    ]


def _shape(records: list) -> list[tuple[str, str | None, object]]:
    return [(r.topic, r.op, r.key_payload) for r in records]


def test_partition_in_the_include_list(debezium_oracle, pg_cluster, db, unique_name: str) -> None:
    p = f"part_{unique_name}"
    debezium, _ = run_conformance(
        debezium_oracle, pg_cluster, db, unique_name, setup=_setup(p), tables=[f"public.{p}_a"], workload=_workload(p),
    )
    topic = f"{PREFIX}.public.{p}_a"
    assert _shape(debezium) == [
        (topic, "r", {"id": 1, "region": "a"}), (topic, "r", {"id": 5, "region": "a"}),
        (topic, "c", {"id": 3, "region": "a"}), (topic, "u", {"id": 1, "region": "a"}),
        (topic, "d", {"id": 5, "region": "a"}), (topic, None, {"id": 5, "region": "a"}),
    ]


def test_root_published_via_partition_root(debezium_oracle, pg_cluster, db, unique_name: str) -> None:
    p = f"root_{unique_name}"
    debezium, _ = run_conformance(
        debezium_oracle, pg_cluster, db, unique_name, setup=_setup(p), tables=[f"public.{p}"], workload=_workload(p),
        **{"publish.via.partition.root": "true"},
    )
    assert {r.topic for r in debezium if r.topic != f"{PREFIX}.message"} == {f"{PREFIX}.public.{p}"}
    assert [r.op for r in debezium] == ["r"] * 3 + ["c", "c", "u", "u", "d", None, "d", None]


def test_root_without_publish_via_partition_root(debezium_oracle, pg_cluster, db, unique_name: str) -> None:
    """The snapshot reads the root; its streamed changes carry the partitions' names and are dropped."""
    p = f"plain_{unique_name}"
    debezium, _ = run_conformance(
        debezium_oracle, pg_cluster, db, unique_name, setup=_setup(p), tables=[f"public.{p}"], workload=_workload(p),
    )
    assert [(r.topic, r.op) for r in debezium] == [(f"{PREFIX}.public.{p}", "r")] * 3


def test_pattern_matching_root_and_partitions_via_root(debezium_oracle, pg_cluster, db, unique_name: str) -> None:
    """Root and partitions all captured: the snapshot reads each (every row twice), the stream uses the root."""
    p = f"all_{unique_name}"
    debezium, _ = run_conformance(
        debezium_oracle, pg_cluster, db, unique_name, setup=_setup(p), tables=[f"public\\.{p}(_a|_b)?"], workload=_workload(p),
        **{"publish.via.partition.root": "true"},
    )
    snapshot = [(r.topic, r.key_payload["id"]) for r in debezium if r.op == "r"]
    root, part_a, part_b = (f"{PREFIX}.public.{p}{suffix}" for suffix in ("", "_a", "_b"))
    assert snapshot == [(root, 1), (root, 5), (root, 2), (part_a, 1), (part_a, 5), (part_b, 2)]  # the root: partition by partition
    assert {r.topic for r in debezium if r.op in ("c", "u", "d")} == {root}
