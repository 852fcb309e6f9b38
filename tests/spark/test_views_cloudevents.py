"""Typed views over the ``columns`` layout when the values are Debezium's CloudEvents
(value.converter=CloudEventsConverter): the same rows as over JsonConverter's envelopes."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.debezium.records import ChangeRecord
from sparkcdc.debezium.table import ColumnDescription, TableDescription, TableSchemaFactory
from sparkcdc.debezium.types import ColumnType
from sparkcdc.engine.core.emission import serializer_for
from sparkcdc.spark.outputs.columns import DDL_SCHEMA
from sparkcdc.spark.views import table_changes, view_of

BASE = {"database.hostname": "localhost", "database.user": "u", "database.dbname": "db", "topic.prefix": "srv"}
CLOUDEVENTS = {"value.converter": "io.debezium.converters.CloudEventsConverter"}
_SOURCE = {"version": "v", "connector": "postgresql", "name": "srv", "ts_ms": 1, "snapshot": "false", "db": "db", "sequence": None,
           "ts_us": 1000, "ts_ns": 1000000, "schema": "public", "table": "s", "txId": 7, "lsn": 9, "xmin": None, "origin": None,
           "origin_lsn": None}


def _type(name: str, modifier: int = -1) -> ColumnType:
    return ColumnType(0, name, "pg_catalog", modifier, name)


def _rows(spark: Any, config: ConnectorConfig) -> list[dict[str, Any]]:
    """Three events (create, update, delete) and a tombstone through ``config``'s serializer, as the
    columns layout holds them, read back through the table's view."""
    columns = [("id", _type("int4"), True), ("name", _type("text"), False), ("amount", _type("numeric", (10 << 16 | 2) + 4), False),
               ("at", _type("timestamptz"), False)]
    description = TableDescription("public", "s", tuple(ColumnDescription(n, t, nn, None, i) for i, (n, t, nn) in enumerate(columns)),
                                   ("id",))
    schema = TableSchemaFactory(config).build(description)
    view = view_of(schema, config, replica_identity="d", identity_columns=("id",))
    serializer = serializer_for(config)
    rows = []
    events = [("c", None, ("1", "a", "1.50", "2024-01-02 03:04:05+00")), ("u", None, ("1", "b", "2.25", None)),
              ("d", ("1", None, None, None), None)]
    for ordinal, (op, old, new) in enumerate(events):
        envelope = {"before": schema.row(old) if old else None, "after": schema.row(new) if new else None, "source": _SOURCE,
                    "transaction": None, "op": op, "ts_ms": 1, "ts_us": 1, "ts_ns": 1}
        record = ChangeRecord(schema.topic, schema.key(new or old), schema.key_schema, envelope, schema.envelope_schema, op=op)
        key, value, _ = serializer.record(record)
        rows.append((schema.topic, key.decode(), value.decode(), [], op, "public", "s", ordinal, ordinal, ordinal, 7,
                     dt.datetime(2024, 1, 1), None))
    rows.append((schema.topic, None, None, [], None, "public", "s", 99, 99, 99, None, None, None))  # a tombstone
    frame = spark.createDataFrame(rows, DDL_SCHEMA)
    return sorted((r.asDict(recursive=True) for r in table_changes(frame, view).collect()), key=lambda r: r["__ordinal"])


@pytest.mark.parametrize("settings", [{}, {"value.converter.json.schemas.enable": "false"}], ids=["data with schema", "bare data"])
def test_a_view_reads_cloudevents_as_it_reads_envelopes(spark, settings: dict[str, str]) -> None:
    plain = _rows(spark, ConnectorConfig(BASE))
    cloudevents = _rows(spark, ConnectorConfig(BASE | CLOUDEVENTS | settings))
    assert [(r["__op"], r["id"], r["name"]) for r in cloudevents] == [("c", 1, "a"), ("u", 1, "b"), ("d", 1, None)]
    assert cloudevents == plain
