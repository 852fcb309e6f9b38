"""Typed per-table views (sparkcdc.spark.views) over real streaming queries of the postgres-cdc source."""

from __future__ import annotations

import datetime as dt
import json
import random
import string
import struct
from decimal import ROUND_HALF_UP, Context, Decimal
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pyspark.sql import DataFrame
from pyspark.sql import types as T

from sparkcdc.postgres import drop_slot
from sparkcdc.spark.options import options_for
from sparkcdc.spark.views import (
    METADATA_COLUMNS,
    TableNotCapturedError,
    TableView,
    UnknownTableError,
    describe_table,
    spark_type,
    table_changes,
)

from .support import properties

# -- helpers ---------------------------------------------------------------------------------------


def _source(spark: Any, props: dict[str, str], checkpoint: Path) -> DataFrame:
    options = options_for({**props, "sparkcdc.state.location": str(checkpoint / "sparkcdc-state")})
    return spark.readStream.format("postgres-cdc").options(**options).load()


def _run(frame: DataFrame, checkpoint: Path, on_batch: Any) -> None:
    """One availableNow run of ``frame`` into ``on_batch`` (foreachBatch); returns when it has drained."""
    query = (
        frame.writeStream.foreachBatch(on_batch).option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True).start()
    )
    query.awaitTermination()
    assert query.exception() is None, query.exception()


def _typed_view_rows(spark: Any, props: dict[str, str], checkpoint: Path, view: TableView) -> list[dict[str, Any]]:
    """The view applied to the streaming frame itself; the typed batches collected."""
    rows: list[dict[str, Any]] = []
    _run(table_changes(_source(spark, props, checkpoint), view), checkpoint, lambda df, _id: rows.extend(r.asDict() for r in df.collect()))
    return _ordered(rows)


def _batch_view_rows(spark: Any, props: dict[str, str], checkpoint: Path, view: TableView) -> list[dict[str, Any]]:
    """The view applied inside foreachBatch, to each raw micro-batch."""
    rows: list[dict[str, Any]] = []
    _run(_source(spark, props, checkpoint), checkpoint, lambda df, _id: rows.extend(r.asDict() for r in table_changes(df, view).collect()))
    return _ordered(rows)


def _ordered(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: (r["__commit_lsn"], r["__lsn"], r["__ordinal"]))


def _float32(value: float) -> float:
    return struct.unpack("<f", struct.pack("<f", value))[0]


def _micros_of_day(value: dt.time) -> int:
    return ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond


# -- the many-types table --------------------------------------------------------------------------------

_TYPES_DDL = """
CREATE TYPE {name}_mood AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE {name} (
    id int PRIMARY KEY,
    c_small smallint NOT NULL,
    c_int int,
    c_big bigint,
    c_num numeric(10,2),
    c_numvar numeric,
    c_real real,
    c_double double precision,
    c_bool boolean,
    c_text text,
    c_varchar varchar(20),
    c_char char(5),
    c_bytea bytea,
    c_date date,
    c_time time,
    c_ts timestamp,
    c_tstz timestamptz,
    c_uuid uuid,
    c_json json,
    c_jsonb jsonb,
    c_ints int[],
    c_texts text[],
    c_mood {name}_mood,
    c_doc text,
    c_bigints int[]
);
ALTER TABLE {name} ALTER COLUMN c_doc SET STORAGE EXTERNAL, ALTER COLUMN c_bigints SET STORAGE EXTERNAL;
"""

_ROW_1 = {
    "id": 1, "c_small": -32768, "c_int": 2147483647, "c_big": -9223372036854775808, "c_num": Decimal("-12345678.91"),
    "c_numvar": Decimal("-3.14159265358979323846"), "c_real": 0.1, "c_double": 1e-300, "c_bool": True,
    "c_text": "héllo\nworld", "c_varchar": "var", "c_char": "ab", "c_bytea": b"\x00\xff\x10binary",
    "c_date": dt.date(2024, 2, 29), "c_time": dt.time(23, 59, 59, 999999), "c_ts": dt.datetime(1999, 12, 31, 23, 59, 59, 123456),
    "c_tstz": dt.datetime(2024, 3, 10, 2, 30, 0, 654321, tzinfo=dt.timezone(dt.timedelta(hours=5, minutes=30))),
    "c_uuid": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "c_json": '{"b": [1, 2], "a": null}', "c_jsonb": '{"z": 1, "a": {"x": "y"}}',
    "c_ints": [1, None, -3], "c_texts": ["a", "b,c", None, 'q"uote'], "c_mood": "happy", "c_doc": "short", "c_bigints": [7],
}
_ROW_2 = {"id": 2, "c_small": 0}  # every other column NULL


def _insert(db: psycopg.Connection, table: str, row: dict[str, Any]) -> None:
    names = ", ".join(row)
    marks = ", ".join("%s" for _ in row)
    db.execute(f"INSERT INTO {table} ({names}) VALUES ({marks})", list(row.values()))


def _stored(db: psycopg.Connection, table: str, row_id: int) -> dict[str, Any]:
    cursor = db.execute(f"SELECT * FROM {table} WHERE id = %s", (row_id,))
    names = [d.name for d in cursor.description]
    return dict(zip(names, cursor.fetchone(), strict=True))


def _as_stored(column: str, value: Any) -> Any:
    """A view value in the form psycopg gives for the same PostgreSQL value."""
    if value is None:
        return None
    if column == "c_tstz":
        return value.astimezone()  # TIMESTAMP values come back as the driver's local time
    if column == "c_bytea":
        return bytes(value)
    if column in ("c_json", "c_jsonb"):
        return json.loads(value)
    return value


def _expected(column: str, stored: Any) -> Any:
    if stored is None:
        return None
    if column == "c_real":
        return _float32(stored)
    if column == "c_numvar":  # numeric without precision: DecimalType(38, 18), rounded half up
        return stored.quantize(Decimal("1e-18"), ROUND_HALF_UP, Context(prec=60))
    if column == "c_time":
        return _micros_of_day(stored)
    if column == "c_uuid":
        return str(stored)
    if column == "c_tstz":
        return stored.astimezone()
    return stored


def _assert_matches_postgres(row: dict[str, Any], stored: dict[str, Any], *, unchanged: tuple[str, ...] = ()) -> None:
    for column, value in stored.items():
        if column in unchanged:
            assert row[column] is None, column
            continue
        assert _as_stored(column, row[column]) == _expected(column, value), column


_EXPECTED_TYPES = {
    "id": T.IntegerType(), "c_small": T.ShortType(), "c_int": T.IntegerType(), "c_big": T.LongType(),
    "c_num": T.DecimalType(10, 2), "c_numvar": T.DecimalType(38, 18), "c_real": T.FloatType(), "c_double": T.DoubleType(),
    "c_bool": T.BooleanType(), "c_text": T.StringType(), "c_varchar": T.StringType(), "c_char": T.StringType(),
    "c_bytea": T.BinaryType(), "c_date": T.DateType(), "c_time": T.LongType(), "c_ts": T.TimestampNTZType(),
    "c_tstz": T.TimestampType(), "c_uuid": T.StringType(), "c_json": T.StringType(), "c_jsonb": T.StringType(),
    "c_ints": T.ArrayType(T.IntegerType(), True), "c_texts": T.ArrayType(T.StringType(), True), "c_mood": T.StringType(),
    "c_doc": T.StringType(), "c_bigints": T.ArrayType(T.IntegerType(), True),
}


def test_many_types_snapshot_and_stream(spark, db, pg_cluster, unique_name: str, tmp_path: Path) -> None:
    table = f"t_{unique_name}"
    db.execute(_TYPES_DDL.format(name=table))
    _insert(db, table, _ROW_1)
    _insert(db, table, _ROW_2)
    props = properties(pg_cluster, unique_name, [f"public.{table}"], **{"skipped.operations": "none"})
    view = describe_table(props, table)
    checkpoint = tmp_path / "checkpoint"

    # The description: names, types, keys and declared PostgreSQL types.
    assert view.table == f"public.{table}" and view.topic == f"srv.public.{table}" and view.keys == ("id",)
    assert {c.name: c.spark_type for c in view.columns} == _EXPECTED_TYPES
    assert [f.name for f in view.spark_schema.fields] == list(_EXPECTED_TYPES)
    declared = {c.name: c.pg_type for c in view.columns}
    assert declared["c_num"] == "numeric(10,2)" and declared["c_varchar"] == "character varying(20)"
    assert declared["c_ts"] == "timestamp without time zone" and declared["c_texts"] == "text[]"
    assert declared["c_char"] == "character(5)" and declared["c_mood"] == f"{table}_mood"
    assert [c.name for c in view.columns if c.is_key] == ["id"]
    assert not view.column("c_small").nullable and view.column("c_int").nullable

    # Snapshot: the view applied to the streaming frame.
    snapshot = _typed_view_rows(spark, props, checkpoint, view)
    assert [(r["__op"], r["id"]) for r in snapshot] == [("r", 1), ("r", 2)]
    assert all(r["__unchanged"] == [] and r["__snapshot"] in ("first", "true", "last", "first_in_data_collection",
                                                               "last_in_data_collection") for r in snapshot)
    _assert_matches_postgres(snapshot[0], _stored(db, table, 1))
    _assert_matches_postgres(snapshot[1], _stored(db, table, 2))
    assert list(snapshot[0]) == list(_EXPECTED_TYPES) + [name for name, _ in METADATA_COLUMNS]

    # Streaming: inserts, an update leaving TOASTed columns unchanged, a full update, a delete, a truncate.
    rng = random.Random(5)
    big_text = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(20_000))
    big_ints = [rng.randint(-(2**31), 2**31 - 1) for _ in range(4000)]
    _insert(db, table, {**_ROW_1, "id": 3, "c_num": Decimal("99999999.99"), "c_numvar": Decimal("12345678901234567890.123456789012345678"),
                        "c_doc": big_text, "c_bigints": big_ints, "c_tstz": dt.datetime(1900, 1, 1, tzinfo=dt.timezone.utc)})
    _insert(db, table, {**_ROW_1, "id": 4, "c_num": Decimal("0.01"), "c_numvar": Decimal("-0.000000000000000001"), "c_real": -1.5e-7})
    inserted = {3: _stored(db, table, 3), 4: _stored(db, table, 4)}
    db.execute(f"UPDATE {table} SET c_int = 42, c_texts = ARRAY['x'] WHERE id = 3")  # c_doc, c_bigints stay in TOAST
    after_toast_update = _stored(db, table, 3)
    db.execute(f"UPDATE {table} SET c_doc = 'now short', c_bigints = '{{1,2}}', c_bool = false WHERE id = 3")
    after_full_update = _stored(db, table, 3)
    db.execute(f"DELETE FROM {table} WHERE id = 4")  # REPLICA IDENTITY DEFAULT: only the key in 'before'
    db.execute(f"TRUNCATE {table}")

    streamed = _batch_view_rows(spark, props, checkpoint, view)
    assert [(r["__op"], r["id"]) for r in streamed] == [("c", 3), ("c", 4), ("u", 3), ("u", 3), ("d", 4), ("t", None)]
    create_3, create_4, toast_update, full_update, delete, truncate = streamed
    _assert_matches_postgres(create_3, inserted[3])
    _assert_matches_postgres(create_4, inserted[4])
    assert create_3["c_doc"] == big_text and create_3["c_bigints"] == big_ints

    assert sorted(toast_update["__unchanged"]) == ["c_bigints", "c_doc"]
    _assert_matches_postgres(toast_update, after_toast_update, unchanged=("c_doc", "c_bigints"))
    assert full_update["__unchanged"] == []
    _assert_matches_postgres(full_update, after_full_update)

    assert delete["id"] == 4 and delete["__unchanged"] == []
    assert all(delete[name] is None for name in _EXPECTED_TYPES if name != "id"), "only the key is known for a delete"
    assert all(truncate[name] is None for name in _EXPECTED_TYPES) and truncate["__unchanged"] == []

    for row in streamed:
        assert row["__snapshot"] is None and isinstance(row["__tx_id"], int) and row["__source_ts"] is not None
    assert len({r["__tx_id"] for r in streamed}) == 6  # autocommit: one transaction per statement
    drop_slot(db, unique_name, wait=30)


# -- decimal.handling.mode (and the converters' schemas.enable) -------------------------------------------


@pytest.mark.parametrize(
    ("mode", "schemas", "num_type", "var_type"),
    [
        ("precise", "false", T.DecimalType(10, 2), T.DecimalType(38, 18)),
        ("double", "true", T.DoubleType(), T.DoubleType()),
        ("string", "false", T.StringType(), T.StringType()),
    ],
)
def test_decimal_handling_modes(spark, db, pg_cluster, unique_name, tmp_path, mode, schemas, num_type, var_type) -> None:
    table = f"t_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id bigint PRIMARY KEY, num numeric(10,2) NOT NULL, var numeric, money_ money)")
    values = [(1, "12345678.90", "-1.5", "12.34"), (2, "-0.01", "123456789012345678.000000000000000001", "-0.99"),
              (3, "0", "0", "0")]
    for row in values:
        db.execute(f"INSERT INTO {table} VALUES (%s, %s, %s, %s)", row)
    props = properties(
        pg_cluster, unique_name, [f"public.{table}"],
        **{"decimal.handling.mode": mode, "key.converter.schemas.enable": schemas, "value.converter.schemas.enable": schemas},
    )
    view = describe_table(props, f"public.{table}")
    assert view.column("num").spark_type == num_type and view.column("var").spark_type == var_type

    rows = _typed_view_rows(spark, props, tmp_path / "checkpoint", view)
    assert [r["id"] for r in rows] == [1, 2, 3]
    for row, (_, num, var, money) in zip(rows, values, strict=True):
        if mode == "precise":
            assert row["num"] == Decimal(num) and row["var"] == Decimal(var) and row["money_"] == Decimal(money)
            assert view.column("money_").spark_type == T.DecimalType(38, 2)
        elif mode == "double":
            assert row["num"] == float(num) and row["var"] == float(var) and row["money_"] == float(money)
        else:
            assert Decimal(row["num"]) == Decimal(num) and Decimal(row["var"]) == Decimal(var)
            assert Decimal(row["money_"]) == Decimal(money)
    if mode == "string":
        assert rows[0]["num"] == "12345678.90"  # the column's scale, as Debezium writes it
    drop_slot(db, unique_name, wait=30)


# -- descriptions that fail ------------------------------------------------------------------------------


def test_unknown_and_uncaptured_tables_are_named(db, pg_cluster, unique_name: str) -> None:
    props = properties(pg_cluster, unique_name, [f"public.t_{unique_name}"])
    with pytest.raises(UnknownTableError, match=f"public.t_{unique_name}"):
        describe_table(props, f"t_{unique_name}")
    db.execute(f"CREATE TABLE other_{unique_name} (id int PRIMARY KEY)")
    with pytest.raises(TableNotCapturedError, match=f"public.other_{unique_name}"):
        describe_table(props, f"public.other_{unique_name}")
    with pytest.raises(UnknownTableError, match=f"nosuchschema.t_{unique_name}"):
        table_changes(None, f"nosuchschema.t_{unique_name}", props)  # type: ignore[arg-type]


def test_unsupported_schemas_name_the_column() -> None:
    from sparkcdc.debezium.connect import bytes_, string
    from sparkcdc.debezium.types.numeric import decimal_schema

    assert spark_type(decimal_schema(2, 10)) == T.DecimalType(10, 2)
    with pytest.raises(TypeError, match=r"public\.t\.wide.*decimal\.handling\.mode=string"):
        spark_type(decimal_schema(2, 50), column="public.t.wide")
    with pytest.raises(TypeError, match=r"public\.t\.odd.*com\.example\.Custom"):
        spark_type(string(name="com.example.Custom"), column="public.t.odd")
    assert spark_type(bytes_()) == T.BinaryType()
