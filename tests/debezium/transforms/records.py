"""Records shaped as sparkcdc's connector makes them, for the transform unit tests: a change event
(envelope), its tombstone, a heartbeat, a transaction record, a logical decoding message, a row of
a table without a key, and a schemaless record (which Debezium's connector never makes, but a
transform before may)."""

from __future__ import annotations

from typing import Any

from sparkcdc.debezium.connect import boolean, bytes_, float32, float64, int16, int32, int64, string, struct
from sparkcdc.debezium.records import ChangeRecord, Header
from sparkcdc.debezium.transforms import TransformChain, transform_chain
from sparkcdc.debezium.types.numeric import decimal_schema

K = "org.apache.kafka.connect.transforms."
TOPIC = "shop.public.items"

ROW = struct([
    ("id", int32()),
    ("name", string(optional=True)),
    ("qty", int16(optional=True).with_default(3)),
    ("price", decimal_schema(2, 10).as_optional()),
    ("ratio", float32(optional=True)),
    ("score", float64(optional=True)),
    ("flag", boolean(optional=True)),
    ("born", int32(optional=True, name="io.debezium.time.Date", version=1)),
    ("blob", bytes_(optional=True)),
], optional=True, name="shop.public.items.Value")
SOURCE = struct([("table", string()), ("snapshot", string(optional=True))], name="io.debezium.connector.postgresql.Source")
ENVELOPE = struct([("before", ROW), ("after", ROW), ("source", SOURCE), ("op", string()), ("ts_ms", int64(optional=True))],
                  name="shop.public.items.Envelope", version=2)
KEY = struct([("id", int32())], name="shop.public.items.Key")
HEADERS = (Header("__debezium.context.connectorLogicalName", "shop", string(), constant=True),
           Header("__debezium.context.connectorName", "postgresql", string(), constant=True))

AFTER = {"id": 1, "name": "alice", "qty": 7, "price": "BNI=", "ratio": 3.7, "score": 0.1, "flag": True, "born": 18263,
         "blob": "Af8="}


def change(op: str = "c", after: dict[str, Any] | None = AFTER, before: dict[str, Any] | None = None) -> ChangeRecord:
    value = {"before": before, "after": after, "source": {"table": "items", "snapshot": "false"}, "op": op, "ts_ms": 5}
    return ChangeRecord(TOPIC, {"id": 1}, KEY, value, ENVELOPE, HEADERS, op=op, schema="public", table="items", lsn=7,
                        commit_lsn=9, ordinal=2)


def tombstone() -> ChangeRecord:
    return ChangeRecord(TOPIC, {"id": 1}, KEY, None, None, HEADERS, schema="public", table="items", lsn=7, commit_lsn=9)


def heartbeat() -> ChangeRecord:
    key_schema = struct([("serverName", string())], name="io.debezium.connector.common.ServerNameKey", version=1)
    value_schema = struct([("ts_ms", int64())], name="io.debezium.connector.common.Heartbeat", version=1)
    return ChangeRecord("__debezium-heartbeat.shop", {"serverName": "shop"}, key_schema, {"ts_ms": 12}, value_schema)


def transaction() -> ChangeRecord:
    key_schema = struct([("id", string())], name="io.debezium.connector.common.TransactionMetadataKey", version=1)
    value_schema = struct([("status", string()), ("id", string()), ("event_count", int64(optional=True))],
                          name="io.debezium.connector.common.TransactionMetadataValue", version=1)
    return ChangeRecord("shop.transaction", {"id": "5:7"}, key_schema, {"status": "BEGIN", "id": "5:7", "event_count": None},
                        value_schema, HEADERS)


def message() -> ChangeRecord:
    key_schema = struct([("prefix", string(optional=True))], name="io.debezium.connector.postgresql.MessageKey", version=1)
    body = struct([("prefix", string(optional=True)), ("content", bytes_(optional=True))],
                  name="io.debezium.connector.postgresql.Message", version=1)
    value_schema = struct([("op", string()), ("ts_ms", int64(optional=True)), ("message", body)],
                          name="io.debezium.connector.postgresql.MessageValue", version=1)
    return ChangeRecord("shop.message", {"prefix": "audit"}, key_schema,
                        {"op": "m", "ts_ms": 5, "message": {"prefix": "audit", "content": "eA=="}}, value_schema, HEADERS, op="m")


def keyless() -> ChangeRecord:
    """A change of a table without a primary key: a null key."""
    record = change()
    return ChangeRecord(record.topic, None, None, record.value, record.value_schema, record.headers, op="c")


def schemaless(value: Any, key: Any = None) -> ChangeRecord:
    return ChangeRecord(TOPIC, key, None, value, None)


def chain(kind: str, **options: str) -> TransformChain:
    """One transform ``t`` of Kafka's class ``kind`` with ``options`` (dots written as underscores)."""
    return transform_chain({"transforms": "t", "transforms.t.type": K + kind,
                            **{f"transforms.t.{name.replace('_', '.')}": value for name, value in options.items()}})


def run(kind: str, record: ChangeRecord, **options: str) -> ChangeRecord | None:
    out = list(chain(kind, **options).apply([record]))
    return out[0] if out else None


def row_free_records() -> list[ChangeRecord]:
    """A heartbeat, a transaction record and a message: records with a struct value that is no row change."""
    return [heartbeat(), transaction(), message()]
