"""Debezium's ``CloudEventsConverter`` for record values: a change event as a CloudEvent (structured
mode, JSON envelope, JSON ``data``), byte for byte as Debezium 3.6 writes it.

What Debezium writes, learned from the oracle (``tests/conformance/test_cloudevents_conformance.py``):

* Only a record whose value schema is named ``*.Envelope`` (a table's change event: ``c u d r t``)
  becomes a CloudEvent. Every other record's value is written as null, its key and headers unchanged:
  heartbeats, transaction metadata, logical decoding messages (``*.MessageValue``), notifications,
  schema change records, tombstones, and a change event a transform reshaped (``unwrap``'s ``*.Value``).
* The attributes, in this order: ``id`` (``name:<source.name>;lsn:<lsn>;txId:<txId>;sequence:<sequence>``,
  a null written ``null``), ``source`` (``/debezium/postgresql/<source.name>``), ``specversion``
  ``1.0``, ``type`` ``io.debezium.connector.postgresql.DataChangeEvent``, ``time`` (``source.ts_ms`` as
  ``yyyy-MM-ddTHH:mm:ss.SSSZ``, in UTC, always three digits of milliseconds), ``datacontenttype``
  ``application/json``; then, unless ``extension.attributes.enable=false``, ``iodebeziumop`` and one
  ``iodebezium<field>`` per field of ``source`` and ``iodebeziumtx<field>`` per field of
  ``transaction`` (underscores dropped: ``ts_ms`` is ``iodebeziumtsms``), each value as Java's
  ``String.valueOf`` (``"728"``, ``"false"``) or null, the transaction's all null when it is; last
  ``data``.
* ``data`` holds the envelope's ``before`` and ``after`` only (a field a transform added to the
  envelope is not in it), as JsonConverter writes a struct named
  ``io.debezium.connector.postgresql.Data`` (``json.schemas.enable``, default true: with its schema).

A schema named ``*.Envelope`` without the fields a CloudEvent is made of (``op``, ``source``,
``before``, ``after``, ``transaction``; a transform dropped one) fails the run, as Debezium's
converter fails on it.
"""

from __future__ import annotations

import time
from typing import Any, Final

import orjson

from ..errors import PipelineError
from .connect import ConnectSchema, Field, struct
from .converters import CloudEventsSettings
from .records import ChangeRecord

__all__ = ["CloudEventsConverter", "CloudEventsError", "is_change_event_schema"]

_ENVELOPE_SUFFIX: Final = ".Envelope"
_SOURCE_PREFIX: Final = "/debezium/postgresql/"
_SPEC_VERSION: Final = "1.0"
_TYPE: Final = "io.debezium.connector.postgresql.DataChangeEvent"
_CONTENT_TYPE: Final = "application/json"
_DATA_SCHEMA_NAME: Final = "io.debezium.connector.postgresql.Data"
_ENVELOPE_FIELDS: Final = ("op", "source", "before", "after", "transaction")
_ID_FIELDS: Final = ("name", "lsn", "txId", "sequence", "ts_ms")


class CloudEventsError(PipelineError):
    """A record cannot be made a CloudEvent (Debezium's converter fails on it too): the run stops,
    naming the record's topic and LSN."""

    def __init__(self, record: ChangeRecord, message: str) -> None:
        where = f"{record.schema}.{record.table}" if record.table else None
        super().__init__(f"value.converter=io.debezium.converters.CloudEventsConverter cannot convert a record of topic "
                         f"{record.topic!r}: {message}", lsn=record.lsn or None, table=where)


def is_change_event_schema(schema: ConnectSchema | None) -> bool:
    """Whether Debezium's converter takes a value of ``schema`` for a change event (else: null)."""
    return schema is not None and schema.name is not None and schema.name.endswith(_ENVELOPE_SUFFIX)


class _Plan:
    """What is decided once per envelope schema: the attribute names and the data's schema text."""

    __slots__ = ("data_schema", "source_attributes", "transaction_attributes")

    def __init__(self, schema: ConnectSchema, data_schemas: bool) -> None:
        fields = {field.name: field for field in schema.fields}
        missing = [name for name in _ENVELOPE_FIELDS if name not in fields]
        if missing:
            raise ValueError(f"its value schema {schema.name} has no field {', '.join(missing)}")
        source, transaction = fields["source"].schema, fields["transaction"].schema
        lacking = [name for name in _ID_FIELDS if name not in {f.name for f in source.fields}]
        if source.type != "struct" or lacking:
            raise ValueError(f"the source block of {schema.name} lacks {', '.join(lacking) or 'its fields'}")
        self.source_attributes = tuple(("iodebezium" + f.name.replace("_", ""), f.name) for f in source.fields)
        self.transaction_attributes = tuple(("iodebeziumtx" + f.name.replace("_", ""), f.name) for f in transaction.fields)
        data = struct((Field("before", fields["before"].schema), Field("after", fields["after"].schema)), name=_DATA_SCHEMA_NAME)
        self.data_schema = orjson.Fragment(orjson.dumps(data.to_json())) if data_schemas else None


class CloudEventsConverter:
    """Makes a record's value bytes as Debezium's ``CloudEventsConverter`` with ``serializer.type=json``
    and ``data.serializer.type=json`` does (the value converter of
    :class:`~sparkcdc.debezium.serialization.JsonSerializer`)."""

    def __init__(self, settings: CloudEventsSettings) -> None:
        self.settings = settings
        self._plans: dict[int, tuple[ConnectSchema, _Plan | None]] = {}
        self._second: int | None = None  # the second the last time fell in, and its text
        self._second_text = ""

    def encode(self, record: ChangeRecord) -> bytes | None:
        """The value's bytes: a CloudEvent, or None (written as null) for a record that is not a change event."""
        value, schema = record.value, record.value_schema
        if value is None or schema is None:
            return None
        cached = self._plans.get(id(schema))
        if cached is None or cached[0] is not schema:
            plan = None
            if is_change_event_schema(schema):
                try:
                    plan = _Plan(schema, self.settings.data_schemas)
                except ValueError as exc:
                    raise CloudEventsError(record, str(exc)) from None
            cached = (schema, plan)
            self._plans[id(schema)] = cached
        plan = cached[1]
        if plan is None:
            return None
        source = value["source"]
        try:
            return orjson.dumps(self._event(record, plan, value, source))
        except TypeError as exc:
            raise CloudEventsError(record, str(exc)) from None

    def _event(self, record: ChangeRecord, plan: _Plan, value: Any, source: Any) -> dict[str, Any]:
        name = _string_of(source["name"])
        event: dict[str, Any] = {
            "id": f"name:{name};lsn:{_string_of(source['lsn'])};txId:{_string_of(source['txId'])};"
                  f"sequence:{_string_of(source['sequence'])}",
            "source": f"{_SOURCE_PREFIX}{name}",
            "specversion": _SPEC_VERSION,
            "type": _TYPE,
            "time": self._time(record, source["ts_ms"]),
            "datacontenttype": _CONTENT_TYPE,
        }
        if self.settings.extension_attributes:
            event["iodebeziumop"] = _java_text(value["op"])
            for attribute, field in plan.source_attributes:
                event[attribute] = _java_text(source.get(field))
            transaction = value.get("transaction")
            for attribute, field in plan.transaction_attributes:
                event[attribute] = None if transaction is None else _java_text(transaction.get(field))
        data = {"before": value.get("before"), "after": value.get("after")}
        event["data"] = data if plan.data_schema is None else {"schema": plan.data_schema, "payload": data}
        return event

    def _time(self, record: ChangeRecord, millis: Any) -> str:
        """``source.ts_ms`` as Debezium's ``time``: UTC, always three digits of milliseconds."""
        if not isinstance(millis, int):
            raise CloudEventsError(record, f"source.ts_ms is {millis!r}, not a time in milliseconds")
        second, fraction = divmod(millis, 1000)
        if second != self._second:
            self._second, self._second_text = second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        return f"{self._second_text}.{fraction:03d}Z"


def _string_of(value: Any) -> str:
    """Java's string concatenation of a value: ``null`` for none."""
    text = _java_text(value)
    return "null" if text is None else text


def _java_text(value: Any) -> str | None:
    """Java's ``String.valueOf`` of a source or transaction field (null stays null)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    raise TypeError(f"a CloudEvents attribute from a {type(value).__name__} is not supported")
