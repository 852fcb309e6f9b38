"""pgvector columns through a real SparkSession on PostgreSQL 18: the typed view's values, and
``apply_changes`` into a PostgreSQL mirror whose columns keep the source's pgvector types, a Delta
Lake table and an Iceberg table whose columns hold the typed values (``list<double>``,
``list<float>``, ``struct<dimensions, vector: map<index, double>>``): each equal to the source, in
the snapshot and after streamed inserts, updates and deletes, NULLs kept. One source and one set of
changes for every target."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest

from sparkcdc.apply.targets.iceberg import IcebergTarget
from sparkcdc.spark.apply import apply_changes
from sparkcdc.spark.source.options import options_for
from sparkcdc.spark.views import describe_table, table_changes

from .support import properties

pytestmark = pytest.mark.slow

COLUMNS = "v, h, s, v3"


def _rows(conninfo: str, table: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(conninfo, autocommit=True) as conn:
        return conn.execute(f"SELECT id, v::text, h::text, s::text, v3::text FROM {table} ORDER BY id").fetchall()


def _types(conninfo: str, table: str) -> list[tuple[str, str]]:
    with psycopg.connect(conninfo, autocommit=True) as conn:
        return conn.execute("SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
                            "WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum", (table,)).fetchall()


def _dense(text: str | None, width: type = float) -> list[float] | None:
    """``[1,2.5]`` as floats (``np.float32``: halfvec's values, exact in float32, as float32 reads them back)."""
    return None if text is None else [float(width(x)) for x in text[1:-1].split(",") if x]


def _sparse(text: str | None) -> tuple[int, dict[int, float]] | None:
    """``{1:1.5,3:-2}/5`` as (dimensions, {index: value})."""
    if text is None:
        return None
    entries, _, dimensions = text[1:].rpartition("}/")
    pairs = (entry.split(":") for entry in entries.split(",") if entry)
    return int(dimensions), {int(i): float(v) for i, v in pairs}


def _source_values(conninfo: str, table: str) -> list[tuple[Any, ...]]:
    """The source's rows as the lake mirrors hold them: vector and halfvec as lists, sparsevec as (dimensions, entries)."""
    return [(id_, _dense(v), _dense(h, np.float32), _sparse(s), _dense(v3)) for id_, v, h, s, v3 in _rows(conninfo, table)]


def _lake_values(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """A lake table's rows (Arrow ``to_pylist``: a map is a list of (key, value)) as :func:`_source_values` has them."""
    def sparse(value: dict[str, Any] | None) -> tuple[int, dict[int, float]] | None:
        return None if value is None else (value["dimensions"], dict(value["vector"]))

    return sorted((r["id"], r["v"], r["h"], sparse(r["s"]), r["v3"]) for r in rows)


def _run(writer: Any) -> None:
    query = writer.trigger(availableNow=True).start()
    query.awaitTermination(300)
    assert not query.isActive, "the query did not end within 300 s"
    assert query.exception() is None, str(query.exception())


def test_views_and_apply_carry_pgvector_values(spark, pg18_cluster, unique_name: str, tmp_path: Path) -> None:
    table = f"public.{unique_name}"
    mirror = f"{unique_name}_mirror"
    source_info = pg18_cluster.conninfo()
    with psycopg.connect(source_info, autocommit=True) as db:
        db.execute("CREATE EXTENSION IF NOT EXISTS vector")
        db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, v vector, h halfvec, s sparsevec, v3 vector(3) NOT NULL)")
        db.execute(f"INSERT INTO {table} VALUES (1, '[1,2.5,-3.25e-7]', '[1.5,0.1,65504]', '{{1:1.5,3:-2,7:0.1}}/10', '[0.1,1e38,-0]'), "
                   "(2, NULL, NULL, NULL, '[0,0,0]'), "
                   "(3, '[3.4e38,1e-45]', '[-6e-8]', '{}/5', '[1,2,3]'), "
                   "(4, '[1]', '[1]', '{64:1,128:2,192:3,256:4,320:5,384:6,448:7,512:8,576:9,640:10}/32767', '[4,5,6]')")
        db.execute(f'CREATE DATABASE "{mirror}"')
    mirror_info = pg18_cluster.conninfo(mirror)
    mirror_url = f"postgresql://{pg18_cluster.user}@{pg18_cluster.host}:{pg18_cluster.port}/{mirror}"
    delta_root, iceberg_url = tmp_path / "delta", f"iceberg+file://{tmp_path / 'iceberg'}"
    # One slot per pipeline: each target's run reads the same snapshot and the same streamed changes.
    slots = {"view": f"{unique_name}_v", "postgres": unique_name, "delta": f"{unique_name}_d", "iceberg": f"{unique_name}_i"}
    props = {what: properties(pg18_cluster, slot, [table]) for what, slot in slots.items()}

    def source(p: dict[str, str]) -> Any:
        return spark.readStream.format("postgres-cdc").options(**options_for(p)).load()

    def apply(what: str, target: str, checkpoint: str | None = None) -> None:
        _run(apply_changes(source(props[what]), target, properties=props[what], checkpoint_location=tmp_path / (checkpoint or f"ck-{what}")))

    def lakes_equal_the_source() -> None:
        """Both lake tables hold the source's values, in the types the typed view has (Iceberg: no int16, int)."""
        from deltalake import DeltaTable

        expected = _source_values(source_info, table)
        delta = DeltaTable(str(delta_root / "public" / unique_name))
        assert [(f["name"], f["type"]) for f in json.loads(delta.schema().to_json())["fields"]][1:] == [
            ("v", {"type": "array", "elementType": "double", "containsNull": True}),
            ("h", {"type": "array", "elementType": "float", "containsNull": True}),
            ("s", {"type": "struct", "fields": [
                {"name": "dimensions", "type": "short", "nullable": True, "metadata": {}},
                {"name": "vector", "type": {"type": "map", "keyType": "short", "valueType": "double", "valueContainsNull": True},
                 "nullable": True, "metadata": {}}]}),
            ("v3", {"type": "array", "elementType": "double", "containsNull": True})]
        assert _lake_values(delta.to_pyarrow_table().to_pylist()) == expected
        iceberg = IcebergTarget(iceberg_url)
        try:
            stored = iceberg.catalog().load_table(("public", unique_name))
            types = {f.name: f.field_type for f in stored.schema().fields}
            assert (str(types["v"]), str(types["h"]), str(types["v3"])) == ("list<double>", "list<float>", "list<double>")
            assert [(f.name, str(f.field_type)) for f in types["s"].fields] == [("dimensions", "int"), ("vector", "map<int, double>")]
            assert _lake_values(stored.scan().to_arrow().to_pylist()) == expected
        finally:
            iceberg.close()

    try:
        # The typed view, collected batch by batch.
        view = describe_table(props["view"], table)
        types = {c.name: c.spark_type.simpleString() for c in view.columns}
        assert (types["v"], types["h"], types["s"]) == (
            "array<double>", "array<float>", "struct<dimensions:smallint,vector:map<smallint,double>>")
        seen: list[Any] = []
        _run(table_changes(source(props["view"]), view).writeStream
             .foreachBatch(lambda df, _id: seen.extend(df.collect()))
             .option("checkpointLocation", str(tmp_path / "ck-view")))
        by_id = {r["id"]: r for r in seen}
        assert by_id[1]["v"] == [1.0, 2.5, -3.25e-07] and by_id[1]["s"]["dimensions"] == 10
        assert by_id[1]["s"]["vector"] == {1: 1.5, 3: -2.0, 7: 0.1} and by_id[1]["h"][1] == pytest.approx(0.099975586, rel=1e-7)
        assert by_id[2]["v"] is None and by_id[2]["s"] is None and by_id[3]["s"].asDict() == {"dimensions": 5, "vector": {}}
        assert len(by_id[4]["s"]["vector"]) == 10

        # A mirror without the extension is refused, naming the columns.
        # (The TargetError reaches the test through Spark's StreamingQueryException, by its message.)
        with pytest.raises(Exception, match="column.s. h, s, v, v3 have pgvector types, but the target database has no pgvector"):
            apply("postgres", mirror_url, "ck-refused")
        with psycopg.connect(mirror_info, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION vector")

        def apply_all() -> None:
            apply("postgres", mirror_url)
            apply("delta", str(delta_root))
            apply("iceberg", iceberg_url)

        apply_all()  # the snapshot
        assert _types(mirror_info, table)[1:] == [("v", "vector"), ("h", "halfvec"), ("s", "sparsevec"), ("v3", "vector(3)")]
        assert _rows(mirror_info, table) == _rows(source_info, table)
        lakes_equal_the_source()
        with psycopg.connect(source_info, autocommit=True) as db:
            db.execute(f"UPDATE {table} SET v = '[9,8]', s = '{{2:-1}}/3', h = NULL WHERE id = 1")
            db.execute(f"UPDATE {table} SET s = '{{1:1}}/1', v3 = '[7,7,7]' WHERE id = 2")
            db.execute(f"DELETE FROM {table} WHERE id = 3")
            db.execute(f"INSERT INTO {table} VALUES (5, '[0.5]', '[0.25]', '{{32767:1}}/32767', '[1,1,1]')")
        apply_all()  # the streamed changes
        assert _rows(mirror_info, table) == _rows(source_info, table)
        assert [r[0] for r in _rows(mirror_info, table)] == [1, 2, 4, 5]
        lakes_equal_the_source()
    finally:
        with psycopg.connect(source_info, autocommit=True) as db:
            db.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = ANY(%s) AND NOT active",
                       (list(slots.values()),))
