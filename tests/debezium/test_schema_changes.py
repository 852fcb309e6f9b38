"""Schema change records (``include.schema.changes``): their key and value schemas and payloads, as
JsonConverter prints them through the project's serializer, for a table of many column types.

The shapes are those of Debezium's schema change topic (the Db2/MySQL connectors'), named under the
PostgreSQL connector: see sparkcdc.debezium.schema_changes and docs/schema-change-topic.md.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.debezium.events import EventFactory
from sparkcdc.debezium.schema_changes import jdbc_type, quoted_table_id, schema_change_record
from sparkcdc.debezium.serialization import JsonSerializer
from sparkcdc.debezium.table import ColumnDescription, TableDescription, TableSchemaFactory
from sparkcdc.debezium.types import ColumnType

CLOCK_NS = 1_700_000_000_123_456_789
CONFIG = ConnectorConfig({"database.hostname": "h", "database.user": "u", "database.dbname": "shop", "topic.prefix": "srv"})


def _type(oid: int, name: str, modifier: int = -1, *, declared: str | None = None, namespace: str = "pg_catalog",
          typtype: str = "b", enum: tuple[str, ...] = (), element: ColumnType | None = None) -> ColumnType:
    return ColumnType(oid, name, namespace, modifier, declared or name, typtype, "U", enum, element)


INT4 = _type(23, "int4")
MOOD = _type(16500, "mood", namespace="public", typtype="e", enum=("sad", "ok", "happy"))
COLUMNS = (
    ColumnDescription("id", INT4, True, "nextval('orders_id_seq'::regclass)", 0, 1, "integer"),
    ColumnDescription("code", _type(1043, "varchar", 24), True, None, 1, 2, "character varying(20)"),
    ColumnDescription("amount", _type(1700, "numeric", (10 << 16) + 2 + 4), False, "0.00", 2, 3, "numeric(10,2)"),
    ColumnDescription("mood", MOOD, False, "'ok'::mood", 3, 4, "mood"),
    ColumnDescription("serial_no", _type(20, "int8"), True, None, 4, 5, "bigint", identity="a"),
    ColumnDescription("tags", _type(1007, "_int4", element=INT4), False, None, 5, 6, "integer[]"),
    ColumnDescription("placed", _type(1184, "timestamptz", 3), False, "now()", 6, 7, "timestamp(3) with time zone"),
    ColumnDescription("email", _type(25, "text", declared="email_address"), False, None, 7, 8, "email_address"),
    ColumnDescription("paid", _type(16, "bool"), True, "false", 8, 9, "boolean"),
    ColumnDescription("extra", _type(3802, "jsonb"), False, None, 9, 10, "jsonb"),
    ColumnDescription("blob", _type(17, "bytea"), False, None, 10, 11, "bytea"),
)
TABLE = TableDescription("public", "orders", COLUMNS, ("id",), 16400, "d", ("id",))


def _events() -> EventFactory:
    return EventFactory(CONFIG, "shop", TableSchemaFactory(CONFIG).topics, clock_ns=lambda: CLOCK_NS)


def _record(kind: str = "ALTER", **kwargs: Any) -> Any:
    events = _events()
    source = events.source(schema="public", table="orders", ts_us=1_700_000_000_000_001, tx_id=771, lsn=24_000_000,
                           last_commit_lsn=23_999_000)
    return schema_change_record(events, kind, TABLE, source, **kwargs)


def _serialized(record: Any, **serializer: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    key, value, headers = JsonSerializer(**serializer).record(record)
    assert key is not None and value is not None and headers == []
    return orjson.loads(key), orjson.loads(value)


def _fields(schema: dict[str, Any]) -> list[tuple[str, str, bool]]:
    return [(f["field"], f["type"], f["optional"]) for f in schema["fields"]]


def test_the_key_and_value_schemas_are_debeziums_schema_change_schemas() -> None:
    key, value = _serialized(_record())
    assert key == {
        "schema": {"type": "struct", "fields": [{"type": "string", "optional": False, "field": "databaseName"}], "optional": False,
                   "name": "io.debezium.connector.postgresql.SchemaChangeKey", "version": 1},
        "payload": {"databaseName": "shop"},
    }
    schema = value["schema"]
    assert (schema["name"], schema["version"], schema["optional"]) == ("io.debezium.connector.postgresql.SchemaChangeValue", 1, False)
    assert _fields(schema) == [("source", "struct", False), ("ts_ms", "int64", False), ("databaseName", "string", True),
                               ("schemaName", "string", True), ("ddl", "string", True), ("tableChanges", "array", False)]
    source = schema["fields"][0]
    assert source["name"] == "io.debezium.connector.postgresql.Source"  # the row events' source block
    change = schema["fields"][5]["items"]
    assert (change["name"], change["version"], change["optional"]) == ("io.debezium.connector.schema.Change", 1, False)
    assert _fields(change) == [("type", "string", False), ("id", "string", False), ("table", "struct", True)]
    table = change["fields"][2]
    assert (table["name"], table["version"]) == ("io.debezium.connector.schema.Table", 1)
    assert _fields(table) == [("defaultCharsetName", "string", True), ("primaryKeyColumnNames", "array", True),
                              ("columns", "array", False), ("comment", "string", True)]
    assert table["fields"][1]["items"] == {"type": "string", "optional": False}
    column = table["fields"][2]["items"]
    assert (column["name"], column["version"], column["optional"]) == ("io.debezium.connector.schema.Column", 1, False)
    assert _fields(column) == [
        ("name", "string", False), ("jdbcType", "int32", False), ("nativeType", "int32", True), ("typeName", "string", False),
        ("typeExpression", "string", True), ("charsetName", "string", True), ("length", "int32", True),
        ("scale", "int32", True), ("position", "int32", False), ("optional", "boolean", True),
        ("autoIncremented", "boolean", True), ("generated", "boolean", True), ("comment", "string", True),
        ("defaultValueExpression", "string", True), ("enumValues", "array", True),
    ]
    assert column["fields"][14]["items"] == {"type": "string", "optional": False}


def test_the_payload_describes_the_table_after_the_change() -> None:
    record = _record()
    assert (record.topic, record.op, record.table_schema, record.schema, record.table) == ("srv", None, None, "public", "orders")
    _, value = _serialized(record)
    payload = value["payload"]
    assert payload["source"] == {
        "version": payload["source"]["version"], "connector": "postgresql", "name": "srv", "ts_ms": 1_700_000_000_000,
        "snapshot": "false", "db": "shop", "sequence": '["23999000","24000000"]', "ts_us": 1_700_000_000_000_001,
        "ts_ns": 1_700_000_000_000_001_000, "schema": "public", "table": "orders", "txId": 771, "lsn": 24_000_000, "xmin": None,
        "origin": None, "origin_lsn": None,
    }
    assert {k: v for k, v in payload.items() if k not in ("source", "tableChanges")} == {
        "ts_ms": CLOCK_NS // 1_000_000, "databaseName": "shop", "schemaName": "public", "ddl": None,
    }
    [change] = payload["tableChanges"]
    assert (change["type"], change["id"]) == ("ALTER", '"shop"."public"."orders"')
    table = change["table"]
    assert (table["defaultCharsetName"], table["primaryKeyColumnNames"], table["comment"]) == (None, ["id"], None)
    columns = {c["name"]: c for c in table["columns"]}
    assert [c["name"] for c in table["columns"]] == [c.name for c in COLUMNS]
    assert [c["position"] for c in table["columns"]] == list(range(1, len(COLUMNS) + 1))
    assert columns["id"] == {
        "name": "id", "jdbcType": 4, "nativeType": 23, "typeName": "int4", "typeExpression": "int4", "charsetName": None,
        "length": 10, "scale": 0, "position": 1, "optional": False, "autoIncremented": True, "generated": False, "comment": None,
        "defaultValueExpression": "nextval('orders_id_seq'::regclass)", "enumValues": None,
    }
    assert columns["mood"] == {
        "name": "mood", "jdbcType": 12, "nativeType": 16500, "typeName": "mood", "typeExpression": "mood", "charsetName": None,
        "length": 2147483647, "scale": 0, "position": 4, "optional": True, "autoIncremented": False, "generated": False,
        "comment": None, "defaultValueExpression": "'ok'::mood", "enumValues": ["sad", "ok", "happy"],
    }
    facts = {c["name"]: (c["jdbcType"], c["nativeType"], c["typeName"], c["length"], c["scale"], c["optional"], c["autoIncremented"])
             for c in table["columns"]}
    assert facts == {
        "id": (4, 23, "int4", 10, 0, False, True),
        "code": (12, 1043, "varchar", 20, 0, False, False),
        "amount": (2, 1700, "numeric", 10, 2, True, False),
        "mood": (12, 16500, "mood", 2147483647, 0, True, False),
        "serial_no": (-5, 20, "int8", 19, 0, False, True),  # an identity column
        "tags": (2003, 1007, "_int4", 2147483647, 0, True, False),
        "placed": (93, 1184, "timestamptz", 32, 3, True, False),
        "email": (12, 25, "email_address", 2147483647, 0, True, False),  # a domain: the base type's codes, its own name
        "paid": (-7, 16, "bool", 1, 0, False, False),
        "extra": (1111, 3802, "jsonb", 2147483647, 0, True, False),
        "blob": (-2, 17, "bytea", 2147483647, 0, True, False),
    }
    assert [c["defaultValueExpression"] for c in table["columns"]] == [c.default_expression for c in COLUMNS]
    assert all(c["enumValues"] is None for c in table["columns"] if c["name"] != "mood")


def test_a_snapshot_create_takes_the_snapshots_lengths_and_a_filtered_column_is_left_out() -> None:
    unconstrained = TableDescription("public", "n", (ColumnDescription("x", _type(1700, "numeric"), False, None, 0),
                                                     ColumnDescription("secret", _type(25, "text"), False, None, 1)), ())
    events = _events()
    source = events.source(schema="public", table="n", ts_us=1, snapshot="first", lsn=5)
    streamed = schema_change_record(events, "ALTER", unconstrained, source)
    snapshot = schema_change_record(events, "CREATE", unconstrained, source, snapshot=True, selected=lambda name: not name.endswith(".secret"))
    [x_streamed, _] = streamed.value["tableChanges"][0]["table"]["columns"]
    [x_snapshot] = snapshot.value["tableChanges"][0]["table"]["columns"]
    assert (x_streamed["length"], x_streamed["scale"]) == (131089, 0)  # as column.propagate.source.type gives them
    assert (x_snapshot["length"], x_snapshot["scale"], x_snapshot["position"]) == (0, None, 1)
    assert snapshot.value["tableChanges"][0]["type"] == "CREATE" and snapshot.value["tableChanges"][0]["table"]["primaryKeyColumnNames"] == []
    assert snapshot.value["source"]["snapshot"] == "first"


def test_without_schemas_the_value_is_the_bare_payload() -> None:
    key, value = _serialized(_record("CREATE"), key_schemas=False, value_schemas=False)
    assert key == {"databaseName": "shop"} and value["tableChanges"][0]["type"] == "CREATE" and "schema" not in value


def test_table_ids_are_double_quoted_as_debeziums() -> None:
    assert quoted_table_id("shop", "public", "orders") == '"shop"."public"."orders"'
    assert quoted_table_id("shop", "Sales", 'odd"name') == '"shop"."Sales"."odd""name"'
    assert quoted_table_id("shop", "", "t") == '"shop"."t"'


@pytest.mark.parametrize(("column_type", "code"), [
    (_type(21, "int2"), 5), (_type(700, "float4"), 7), (_type(701, "float8"), 8), (_type(1042, "bpchar"), 1),
    (_type(1082, "date"), 91), (_type(1083, "time"), 92), (_type(1266, "timetz"), 92), (_type(1114, "timestamp"), 93),
    (_type(2950, "uuid"), 1111), (_type(114, "json"), 1111), (_type(790, "money"), 8), (_type(26, "oid"), -5),
    (_type(16600, "pair", namespace="public", typtype="c"), 2002), (_type(16601, "int4", namespace="public"), 1111),
])
def test_jdbc_types_are_pgjdbcs(column_type: ColumnType, code: int) -> None:
    assert jdbc_type(column_type) == code


def test_an_unknown_change_type_is_refused() -> None:
    with pytest.raises(ValueError, match="RENAME"):
        _record("RENAME")
