"""Change records shaped as sparkcdc's connector makes them, for the transforms' unit tests."""

from __future__ import annotations

from typing import Any

from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.debezium.connect import ConnectSchema, int32, int64, string, struct
from sparkcdc.debezium.records import ChangeRecord, Header
from sparkcdc.debezium.schemas import envelope_schema, heartbeat_key_schema, heartbeat_value_schema
from sparkcdc.debezium.transforms import TransformChain, transform_chain

BASE = {"database.hostname": "h", "database.user": "u", "database.dbname": "d", "topic.prefix": "shop"}
UNWRAP = "io.debezium.transforms.ExtractNewRecordState"
CHANGED = "io.debezium.transforms.ExtractChangedRecordState"
HEADER_TO_VALUE = "io.debezium.transforms.HeaderToValue"
TIMEZONE = "io.debezium.transforms.TimezoneConverter"

TOPIC = "shop.public.orders"
ROW = struct([("id", int32()), ("name", string(optional=True).with_default("none")), ("dest", string(optional=True)),
              ("qty", int64(optional=True))], optional=True, name="shop.public.orders.Value")
KEY = struct([("id", int32())], name="shop.public.orders.Key")
ENVELOPE = envelope_schema(ROW, "shop.public.orders.Envelope")
CONTEXT = (Header("__debezium.context.connectorName", "postgresql", string(), constant=True),)


def source(*, snapshot: str = "false", ts_ms: int = 1_700_000_000_000, table: str = "orders") -> dict[str, Any]:
    return {"version": "3.6.3.Final", "connector": "postgresql", "name": "shop", "ts_ms": ts_ms, "snapshot": snapshot,
            "db": "shop", "sequence": '[null,"100"]', "ts_us": ts_ms * 1000, "ts_ns": ts_ms * 1_000_000, "schema": "public",
            "table": table, "txId": 7, "lsn": 100, "xmin": None, "origin": None, "origin_lsn": None}


def change(op: str, before: dict[str, Any] | None = None, after: dict[str, Any] | None = None, *,
           headers: tuple[Header, ...] = CONTEXT, key: dict[str, Any] | None = None, envelope: ConnectSchema = ENVELOPE,
           topic: str = TOPIC, src: dict[str, Any] | None = None) -> ChangeRecord:
    """An envelope record (``c u d r t``) of the orders table."""
    row = after if after is not None else before
    if key is None and op != "t":
        key = {"id": (row or {"id": 1})["id"]}
    value = {"before": before, "after": after, "source": src or source(snapshot="true" if op == "r" else "false"),
             "transaction": None, "op": op, "ts_ms": 1, "ts_us": 1, "ts_ns": 1}
    return ChangeRecord(topic, key, None if op == "t" else KEY, value, envelope, headers, op, "public", "orders", 100, 100)


def tombstone(key: dict[str, Any], headers: tuple[Header, ...] = CONTEXT, topic: str = TOPIC) -> ChangeRecord:
    return ChangeRecord(topic, key, KEY, None, None, headers, None, "public", "orders")


def heartbeat() -> ChangeRecord:
    return ChangeRecord("__debezium-heartbeat.shop", {"serverName": "shop"}, heartbeat_key_schema(), {"ts_ms": 5},
                        heartbeat_value_schema())


def chain_of(alias: str, class_name: str, **options: str) -> TransformChain:
    return transform_chain({"transforms": alias, f"transforms.{alias}.type": class_name,
                            **{f"transforms.{alias}.{name}": value for name, value in options.items()}})


def run(chain: TransformChain, *records: ChangeRecord) -> list[ChangeRecord]:
    return list(chain.apply(records))


def config(**properties: str) -> ConnectorConfig:
    return ConnectorConfig({**BASE, **properties})
