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
import pyarrow as pa
import pytest
from pyspark.sql import DataFrame
from pyspark.sql import types as T

from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.debezium.serialization import JsonSerializer
from sparkcdc.debezium.table import ColumnDescription, TableDescription, TableSchemaFactory
from sparkcdc.debezium.types import ColumnType
from sparkcdc.postgres import drop_slot
from sparkcdc.spark.outputs.columns import DDL_SCHEMA
from sparkcdc.spark.source.options import options_for
from sparkcdc.spark.views import (
    METADATA_COLUMNS,
    OLD_KEY,
    TableNotCapturedError,
    TableView,
    UnknownTableError,
    describe_table,
    spark_type,
    table_changes,
    view_of,
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


@pytest.mark.parametrize("layout", ["columns", "changes"])
def test_many_types_snapshot_and_stream(spark, db, pg_cluster, unique_name: str, tmp_path: Path, layout: str) -> None:
    """Both layouts the views read: Debezium JSON (columns) and typed blocks (changes)."""
    table = f"t_{unique_name}"
    db.execute(_TYPES_DDL.format(name=table))
    _insert(db, table, _ROW_1)
    _insert(db, table, _ROW_2)
    props = properties(pg_cluster, unique_name, [f"public.{table}"],
                       **{"skipped.operations": "none", "sparkcdc.output.layout": layout})
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
    assert all(isinstance(r["__tx_id"], int) and r["__source_ts"] is not None for r in snapshot)
    _assert_matches_postgres(snapshot[0], _stored(db, table, 1))
    _assert_matches_postgres(snapshot[1], _stored(db, table, 2))
    assert list(snapshot[0]) == list(_EXPECTED_TYPES) + [name for name, _ in METADATA_COLUMNS] + [OLD_KEY]

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
    db.execute(f"UPDATE {table} SET id = 5 WHERE id = 3")  # a key change: c_doc, c_bigints still not sent
    after_key_change = _stored(db, table, 5)
    db.execute(f"UPDATE {table} SET c_doc = 'now short', c_bigints = '{{1,2}}', c_bool = false WHERE id = 5")
    after_full_update = _stored(db, table, 5)
    db.execute(f"DELETE FROM {table} WHERE id = 4")  # REPLICA IDENTITY DEFAULT: only the key in 'before'
    db.execute(f"TRUNCATE {table}")

    streamed = _batch_view_rows(spark, props, checkpoint, view)
    assert [(r["__op"], r["id"]) for r in streamed] == [
        ("c", 3), ("c", 4), ("u", 3), ("d", 3), ("c", 5), ("u", 5), ("d", 4), ("t", None)]
    create_3, create_4, toast_update, key_delete, key_create, full_update, delete, truncate = streamed
    _assert_matches_postgres(create_3, inserted[3])
    _assert_matches_postgres(create_4, inserted[4])
    assert create_3["c_doc"] == big_text and create_3["c_bigints"] == big_ints

    assert sorted(toast_update["__unchanged"]) == ["c_bigints", "c_doc"]
    _assert_matches_postgres(toast_update, after_toast_update, unchanged=("c_doc", "c_bigints"))
    # The key change: Debezium's delete + create; the create names its old key and lacks the TOASTed columns.
    assert key_create[OLD_KEY].asDict() == {"id": 3} and sorted(key_create["__unchanged"]) == ["c_bigints", "c_doc"]
    _assert_matches_postgres(key_create, after_key_change, unchanged=("c_doc", "c_bigints"))
    assert all(r[OLD_KEY] is None for r in streamed if r is not key_create)
    assert key_delete["__unchanged"] == []
    assert full_update["__unchanged"] == []
    _assert_matches_postgres(full_update, after_full_update)

    assert delete["id"] == 4 and delete["__unchanged"] == []
    assert all(delete[name] is None for name in _EXPECTED_TYPES if name != "id"), "only the key is known for a delete"
    assert all(truncate[name] is None for name in _EXPECTED_TYPES) and truncate["__unchanged"] == []

    for row in streamed:
        assert row["__snapshot"] is None and isinstance(row["__tx_id"], int) and row["__source_ts"] is not None
    assert len({r["__tx_id"] for r in streamed}) == 7  # autocommit: one transaction per statement
    drop_slot(db, unique_name, wait=30)


# -- decimal.handling.mode (and the converters' schemas.enable) -------------------------------------------


# mode -> (converters' schemas.enable, Spark type of numeric(10,2), of numeric). "precise" streams in the
# many-types test above; every mode is also in test_every_type_in_every_mode.
_DECIMAL_MODES = {
    "double": ("true", T.DoubleType(), T.DoubleType()),
    "string": ("false", T.StringType(), T.StringType()),
}


def test_decimal_handling_modes(spark, db, pg_cluster, unique_name: str, tmp_path: Path) -> None:
    table = f"t_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id bigint PRIMARY KEY, num numeric(10,2) NOT NULL, var numeric, money_ money)")
    values = [(1, "12345678.90", "-1.5", "12.34"), (2, "-0.01", "123456789012345678.000000000000000001", "-0.99"),
              (3, "0", "0", "0")]
    for row in values:
        db.execute(f"INSERT INTO {table} VALUES (%s, %s, %s, %s)", row)
    for mode, (schemas, num_type, var_type) in _DECIMAL_MODES.items():
        name = f"{unique_name}_{mode}"
        props = properties(
            pg_cluster, name, [f"public.{table}"],
            **{"decimal.handling.mode": mode, "key.converter.schemas.enable": schemas, "value.converter.schemas.enable": schemas},
        )
        view = describe_table(props, f"public.{table}")
        assert view.column("num").spark_type == num_type and view.column("var").spark_type == var_type
        rows = _typed_view_rows(spark, props, tmp_path / mode, view)
        assert [r["id"] for r in rows] == [1, 2, 3], mode
        for row, (_, num, var, money) in zip(rows, values, strict=True):
            if mode == "double":
                assert row["num"] == float(num) and row["var"] == float(var) and row["money_"] == float(money)
            else:
                assert Decimal(row["num"]) == Decimal(num) and Decimal(row["var"]) == Decimal(var)
                assert Decimal(row["money_"]) == Decimal(money)
        if mode == "string":
            assert rows[0]["num"] == "12345678.90"  # the column's scale, as Debezium writes it
        drop_slot(db, name, wait=30)


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


# -- every mode, on events the connector's own schemas and serializer make (static frames) ---------------


def _type(name: str, modifier: int = -1, element: ColumnType | None = None, **extra: Any) -> ColumnType:
    return ColumnType(0, name, "pg_catalog", modifier, name, element=element, **extra)


def _array(element: ColumnType) -> ColumnType:
    return _type(f"_{element.name}", element=element, category="A")


_ENUM = ColumnType(0, "mood", "public", -1, "mood", typtype="e", enum_labels=("sad", "happy"))
_NUMERIC_5_2 = _type("numeric", (5 << 16 | 2) + 4)

# (column, type, PostgreSQL text, the value the view must give in the default modes)
_CASES: list[tuple[str, ColumnType, str, Any]] = [
    ("i2", _type("int2"), "-7", -7),
    ("o", _type("oid"), "4294967295", 4294967295),
    ("f4", _type("float4"), "3.4028235e+38", _float32(3.4028235e38)),
    ("f8_nan", _type("float8"), "NaN", "nan"),
    ("f8_inf", _type("float8"), "-Infinity", float("-inf")),
    ("d", _type("date"), "2024-02-29", dt.date(2024, 2, 29)),
    ("d_old", _type("date"), "0044-03-15", dt.date(44, 3, 15)),
    ("t3", _type("time", 3), "12:34:56.789", 45_296_789_000),
    ("t6", _type("time", 6), "23:59:59.999999", 86_399_999_999),
    ("ts3", _type("timestamp", 3), "2024-01-02 03:04:05.678", dt.datetime(2024, 1, 2, 3, 4, 5, 678000)),
    ("ts6", _type("timestamp", 6), "1969-12-31 23:59:59.999999", dt.datetime(1969, 12, 31, 23, 59, 59, 999999)),
    ("tstz", _type("timestamptz", 6), "2024-01-02 03:04:05.678901+00",
     dt.datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=dt.timezone.utc)),
    ("ttz", _type("timetz"), "12:34:56+02", "10:34:56Z"),
    ("iv", _type("interval"), "1 day 02:00:00", 93_600_000_000),
    ("b", _type("bytea"), "\\x00ff41", b"\x00\xffA"),
    ("bits", _type("bit", 8), "10000001", b"\x81"),
    ("bit1", _type("bit", 1), "1", True),
    ("hs", _type("hstore"), '"a"=>"1", "b"=>NULL', {"a": "1", "b": None}),
    ("pt", _type("point"), "(1.5,-2)", {"x": 1.5, "y": -2.0, "srid": None}),
    ("money", _type("money"), "-$1,234.56", Decimal("-1234.56")),
    ("num", _NUMERIC_5_2, "-123.4", Decimal("-123.40")),
    ("var", _type("numeric"), "-0.000123", Decimal("-0.000123")),
    ("wide", _type("numeric", (30 << 16 | 4) + 4), "-12345678901234567890123456.1234", Decimal("-12345678901234567890123456.1234")),
    ("dates", _array(_type("date")), "{2024-01-01,NULL}", [dt.date(2024, 1, 1), None]),
    ("nums", _array(_NUMERIC_5_2), "{1.5,-2.25}", [Decimal("1.50"), Decimal("-2.25")]),
    ("vars", _array(_type("numeric")), "{1.5,-0.001,NULL}", [Decimal("1.5"), Decimal("-0.001"), None]),
    ("uuids", _array(_type("uuid")), "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}", ["a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"]),
    ("stamps", _array(_type("timestamp", 6)), "{\"2024-01-02 03:04:05.5\"}", [dt.datetime(2024, 1, 2, 3, 4, 5, 500000)]),
    ("bools", _array(_type("bool")), "{t,f,NULL}", [True, False, None]),
    ("jb", _type("jsonb"), '{"a": [1, 2]}', '{"a": [1, 2]}'),
    ("x", _type("xml"), "<a>b</a>", "<a>b</a>"),
    ("mood", _ENUM, "happy", "happy"),
    ("r", _type("int4range"), "[1,5)", "[1,5)"),
    ("inet", _type("inet"), "10.0.0.1/8", "10.0.0.1/8"),
    ("vec", _type("vector"), "[1,2.5,-3.25e-07]", [1.0, 2.5, -3.25e-07]),
    ("half", _type("halfvec"), "[0.099975586,65504]", [_float32(0.099975586), 65504.0]),
    ("sparse", _type("sparsevec"), "{2:1,5:-2.5,8:3}/10", {"dimensions": 10, "vector": {2: 1.0, 5: -2.5, 8: 3.0}}),
    ("sparse0", _type("sparsevec"), "{}/5", {"dimensions": 5, "vector": {}}),
]

# Per mode set: connector properties, and the values that differ from the default modes'.
_MODES: dict[str, tuple[dict[str, str], dict[str, Any]]] = {
    "defaults": ({}, {}),
    "connect": ({"time.precision.mode": "connect", "binary.handling.mode": "hex", "interval.handling.mode": "string",
                 "hstore.handling.mode": "map", "decimal.handling.mode": "string", "value.converter.schemas.enable": "false"},
                {"t6": 86_399_999_000, "ts6": dt.datetime(1969, 12, 31, 23, 59, 59, 999000), "b": "00ff41", "iv": "P0Y0M1DT2H0M0S",
                 "money": "-1234.56", "num": "-123.40", "var": "-0.000123", "wide": "-12345678901234567890123456.1234", "nums": ["1.50", "-2.25"], "vars": ["1.5", "-0.001", None],
                 "stamps": [dt.datetime(2024, 1, 2, 3, 4, 5, 500000)]}),
    "microseconds": ({"time.precision.mode": "microseconds", "binary.handling.mode": "base64", "decimal.handling.mode": "double",
                      "key.converter.schemas.enable": "false"},
                     {"b": "AP9B", "money": -1234.56, "num": -123.4, "var": -0.000123, "wide": -1.2345678901234568e25, "nums": [1.5, -2.25], "vars": [1.5, -0.001, None]}),
    "nanoseconds": ({"time.precision.mode": "nanoseconds", "binary.handling.mode": "base64-url-safe"}, {"b": "AP9B"}),
    "isostring": ({"time.precision.mode": "isostring"}, {}),
    "adaptive_time_microseconds": ({"time.precision.mode": "adaptive_time_microseconds"}, {}),
}


def _config(**overrides: str) -> ConnectorConfig:
    base = {"database.hostname": "localhost", "database.user": "u", "database.dbname": "db", "topic.prefix": "srv"}
    return ConnectorConfig({**base, **overrides})


def _static_changes(spark: Any, config: ConnectorConfig, columns: list[tuple[str, ColumnType, bool]],
                    events: list[tuple[str, tuple[Any, ...] | None, tuple[Any, ...] | None]],
                    primary_key: tuple[str, ...] | None = None) -> tuple[TableView, list[dict[str, Any]]]:
    """The view of events (op, old tuple, new tuple) made by the connector's table schema and serializer."""
    primary_key = (columns[0][0],) if primary_key is None else primary_key
    description = TableDescription(
        "public", "s", tuple(ColumnDescription(name, type_, not_null, None, i) for i, (name, type_, not_null) in enumerate(columns)),
        primary_key,
    )
    schema = TableSchemaFactory(config).build(description)
    view = view_of(schema, config, replica_identity="d" if primary_key else "f", identity_columns=primary_key or None)
    serializer = JsonSerializer(key_schemas=config.key_schemas_enable, value_schemas=config.value_schemas_enable)
    rows = []
    for ordinal, (op, old, new) in enumerate(events):
        before = schema.row(old) if old is not None else None
        after = schema.row(new) if new is not None else None
        key = schema.key(new if new is not None else old) if old is not None or new is not None else None
        envelope = {"before": before, "after": after, "source": {}, "op": op}
        encoded_key = serializer.encode(key, schema.key_schema if op != "t" else None, with_schema=config.key_schemas_enable)
        value = serializer.encode(envelope, schema.envelope_schema, with_schema=config.value_schemas_enable)
        rows.append((schema.topic, encoded_key and encoded_key.decode(), value.decode(), [], op, "public", "s",
                     ordinal, ordinal, ordinal, 7, dt.datetime(2024, 1, 1), None))
    rows.append((schema.topic, None, None, [], None, "public", "s", 99, 99, 99, None, None, None))  # a tombstone
    rows.append((schema.topic, None, '{"status":"BEGIN"}', [], None, None, None, 0, 0, 0, None, None, None))  # transaction
    frame = spark.createDataFrame(rows, DDL_SCHEMA)
    from_json = _ordered([r.asDict(recursive=True) for r in table_changes(frame, view).collect()])
    typed = _ordered([r.asDict(recursive=True) for r in table_changes(_changes_frame(spark, config, schema, events), view).collect()])
    # The typed layout (no JSON) gives the same rows as the columns layout's JSON, value for value.
    assert [_comparable(r) for r in typed] == [_comparable(r) for r in from_json]
    return view, from_json


def _changes_frame(spark: Any, config: ConnectorConfig, schema: Any,
                   events: list[tuple[str, tuple[Any, ...] | None, tuple[Any, ...] | None]]) -> DataFrame:
    """The same events as records (with their table schema), laid out as the ``changes`` layout's blocks."""
    from sparkcdc.debezium.records import ChangeRecord
    from sparkcdc.spark.outputs.changes.blocks import change_blocks

    records = []
    for ordinal, (op, old, new) in enumerate(events):
        before = schema.row(old) if old is not None else None
        after = schema.row(new) if new is not None else None
        key = schema.key(new if new is not None else old) if op != "t" else None
        envelope = {"before": before, "after": after, "source": {}, "op": op}
        records.append(ChangeRecord(schema.topic, key, schema.key_schema, envelope, schema.envelope_schema, (), op, "public", "s",
                                    ordinal, ordinal, ordinal, 7, 0, None, schema))
    records.append(ChangeRecord(schema.topic, None, None, None, None, (), None, "public", "s", 99, 99, 99))  # a tombstone
    batches = list(change_blocks(records, config, block_rows=2))
    return spark.createDataFrame(pa.Table.from_batches(batches))


def _comparable(row: dict[str, Any]) -> dict[str, Any]:
    return {k: ("nan" if isinstance(v, float) and v != v else v) for k, v in row.items() if k != "__source_ts"}


def _normalise(column: str, value: Any) -> Any:
    if isinstance(value, float) and value != value:
        return "nan"
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if column == "tstz" and value is not None:
        return value.astimezone(dt.timezone.utc)
    if column == "hs" and isinstance(value, str):
        return json.loads(value)
    if column == "pt" and value is not None:
        return {k: v for k, v in value.items() if k != "wkb"}
    return value


@pytest.mark.parametrize("modes", list(_MODES))
def test_every_type_in_every_mode(spark, modes: str) -> None:
    overrides, differences = _MODES[modes]
    config = _config(**overrides)
    columns = [("id", _type("int4"), True)] + [(name, type_, False) for name, type_, _, _ in _CASES]
    new = ("1",) + tuple(text for _, _, text, _ in _CASES)
    view, rows = _static_changes(spark, config, columns, [("c", None, new), ("d", new, None), ("t", None, None)])
    assert [r["__op"] for r in rows] == ["c", "d", "t"]
    created = rows[0]
    for name, _, _, expected in _CASES:
        expected = differences.get(name, expected)
        assert _normalise(name, created[name]) == expected, (modes, name, created[name])
        assert rows[1][name] is None and rows[2][name] is None, name  # delete: the key only; truncate: nothing
    assert rows[1]["id"] == 1 and rows[2]["id"] is None
    assert [c.name for c in view.columns] == ["id"] + [name for name, _, _, _ in _CASES]
    assert rows[0]["__tx_id"] == 7 and rows[0]["__unchanged"] == []
    if modes == "defaults":
        types = {c.name: c.spark_type.simpleString() for c in view.columns}
        assert types == {
            "id": "int", "i2": "smallint", "o": "bigint", "f4": "float", "f8_nan": "double", "f8_inf": "double", "d": "date",
            "d_old": "date", "t3": "bigint", "t6": "bigint", "ts3": "timestamp_ntz", "ts6": "timestamp_ntz", "tstz": "timestamp",
            "ttz": "string", "iv": "bigint", "b": "binary", "bits": "binary", "bit1": "boolean", "hs": "string",
            "pt": "struct<x:double,y:double,wkb:binary,srid:int>", "money": "decimal(38,2)", "num": "decimal(5,2)",
            "var": "decimal(38,18)", "wide": "decimal(30,4)", "dates": "array<date>", "nums": "array<decimal(5,2)>",
            "vars": "array<decimal(38,18)>", "uuids": "array<string>", "stamps": "array<timestamp_ntz>", "bools": "array<boolean>",
            "jb": "string", "x": "string", "mood": "string", "r": "string", "inet": "string",
            "vec": "array<double>", "half": "array<float>", "sparse": "struct<dimensions:smallint,vector:map<smallint,double>>",
            "sparse0": "struct<dimensions:smallint,vector:map<smallint,double>>",
        }


def test_unchanged_toast_placeholders_of_every_form(spark) -> None:
    """Each placeholder form (text, bytes, arrays, hstore, numerics) is NULL and listed in __unchanged."""
    from sparkcdc.pgoutput.messages import UNCHANGED_TOAST

    toastable = [
        ("t", _type("text")), ("j", _type("jsonb")), ("b", _type("bytea")), ("ints", _array(_type("int4"))),
        ("bigs", _array(_type("int8"))), ("texts", _array(_type("text"))), ("uuids", _array(_type("uuid"))),
        ("byteas", _array(_type("bytea"))), ("hs", _type("hstore")), ("num", _NUMERIC_5_2), ("var", _type("numeric")),
        ("dates", _array(_type("date"))),
    ]
    columns = [("id", _type("int4"), True), ("n", _type("int4"), False)] + [(name, type_, False) for name, type_ in toastable]
    columns.append(("nums", _array(_NUMERIC_5_2), False))
    # Debezium emits null (no placeholder) for an unchanged numeric[], and for bytea[] in the string binary modes.
    for overrides, never_detected in (
        ({}, ["nums"]),
        ({"binary.handling.mode": "hex", "hstore.handling.mode": "map", "decimal.handling.mode": "double",
          "unavailable.value.placeholder": "hex:00ff"}, ["byteas", "nums"]),
    ):
        config = _config(**overrides)
        update = ("1", "5") + (UNCHANGED_TOAST,) * (len(columns) - 2)
        view, rows = _static_changes(spark, config, columns, [("u", None, update)])
        (row,) = rows
        assert row["id"] == 1 and row["n"] == 5
        assert sorted(row["__unchanged"]) == sorted(name for name, _ in toastable if name not in never_detected), overrides
        assert all(row[name] is None for name, _, _ in columns[2:]), overrides
        assert [c.name for c in view.columns if c.placeholder is None] == ["id", "n", *never_detected]


def test_the_key_fills_a_delete_and_key_only_columns(spark) -> None:
    """message.key.columns and column filters: key columns missing from ``before`` (or from the value) come from the key."""
    config = _config(**{"message.key.columns": "public.s:code", "column.exclude.list": "public.s.code"})
    columns = [("id", _type("int4"), True), ("code", _type("text"), True), ("v", _type("text"), False)]
    view, rows = _static_changes(spark, config, columns, [("c", None, ("1", "A", "x")), ("d", ("1", "A", None), None)])
    assert view.keys == ("code",) and [c.name for c in view.columns] == ["id", "v", "code"]
    assert [(r["__op"], r["id"], r["v"], r["code"]) for r in rows] == [("c", 1, "x", "A"), ("d", 1, None, "A")]

    # A table without a key (REPLICA IDENTITY FULL): null keys, deletes carry the whole row.
    view, rows = _static_changes(spark, _config(), columns, [("c", None, ("1", "A", "x")), ("d", ("1", "A", "x"), None)], ())
    assert view.keys == () and not any(c.is_key for c in view.columns)
    assert [(r["__op"], r["id"], r["code"], r["v"]) for r in rows] == [("c", 1, "A", "x"), ("d", 1, "A", "x")]


def test_every_connector_mapping_has_a_spark_type() -> None:
    """spark_type covers every schema the connector's type mappings produce, in every mode combination."""
    import itertools

    from sparkcdc.debezium.types import MappingOptions, map_type
    from sparkcdc.debezium.types.arrays import OPTIONAL_ITEM_ELEMENTS

    scalars = [
        _type("numeric", (10 << 16 | 2) + 4), _type("numeric"), _type("bit", 1), _type("bit", 8), _type("varbit"), _ENUM,
        _type("time", 3), _type("time", 6), _type("timestamp", 3), _type("timestamp", 6), _type("timestamptz", 3),
        *(_type(name) for name in ("int2", "int4", "int8", "oid", "float4", "float8", "bool", "money", "text", "varchar", "bpchar",
                                   "char", "name", "citext", "inet", "cidr", "macaddr", "macaddr8", "int4range", "tstzrange", "json",
                                   "jsonb", "xml", "uuid", "ltree", "tsvector", "bytea", "date", "timetz", "interval", "point",
                                   "geometry", "geography", "hstore", "box", "polygon", "isbn", "vector", "halfvec", "sparsevec")),
    ]
    arrays = [_array(_type(name)) for name in sorted(OPTIONAL_ITEM_ELEMENTS)] + [_array(_ENUM), _array(_type("tsvector"))]
    checked = 0
    for time_mode, decimal, binary, hstore, interval in itertools.product(
        ("adaptive", "adaptive_time_microseconds", "connect", "isostring", "microseconds", "nanoseconds"),
        ("precise", "double", "string"), ("bytes", "base64", "base64-url-safe", "hex"), ("json", "map"), ("numeric", "string"),
    ):
        options = MappingOptions(time_precision_mode=time_mode, decimal_handling_mode=decimal, binary_handling_mode=binary,
                                 hstore_handling_mode=hstore, interval_handling_mode=interval, include_unknown_datatypes=True)
        for column_type in scalars + arrays:
            mapping = map_type(column_type, options)
            assert mapping is not None, column_type.name
            assert isinstance(spark_type(mapping.schema, column=column_type.name), T.DataType)
            checked += 1
    assert checked == 288 * len(scalars + arrays)


# -- the Arrow kernels type as the codecs' Spark SQL does ---------------------------------------------

# (column, type, PostgreSQL texts at the edges): what the stage task types itself (views.kernels)
_KERNEL_EDGES: list[tuple[str, ColumnType, list[str | None]]] = [
    ("i2", _type("int2"), ["-32768", "32767", None]),
    ("i8", _type("int8"), ["-9223372036854775808", "9223372036854775807", "0"]),
    ("o", _type("oid"), ["4294967295", "0", None]),
    ("f4", _type("float4"), ["3.4028235e+38", "-1.5", "NaN"]),
    ("f8", _type("float8"), ["NaN", "-Infinity", "1e-300"]),
    ("flag", _type("bool"), ["t", "f", None]),
    ("txt", _type("text"), ["", "ünïcode\nline", None]),
    ("u", _type("uuid"), ["a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", None, None]),
    ("d", _type("date"), ["0001-01-01", "9999-12-31", "1969-12-31"]),
    ("t3", _type("time", 3), ["00:00:00", "23:59:59.999", "12:34:56.789"]),
    ("t6", _type("time", 6), ["23:59:59.999999", "00:00:00", None]),
    ("ts6", _type("timestamp", 6), ["0001-01-01 00:00:00", "9999-12-31 23:59:59.999999", "1969-12-31 23:59:59.999999"]),
    ("tstz", _type("timestamptz", 6), ["0001-01-01 00:00:00+00", "9999-12-31 23:59:59.999999+00", "infinity"]),
    ("tstz0", _type("timestamptz", 0), ["-infinity", "1969-12-31 23:59:59+00", "2024-02-29 12:00:00+00"]),
    ("tstz3", _type("timestamptz", 3), ["2024-01-02 03:04:05.5+00", "0001-01-01 00:00:00.5+00 BC", None]),
    ("iv", _type("interval"), ["1 day 02:00:00", "-00:00:00.000001", None]),
    ("ints", _array(_type("int4")), ["{1,NULL,-3}", "{}", None]),
]


def _as_compared(column: pa.ChunkedArray) -> list[Any]:
    """Values as both paths must give them: timestamps as their microseconds (pgjdbc's infinity
    sentinels are past Python's datetime), NaN as a string."""
    if pa.types.is_timestamp(column.type):
        column = column.cast(pa.int64())
    return ["nan" if isinstance(v, float) and v != v else v for v in column.to_pylist()]


@pytest.mark.parametrize("modes", list(_MODES))
def test_arrow_kernels_type_blocks_as_spark_sql_does(spark, modes: str) -> None:
    """The stage task of a snapshot image types its blocks with Arrow kernels (outputs.changes.typed.BlockTyper):
    on the edge values of every column type with a kernel, in every mode, it gives what the codecs'
    Spark SQL gives (table_changes), column for column. Columns whose codec has no kernel in a mode
    (isostring's text, connect's decimals ...) are left out of that mode's table."""
    from sparkcdc.debezium.records import ChangeRecord
    from sparkcdc.spark.outputs.changes.blocks import change_blocks
    from sparkcdc.spark.outputs.changes.typed import BlockTyper, arrow_typable
    from sparkcdc.spark.views.reader import ColumnReader

    config = _config(**_MODES[modes][0])

    def schema_of(edges: list[tuple[str, ColumnType, list[str | None]]]) -> Any:
        columns = (ColumnDescription("id", _type("int4"), True, None, 0),
                   *(ColumnDescription(name, type_, False, None, i + 1) for i, (name, type_, _) in enumerate(edges)))
        return TableSchemaFactory(config).build(TableDescription("public", "s", columns, ("id",)))

    every = schema_of(_KERNEL_EDGES)
    readers = {r.column.name: r for r in (ColumnReader.of(c) for c in view_of(every, config, replica_identity="d",
                                                                               identity_columns=("id",)).columns)}
    edges = [edge for edge in _KERNEL_EDGES if readers[edge[0]].codec.arrow_kernel is not None]
    assert len(edges) >= 10, [edge[0] for edge in edges]
    schema = schema_of(edges)
    view = view_of(schema, config, replica_identity="d", identity_columns=("id",))
    assert arrow_typable(view)
    rows = [(str(i + 1), *(texts[i] for _, _, texts in edges)) for i in range(3)]
    events = [*(("r", None, row) for row in rows), ("u", rows[0], rows[1]), ("d", rows[2], None)]
    records = []
    for ordinal, (op, old, new) in enumerate(events):
        envelope = {"before": schema.row(old) if old else None, "after": schema.row(new) if new else None, "source": {}, "op": op}
        key = schema.key(new if new is not None else old)
        records.append(ChangeRecord(schema.topic, key, schema.key_schema, envelope, schema.envelope_schema, (), op, "public", "s",
                                    ordinal, ordinal, ordinal, 7, 0, "true" if op == "r" else None, schema))
    batches = list(change_blocks(records, config, block_rows=2))
    by_spark = table_changes(spark.createDataFrame(pa.Table.from_batches(batches)), view, layout="changes").toArrow()
    typed = pa.Table.from_batches(list(BlockTyper(view)(iter(pa.RecordBatch.from_arrays([b.column("block")], names=["block"])
                                                             for b in batches))))
    assert typed.num_rows == by_spark.num_rows == len(events)
    for name in typed.column_names:
        assert _as_compared(typed.column(name)) == _as_compared(by_spark.column(name)), (modes, name)
