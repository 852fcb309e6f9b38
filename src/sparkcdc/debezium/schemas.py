"""The fixed Connect schemas of Debezium's PostgreSQL events: source block, transaction block,
envelope, logical decoding messages, heartbeats, transaction metadata and notification records."""

from __future__ import annotations

from functools import cache

from .connect import ConnectSchema, array, bytes_, int64, map_, string, struct

__all__ = [
    "ENVELOPE_VERSION",
    "SNAPSHOT_ALLOWED",
    "SOURCE_SCHEMA_NAME",
    "envelope_schema",
    "heartbeat_key_schema",
    "heartbeat_value_schema",
    "message_key_schema",
    "message_value_schema",
    "notification_key_schema",
    "notification_value_schema",
    "source_schema",
    "transaction_block_schema",
    "transaction_key_schema",
    "transaction_value_schema",
]

SOURCE_SCHEMA_NAME = "io.debezium.connector.postgresql.Source"
SNAPSHOT_ALLOWED = "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"
ENVELOPE_VERSION = 2


@cache
def source_schema() -> ConnectSchema:
    snapshot = string(optional=True, name="io.debezium.data.Enum", version=1).with_parameters(
        {"allowed": SNAPSHOT_ALLOWED}
    ).with_default("false")
    return struct(
        [
            ("version", string()),
            ("connector", string()),
            ("name", string()),
            ("ts_ms", int64()),
            ("snapshot", snapshot),
            ("db", string()),
            ("sequence", string(optional=True)),
            ("ts_us", int64(optional=True)),
            ("ts_ns", int64(optional=True)),
            ("schema", string()),
            ("table", string()),
            ("txId", int64(optional=True)),
            ("lsn", int64(optional=True)),
            ("xmin", int64(optional=True)),
            ("origin", string(optional=True)),
            ("origin_lsn", int64(optional=True)),
        ],
        name=SOURCE_SCHEMA_NAME,
        version=1,
    )


@cache
def transaction_block_schema() -> ConnectSchema:
    return struct(
        [("id", string()), ("total_order", int64()), ("data_collection_order", int64())],
        optional=True,
        name="event.block",
        version=1,
    )


def envelope_schema(row_schema: ConnectSchema, name: str) -> ConnectSchema:
    """``before``/``after`` rows, source, transaction, op and the processing timestamps."""
    row = row_schema.as_optional(True)
    return struct(
        [
            ("before", row),
            ("after", row),
            ("source", source_schema()),
            ("transaction", transaction_block_schema()),
            ("op", string()),
            ("ts_ms", int64(optional=True)),
            ("ts_us", int64(optional=True)),
            ("ts_ns", int64(optional=True)),
        ],
        name=name,
        version=ENVELOPE_VERSION,
    )


@cache
def message_key_schema() -> ConnectSchema:
    return struct([("prefix", string(optional=True))], name="io.debezium.connector.postgresql.MessageKey", version=1)


@cache
def message_value_schema(binary_mode: str) -> ConnectSchema:
    content = bytes_(optional=True) if binary_mode == "bytes" else string(optional=True)
    message = struct(
        [("prefix", string(optional=True)), ("content", content)],
        name="io.debezium.connector.postgresql.Message",
        version=1,
    )
    return struct(
        [
            ("op", string()),
            ("ts_ms", int64(optional=True)),
            ("source", source_schema()),
            ("transaction", transaction_block_schema()),
            ("message", message),
        ],
        name="io.debezium.connector.postgresql.MessageValue",
        version=1,
    )


@cache
def heartbeat_key_schema() -> ConnectSchema:
    return struct([("serverName", string())], name="io.debezium.connector.common.ServerNameKey", version=1)


@cache
def heartbeat_value_schema() -> ConnectSchema:
    return struct([("ts_ms", int64())], name="io.debezium.connector.common.Heartbeat", version=1)


@cache
def transaction_key_schema() -> ConnectSchema:
    return struct([("id", string())], name="io.debezium.connector.common.TransactionMetadataKey", version=1)


@cache
def transaction_value_schema() -> ConnectSchema:
    collection = struct(
        [("data_collection", string()), ("event_count", int64())], optional=True, name="event.collection", version=1
    )
    return struct(
        [
            ("status", string()),
            ("id", string()),
            ("event_count", int64(optional=True)),
            ("data_collections", array(collection, optional=True)),
            ("ts_ms", int64()),
        ],
        name="io.debezium.connector.common.TransactionMetadataValue",
        version=1,
    )



@cache
def notification_key_schema() -> ConnectSchema:
    return struct([("id", string())], name="io.debezium.connector.common.NotificationKey", version=1)


@cache
def notification_value_schema() -> ConnectSchema:
    """Debezium's ``SchemaFactory.notificationValueSchema``: every field required but the map."""
    return struct(
        [
            ("id", string()),
            ("type", string()),
            ("aggregate_type", string()),
            ("additional_data", map_(string(), string(), optional=True)),
            ("timestamp", int64()),
        ],
        name="io.debezium.connector.common.Notification",
        version=1,
    )
