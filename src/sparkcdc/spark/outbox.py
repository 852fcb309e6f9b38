"""Outbox events as a typed Spark DataFrame: what the outbox ``EventRouter`` wrote, read back with
its payload as typed columns (a struct when ``table.expand.json.payload=true`` expanded it).

The router's events are not change events, so the typed per-table views (:mod:`.views`) do not
apply; but each record carries its Connect schema (``schemas.enable=true``, the default), and an
expanded payload's schema is exactly what Debezium inferred from its JSON. This reads those schemas,
merges the shapes a topic holds (an object's null fields are left out of its schema, so events of
one aggregate type differ in fields; the merged struct has the fields in the order events brought
them) and types every record with the views' own Connect -> Spark
mapping (:func:`.views.type_map.codec_for`: Spark SQL expressions, no Python UDF)::

    from sparkcdc.spark.outbox import outbox_events

    orders = outbox_events(spark.read.text("out/outbox.event.Order"))   # a topic directory of topic files
    orders.select("key", "event_id", "payload.id", "payload.lines").show()

Input: a topic directory read with ``spark.read.text`` (topic files, plain or ``.jsonl.zst``), the
``postgres-cdc`` source's ``lines`` layout (``topic, line, ...``) or its ``columns`` layout / any
frame with ``topic, key, value, headers``. Output columns: ``topic``, ``key`` (typed), ``event_id``
(the ``id`` header's value), ``payload`` (typed), one column per field the router put in an envelope
(``table.fields.additional.placement=<column>:envelope[:alias]``), ``headers`` (name and JSON text
of each), ``lsn``, ``commit_lsn``, ``ordinal``. A tombstone (``route.tombstone.on.empty.payload``)
is a row whose payload is null.

A batch frame's schemas are read from its records (one small ``distinct`` job: one row per shape);
a streaming frame has no records yet, so it needs ``value_schema`` (and ``key_schema`` unless the
key is a string): a record's ``schema`` object, as JSON text or parsed. Payloads of incompatible
types (an event whose JSON the router could not expand stays text beside structs) are refused,
naming the field; select one shape first, or pass ``value_schema``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..debezium.connect import ConnectSchema, Field, string
from ..debezium.connect_json import schema_from_json
from ..errors import ConfigurationError
from .views.expressions import quote_name
from .views.type_map import Codec, codec_for

__all__ = ["OutboxSchemaError", "outbox_events"]

_LINE = T.StructType([
    T.StructField("key", T.StringType()), T.StructField("value", T.StringType()),
    T.StructField("headers", T.ArrayType(T.StructType([T.StructField("name", T.StringType()), T.StructField("value", T.StringType())]))),
    T.StructField("lsn", T.LongType()), T.StructField("commit_lsn", T.LongType()), T.StructField("ordinal", T.LongType()),
])
_POSITION = ("lsn", "commit_lsn", "ordinal")

SchemaGiven = str | Mapping[str, Any] | ConnectSchema


class OutboxSchemaError(ConfigurationError):
    """The records' schemas cannot type one frame (incompatible shapes, no schema in the records)."""


def outbox_events(records: DataFrame, *, value_schema: SchemaGiven | None = None, key_schema: SchemaGiven | None = None) -> DataFrame:
    """``records`` (see the module docstring for the inputs) as typed outbox events."""
    rows = _normalized(records)
    values = _given(value_schema) if value_schema is not None else _read_schema(rows, "value")
    keys = _given(key_schema) if key_schema is not None else (_read_schema(rows, "key") if not rows.isStreaming else string())
    key_codec = None if keys is None else codec_for(_plain(keys), "key")
    value_codec = None if values is None else codec_for(_plain(values), "payload")
    # First each text's payload as from_json reads it, then the views' conversions (Spark SQL texts) over those columns.
    raw = rows.select(
        F.col("topic"),
        (F.lit(None).cast("string") if key_codec is None else _raw_payload(F.col("key"), key_codec.raw)).alias(_RAW_KEY),
        _event_id().alias("event_id"),
        (F.lit(None).cast("string") if value_codec is None else _raw_payload(F.col("value"), value_codec.raw)).alias(_RAW_VALUE),
        F.col("headers"), *(F.col(name) for name in _POSITION),
    )
    columns = [F.col("topic"), _converted(_RAW_KEY, key_codec).alias("key"), F.col("event_id")]
    if values is not None and _is_envelope(values):
        envelope = _converted(_RAW_VALUE, value_codec)
        columns += [envelope.getField(f.name).alias(f.name) for f in values.fields]
    else:
        columns.append(_converted(_RAW_VALUE, value_codec).alias("payload"))
    return raw.select(*columns, F.col("headers"), *(F.col(name) for name in _POSITION))


_RAW_KEY, _RAW_VALUE = "__outbox_raw_key", "__outbox_raw_value"


def _normalized(records: DataFrame) -> DataFrame:
    """``topic, key, value, headers (name, value texts), lsn, commit_lsn, ordinal`` from any input."""
    names = records.columns
    if names == ["value"]:  # spark.read.text of topic files: the topic is the file's directory
        line = F.from_json(F.col("value"), _LINE)
        topic = F.regexp_extract(F.input_file_name(), r"([^/]+)/[^/]+$", 1)
        return records.select(topic.alias("topic"), *(line.getField(f.name).alias(f.name) for f in _LINE.fields))
    if "line" in names:
        line = F.from_json(F.col("line"), _LINE)
        return records.select(F.col("topic"), *(line.getField(f.name).alias(f.name) for f in _LINE.fields))
    if {"topic", "key", "value", "headers"} <= set(names):
        headers = F.transform(F.col("headers"), lambda h: F.struct(h.getField("key").alias("name"),
                                                                   F.decode(h.getField("value"), "UTF-8").alias("value")))
        return records.select(F.col("topic"), F.col("key"), F.col("value"), headers.alias("headers"),
                              *((F.col(n) if n in names else F.lit(None).cast("long")).alias(n) for n in _POSITION))
    raise OutboxSchemaError(f"outbox_events reads topic files (spark.read.text), the lines layout (topic, line) or frames with "
                            f"topic, key, value, headers; this frame has {', '.join(names)}")


def _given(schema: SchemaGiven) -> ConnectSchema:
    if isinstance(schema, ConnectSchema):
        return schema
    return schema_from_json(json.loads(schema) if isinstance(schema, str) else schema)


def _read_schema(rows: DataFrame, part: str) -> ConnectSchema | None:
    """The merged schema of ``part`` (key or value) over a batch frame's records; None when no record
    has one (only tombstones)."""
    if rows.isStreaming:
        raise OutboxSchemaError(f"a streaming frame has no records to read the {part} schema from: pass {part}_schema= "
                                "(a record's schema object, e.g. from the topic files)", prop=f"{part}_schema")
    # One row per shape, the earliest event's first: the merged struct's fields are in the order events brought them.
    first = F.min(F.struct(*(F.col(name) for name in ("commit_lsn", "lsn", "ordinal"))))
    # A null payload (an outbox row without one) says nothing of the payload's type: its schema is the column's.
    texts = [row[0] for row in rows.where(F.get_json_object(F.col(part), "$.payload").isNotNull())
             .groupBy(F.get_json_object(F.col(part), "$.schema").alias("schema")).agg(first.alias("first"))
             .orderBy("first").collect()]
    if not texts:
        return None
    if None in texts:
        raise OutboxSchemaError(f"some records carry no {part} schema ({part}.converter.schemas.enable=false): pass "
                                f"{part}_schema=", prop=f"{part}_schema")
    schemas = [schema_from_json(json.loads(text)) for text in texts]
    merged = schemas[0]
    for schema in schemas[1:]:
        merged = _merge(merged, schema, part)
    return merged


def _merge(a: ConnectSchema, b: ConnectSchema, where: str) -> ConnectSchema:
    """One schema that types the values of both (a field only one has becomes optional)."""
    if a == b:
        return a
    optional = a.optional or b.optional
    if a.type != b.type or (a.name != b.name and a.type != "struct") or a.parameters != b.parameters:
        raise OutboxSchemaError(f"the records' {where} has two incompatible types: {_describe(a)} and {_describe(b)}; "
                                "select the records of one shape first, or pass the schema to type them with")
    if a.type == "struct":
        theirs = {f.name: f.schema for f in b.fields}
        fields = [Field(f.name, _merge(f.schema, theirs[f.name], f"{where}.{f.name}") if f.name in theirs else f.schema.as_optional())
                  for f in a.fields]
        ours = {f.name for f in a.fields}
        fields += [Field(f.name, f.schema.as_optional()) for f in b.fields if f.name not in ours]
        return replace(a, optional=optional, fields=tuple(fields), _json=None)
    if a.type == "array":
        assert a.items is not None and b.items is not None
        return replace(a, optional=optional, items=_merge(a.items, b.items, f"{where}[]"), _json=None)
    if a.type == "map":
        assert a.keys is not None and a.values is not None and b.keys is not None and b.values is not None
        return replace(a, optional=optional, keys=_merge(a.keys, b.keys, f"{where}{{key}}"),
                       values=_merge(a.values, b.values, f"{where}{{value}}"), _json=None)
    return a.as_optional(optional)


#: Where Connect's and Debezium's logical types live: a struct named otherwise (an expanded payload's
#: ``payload.lines``, the envelope's ``<...>.Value``) is a plain struct to the views' type mapping.
_LOGICAL_NAMESPACES = ("io.debezium.", "org.apache.kafka.connect.")


def _plain(schema: ConnectSchema) -> ConnectSchema:
    """``schema`` with the names of its plain structs dropped (the type mapping types named schemas
    by their name, and these names are paths, not types)."""
    name = schema.name
    if schema.type == "struct" and name is not None and not name.startswith(_LOGICAL_NAMESPACES):
        name = None
    fields = tuple(Field(f.name, _plain(f.schema)) for f in schema.fields)
    items = None if schema.items is None else _plain(schema.items)
    values = None if schema.values is None else _plain(schema.values)
    return replace(schema, name=name, fields=fields, items=items, values=values, _json=None)


def _describe(schema: ConnectSchema) -> str:
    return schema.type + (f" ({schema.name})" if schema.name else "")


def _is_envelope(schema: ConnectSchema) -> bool:
    """The router's envelope: a struct named ``<...>.<routed value>.Value`` whose first field is the payload."""
    return (schema.type == "struct" and bool(schema.fields) and schema.fields[0].name == "payload"
            and (schema.name or "").endswith(".Value"))


def _raw_payload(text: Column, raw: T.DataType) -> Column:
    """The ``payload`` of a ``{"schema": ..., "payload": ...}`` text, parsed as ``raw``."""
    return F.from_json(text, T.StructType([T.StructField("payload", raw)])).getField("payload")


def _converted(name: str, codec: Codec | None) -> Column:
    """The raw column ``name`` through ``codec``'s conversion (none: as read)."""
    if codec is None or codec.convert is None:
        return F.col(name)
    return F.expr(codec.apply(quote_name(name)))


def _event_id() -> Column:
    ids = F.filter(F.col("headers"), lambda h: h.getField("name") == F.lit("id"))
    return F.get_json_object(F.try_element_at(ids, F.lit(1)).getField("value"), "$.payload")
