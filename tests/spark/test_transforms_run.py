"""Transforms in a real run: the topic files hold the transformed records, while ``apply_changes``
and the typed views read the changes as the connector made them (docs/transforms.md)."""

from __future__ import annotations

import json

import psycopg
import pytest

from sparkcdc.errors import ConfigurationError
from sparkcdc.spark.runner import run_pipeline
from sparkcdc.spark.views import TableViewError, describe_table, table_changes

from .support import properties

pytestmark = pytest.mark.slow

UNWRAP_AND_ROUTE = {
    "transforms": "unwrap,route",
    "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
    "transforms.unwrap.add.fields": "op",
    "transforms.unwrap.delete.tombstone.handling.mode": "rewrite",
    "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
    "transforms.route.regex": r"srv\.public\.(.*)",
    "transforms.route.replacement": "flat.$1",
}


def _lines(root, topic: str) -> list[dict]:
    return [json.loads(line) for path in sorted((root / topic).rglob("*.jsonl")) for line in path.read_text().splitlines()]


def test_topic_files_are_transformed_and_the_mirror_is_not(pg_cluster, db, tmp_path, unique_name) -> None:
    """Two pipelines over one table, as the refusal below asks: one writes the topic files (through
    the transforms), the other applies (before them)."""
    table = f"tr_{unique_name[-12:]}".lower()
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, name text NOT NULL, amount numeric(8,2))")
    db.execute(f"INSERT INTO {table} SELECT g, 'n' || g, g * 1.5 FROM generate_series(1, 50) g")
    mirror = f"{table}_mirror"
    db.execute(f'CREATE DATABASE "{mirror}"')
    files = properties(pg_cluster, f"{table}_f", [f"public.{table}"], **UNWRAP_AND_ROUTE)
    mirrors = properties(pg_cluster, f"{table}_m", [f"public.{table}"], **UNWRAP_AND_ROUTE)
    target = f"postgresql://{pg_cluster.user}@{pg_cluster.host}:{pg_cluster.port}/{mirror}"
    output = tmp_path / "topics"

    with pytest.raises(ConfigurationError) as caught:  # one query cannot read both sides of the transforms
        run_pipeline(files, output=output, checkpoint=tmp_path / "both", once=True, master="local[2]", apply_to=[(target, 1)])
    assert caught.value.property == "transforms" and "two pipelines" in str(caught.value)

    def both() -> None:
        run_pipeline(files, output=output, checkpoint=tmp_path / "files", once=True, master="local[2]")
        run_pipeline(mirrors, output=None, checkpoint=tmp_path / "mirror", once=True, master="local[2]", apply_to=[(target, 1)])

    both()
    db.execute(f"UPDATE {table} SET name = name || '!' WHERE id <= 10")
    db.execute(f"DELETE FROM {table} WHERE id > 45")
    db.execute(f"INSERT INTO {table} VALUES (100, 'new', NULL)")
    both()

    # The output: flat rows on the routed topic, none on the connector's own.
    assert not (output / f"srv.public.{table}").exists()
    values = [json.loads(line["value"])["payload"] for line in _lines(output, f"flat.{table}")]
    assert [v["__op"] for v in values].count("r") == 50
    assert sorted(v["id"] for v in values if v["__op"] == "u") == list(range(1, 11))
    assert sorted((v["id"], v["__deleted"]) for v in values if v["__op"] == "d") == [(i, "true") for i in range(46, 51)]
    assert {"id", "name", "amount", "__op", "__deleted"} == set(values[-1])

    # The mirror: the source's rows, as if no transform were configured.
    with psycopg.connect(pg_cluster.conninfo(mirror), autocommit=True) as m:
        mirrored = m.execute(f"SELECT id, name, amount FROM {table} ORDER BY id").fetchall()
    assert mirrored == db.execute(f"SELECT id, name, amount FROM {table} ORDER BY id").fetchall()


def test_a_view_over_transformed_columns_is_refused_naming_the_way(spark, pg_cluster, db, unique_name) -> None:
    table = f"tv_{unique_name[-12:]}".lower()
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, name text)")
    props = properties(pg_cluster, table, [f"public.{table}"], **UNWRAP_AND_ROUTE)
    view = describe_table(props, f"public.{table}")
    from sparkcdc.spark.outputs.columns import DDL_SCHEMA

    frame = spark.createDataFrame([], DDL_SCHEMA)
    with pytest.raises(TableViewError) as caught:
        table_changes(frame, view)
    assert "unwrap, route" in str(caught.value) and "sparkcdc.output.layout=changes" in str(caught.value)
