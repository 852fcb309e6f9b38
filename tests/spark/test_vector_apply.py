"""pgvector columns through a real SparkSession on PostgreSQL 18: the typed view's values, and
``apply_changes`` into a PostgreSQL mirror whose columns keep the source's pgvector types (values
equal to the source's, in the snapshot and after streamed changes)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest

from sparkcdc.spark.apply import apply_changes
from sparkcdc.spark.options import options_for
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


def _run(writer: Any) -> None:
    query = writer.trigger(availableNow=True).start()
    query.awaitTermination(300)
    assert not query.isActive, "the query did not end within 300 s"
    assert query.exception() is None, str(query.exception())


def test_views_and_apply_to_postgres_carry_pgvector_values(spark, pg18_cluster, unique_name: str, tmp_path: Path) -> None:
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
    props = properties(pg18_cluster, unique_name, [table])
    view_props = properties(pg18_cluster, f"{unique_name}_v", [table])

    def source(p: dict[str, str]) -> Any:
        return spark.readStream.format("postgres-cdc").options(**options_for(p)).load()

    try:
        # The typed view, collected batch by batch.
        view = describe_table(view_props, table)
        types = {c.name: c.spark_type.simpleString() for c in view.columns}
        assert (types["v"], types["h"], types["s"]) == (
            "array<double>", "array<float>", "struct<dimensions:smallint,vector:map<smallint,double>>")
        seen: list[Any] = []
        _run(table_changes(source(view_props), view).writeStream
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
            _run(apply_changes(source(props), mirror_url, properties=props, checkpoint_location=tmp_path / "ck-refused"))
        with psycopg.connect(mirror_info, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION vector")

        def apply() -> None:
            _run(apply_changes(source(props), mirror_url, properties=props, checkpoint_location=tmp_path / "ck-apply"))

        apply()  # the snapshot
        assert _types(mirror_info, table)[1:] == [("v", "vector"), ("h", "halfvec"), ("s", "sparsevec"), ("v3", "vector(3)")]
        assert _rows(mirror_info, table) == _rows(source_info, table)
        with psycopg.connect(source_info, autocommit=True) as db:
            db.execute(f"UPDATE {table} SET v = '[9,8]', s = '{{2:-1}}/3', h = NULL WHERE id = 1")
            db.execute(f"UPDATE {table} SET s = '{{1:1}}/1', v3 = '[7,7,7]' WHERE id = 2")
            db.execute(f"DELETE FROM {table} WHERE id = 3")
            db.execute(f"INSERT INTO {table} VALUES (5, '[0.5]', '[0.25]', '{{32767:1}}/32767', '[1,1,1]')")
        apply()  # the streamed changes
        assert _rows(mirror_info, table) == _rows(source_info, table)
        assert [r[0] for r in _rows(mirror_info, table)] == [1, 2, 4, 5]
    finally:
        with psycopg.connect(source_info, autocommit=True) as db:
            db.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = ANY(%s) AND NOT active",
                       ([unique_name, f"{unique_name}_v"],))
