"""Debezium's outbox ``EventRouter`` (``transforms.<alias>.type=io.debezium.transforms.outbox.EventRouter``):
rows inserted into an outbox table become events on a topic named by one of their columns.

What it does, as Debezium 3.6.3 does it (each point checked against it, tests/conformance/
test_transforms_routing_conformance.py):

* A row's insert (``c``) or snapshot read (``r``) becomes an event: topic
  ``route.topic.replacement`` with ``${routedByValue}`` (or any group of ``route.topic.regex``,
  matched whole) taken from the string column ``route.by.field`` (a value the regex does not match
  is the topic itself; a null one stops the connector); key and key schema the column
  ``table.field.event.key``; value the column ``table.field.event.payload`` (with its schema:
  ``io.debezium.data.Json`` for ``jsonb``); a header ``id`` from ``table.field.event.id`` after the
  record's own headers.
* ``table.fields.additional.placement`` (``column:placement[:alias]``, placement ``header``,
  ``envelope`` or ``partition``, any case): ``header`` appends a header; ``envelope`` makes the value a
  struct ``{payload, <alias>...}`` named ``<the row's envelope name without .Envelope>.<routed
  value>.Value`` and versioned by the INT32 column ``table.field.event.schema.version`` (when set and
  not null). Debezium keeps one envelope schema per version value (null too) when that option is
  set, else one per payload schema, named by its first event; an event whose expanded payload does
  not fit the envelope kept for its version stops Debezium, and sparkcdc;
  ``partition`` sends the event to the partition an INT32 column holds. A configured column the table
  does not have stops the connector, unless ``table.field.additional.missing=ignore``.
* ``table.expand.json.payload=true`` expands a JSON text payload into a struct (:mod:`.outbox_json`),
  ``route.tombstone.on.empty.payload=true`` makes a null payload, or an empty text one, a tombstone
  (an empty ``bytea`` payload is not).
* An update of the outbox table is dropped with a warning (``table.op.invalid.behavior=warn``), an
  error in the log (``error``) or stops the connector (``fatal``); a delete and a tombstone are
  dropped; a truncate stops the connector (it has no row); records that are not row changes
  (heartbeats, transaction metadata, logical decoding messages, schema change records) pass.

Refused, with the reason: ``table.field.event.timestamp`` (it sets the Kafka record's timestamp,
which sparkcdc's outputs do not carry) and the ``tracing.*`` options (OpenTelemetry spans, which
sparkcdc does not produce). ``table.field.event.type`` is accepted with a warning: Debezium's router
does not put it in the event either; ``table.field.event.payload.id`` (removed in Debezium 2.0, read
by nothing in 3.6) is reported as removed. Compiled per envelope schema (:class:`_Plan`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from ..connect import ConnectSchema, struct
from ..records import ChangeRecord, Header
from .base import Option, Options, PerSchema, Transform, copy_record
from .envelope import field_schema
from .java_regex import compile_java_regex, java_replacement
from .outbox_json import NotExpanded, SchemaInterner, Unfit, expand_json

__all__ = ["EventRouter"]

log = logging.getLogger(__name__)

_PLACEMENTS = ("header", "envelope", "partition")
_TRACING = ("tracing.span.context.field", "tracing.operation.name", "tracing.with.context.field.only")


@dataclass(frozen=True)
class _Placement:
    column: str
    where: str  # header, envelope or partition
    name: str  # the header's or the envelope field's name


def _placements(options: Options) -> tuple[_Placement, ...]:
    out = []
    for entry in options.list("table.fields.additional.placement"):
        parts = [part.strip() for part in entry.split(":")]
        if len(parts) not in (2, 3) or not parts[0]:
            raise options.error("table.fields.additional.placement", f"{entry!r} is not column:placement or "
                                "column:placement:alias")
        where = parts[1].lower()
        if where not in _PLACEMENTS:
            raise options.error("table.fields.additional.placement", f"{entry!r}: placement {parts[1]!r} is not one of "
                                f"{', '.join(_PLACEMENTS)} (Debezium fails on every outbox record with it)")
        out.append(_Placement(parts[0], where, parts[2] if len(parts) == 3 and parts[2] else parts[0]))
    names = ["payload"] + [placement.name for placement in out if placement.where == "envelope"]
    for name in names:
        if names.count(name) > 1:
            raise options.error("table.fields.additional.placement", f"puts two fields named {name!r} in the envelope "
                                "(its payload field is named 'payload'): give one an alias (column:envelope:alias)")
    return tuple(out)


@dataclass(frozen=True)
class _Plan:
    """What one envelope schema (one version of the outbox table) decides once: the columns' schemas,
    or why its events cannot be routed."""

    problem: str | None = None
    id_schema: ConnectSchema | None = None
    key_schema: ConnectSchema | None = None
    payload_schema: ConnectSchema | None = None
    headers: tuple[tuple[_Placement, ConnectSchema], ...] = ()
    envelope: tuple[tuple[_Placement, ConnectSchema], ...] = ()
    partition: _Placement | None = None
    envelope_name: str = ""
    version: str | None = None


class EventRouter(Transform):
    """``io.debezium.transforms.outbox.EventRouter`` (see the module's docstring)."""

    OPTIONS = (
        Option("table.field.event.id", "id"),
        Option("table.field.event.key", "aggregateid"),
        Option("table.field.event.type", "type"),
        Option("table.field.event.payload", "payload"),
        Option("table.field.event.timestamp"),
        Option("table.fields.additional.placement", kind="list"),
        Option("table.field.additional.missing", "error", kind="enum", choices=("error", "ignore")),
        Option("table.field.event.schema.version"),
        Option("table.op.invalid.behavior", "warn", kind="enum", choices=("warn", "error", "fatal")),
        Option("table.expand.json.payload", "false", kind="bool"),
        Option("table.json.payload.null.behavior", "ignore", kind="enum", choices=("ignore", "optional_bytes")),
        Option("route.by.field", "aggregatetype"),
        Option("route.topic.regex", "(?<routedByValue>.*)"),
        Option("route.topic.replacement", "outbox.event.${routedByValue}"),
        Option("route.tombstone.on.empty.payload", "false", kind="bool"),
        Option("tracing.span.context.field", "tracingspancontext"),
        Option("tracing.operation.name", "debezium-read"),
        Option("tracing.with.context.field.only", "false", kind="bool"),
    )

    REMOVED = {
        "table.field.event.payload.id": "Debezium 3.6 no longer reads it (it was removed in 2.0; the event's key is "
                                        "table.field.event.key's column), so it has no effect there and none here",
    }

    def __init__(self, alias: str, options: Options) -> None:
        super().__init__(alias, options)
        for name in _TRACING:
            if options.given(name):
                raise options.error(name, "configures Debezium's OpenTelemetry tracing of outbox events, which sparkcdc "
                                          "does not produce (no spans, no trace headers): remove it")
        if options.given("table.field.event.timestamp"):
            raise options.error("table.field.event.timestamp", "sets the Kafka record's timestamp, which sparkcdc's outputs "
                                "do not carry (Kafka records are stamped when produced, topic files have none): remove it")
        if options.given("table.field.event.type"):
            options.warn("table.field.event.type", "Debezium 3.6's EventRouter puts the event type in no record (only in "
                         "tracing spans, which sparkcdc does not produce): it has no effect, as in Debezium without tracing")
        self._id = options.text("table.field.event.id")
        self._key = options.text("table.field.event.key")
        self._payload = options.text("table.field.event.payload")
        self._route = options.text("route.by.field")
        self._version = options.text("table.field.event.schema.version") or None
        self._placements = _placements(options)
        #: The chain's outputs ask this: a ``partition`` placement chooses the record's Kafka partition.
        self.chooses_partitions = any(placement.where == "partition" for placement in self._placements)
        self._ignore_missing = options.enum("table.field.additional.missing") == "ignore"
        self._invalid = options.enum("table.op.invalid.behavior")
        self._expand = options.bool("table.expand.json.payload")
        self._nulls_as_bytes = options.enum("table.json.payload.null.behavior") == "optional_bytes"
        self._tombstones = options.bool("route.tombstone.on.empty.payload")
        self._regex = compile_java_regex(options.prefix + "route.topic.regex", options.text("route.topic.regex"))
        self._replace = java_replacement(options.prefix + "route.topic.replacement", options.text("route.topic.replacement"))
        self._topics: dict[str, str] = {}
        self._plans: PerSchema[_Plan] = PerSchema(self._plan)
        self._interned = SchemaInterner()
        self._envelopes: dict[tuple[Any, ...], tuple[ConnectSchema, ConnectSchema]] = {}

    # -- per envelope schema ------------------------------------------------------------------------
    def _plan(self, value_schema: ConnectSchema | None) -> _Plan:
        row = field_schema(value_schema, "after")
        if row is None or row.type != "struct":
            return _Plan(problem="the record has no row (after) to route")
        columns = {f.name: f.schema for f in row.fields}

        def missing(option: str, column: str) -> str:
            return f"{option}: the outbox table has no column {column!r} (its columns: {', '.join(columns)})"

        for option, column in (("table.field.event.id", self._id), ("table.field.event.key", self._key),
                               ("route.by.field", self._route)):
            if column not in columns:
                return _Plan(problem=missing(option, column))
        if self._payload not in columns:
            return _Plan(problem=missing("table.field.event.payload", self._payload))
        if columns[self._route].type != "string":
            return _Plan(problem=f"route.by.field: column {self._route!r} is {columns[self._route].type}, not a string")
        headers, envelope, partition = [], [], None
        for placement in self._placements:
            schema = columns.get(placement.column)
            if schema is None:
                if self._ignore_missing:
                    continue
                return _Plan(problem=missing("table.fields.additional.placement", placement.column))
            if placement.where == "header":
                headers.append((placement, schema))
            elif placement.where == "envelope":
                envelope.append((placement, schema))
            else:
                if schema.type != "int32":
                    return _Plan(problem=f"table.fields.additional.placement: column {placement.column!r} placed in the "
                                         f"partition is {schema.type}, not int32")
                partition = placement
        version = None
        if self._version is not None and envelope:
            if self._version not in columns:
                return _Plan(problem=missing("table.field.event.schema.version", self._version))
            if columns[self._version].type != "int32":
                return _Plan(problem=f"table.field.event.schema.version: column {self._version!r} is "
                                     f"{columns[self._version].type}, not int32")
            version = self._version
        name = (value_schema.name or "") if value_schema is not None else ""
        return _Plan(id_schema=columns[self._id], key_schema=columns[self._key], payload_schema=columns[self._payload],
                     headers=tuple(headers), envelope=tuple(envelope), partition=partition,
                     envelope_name=name.removesuffix(".Envelope"), version=version)

    # -- per record ---------------------------------------------------------------------------------
    def apply(self, record: ChangeRecord) -> ChangeRecord | None:
        value = record.value
        if value is None:
            return None  # a tombstone (of a deleted outbox row): Debezium's router drops it
        if field_schema(record.value_schema, "after") is None or not isinstance(value, dict):
            return record  # not a row change: heartbeats, transaction metadata, messages, schema changes
        op = value.get("op")
        if op == "d":
            return None
        if op == "u":
            return self._update(record)
        plan = self._plans(record.value_schema)
        row = value.get("after")
        if plan.problem is not None:
            raise self.fail(record, plan.problem)
        if not isinstance(row, dict):
            raise self.fail(record, f"a {op!r} record has no row to route (Debezium stops the connector on it)")
        routed = row.get(self._route)
        if routed is None:
            raise self.fail(record, f"route.by.field: column {self._route!r} is null, so the event has no topic")
        topic = self._topic(routed)
        payload, payload_schema = row.get(self._payload), plan.payload_schema
        if self._expand and payload_schema is not None and payload_schema.type == "string" and isinstance(payload, str):
            payload, payload_schema = self._expanded(record, payload, payload_schema)
        headers = record.headers + (Header("id", row.get(self._id), plan.id_schema),) + tuple(
            Header(placement.name, row.get(placement.column), schema) for placement, schema in plan.headers)
        if self._tombstones and (payload is None or (payload == "" and payload_schema is not None
                                                     and payload_schema.type == "string")):
            new_value, new_schema = None, None
        elif plan.envelope:
            if payload_schema is None:
                raise self.fail(record, "table.expand.json.payload: the payload is an empty JSON array, which has no schema "
                                        "to put in the envelope (Debezium stops the connector on it)")
            new_value, new_schema = self._envelope(record, plan, row, routed, payload, payload_schema)
        else:
            new_value, new_schema = payload, payload_schema
        out = copy_record(record, topic=topic, key=row.get(self._key), key_schema=plan.key_schema, value=new_value,
                          value_schema=new_schema, headers=headers)
        if plan.partition is not None:
            out.partition = row.get(plan.partition.column)
        return out

    def _update(self, record: ChangeRecord) -> None:
        where = f"{record.schema}.{record.table}" if record.table else record.topic
        if self._invalid == "fatal":
            raise self.fail(record, f"an UPDATE of the outbox table {where} (table.op.invalid.behavior=fatal: an outbox "
                                    "table is a queue of inserts)")
        report = log.warning if self._invalid == "warn" else log.error
        report("transform %r: an UPDATE of the outbox table %s at LSN %s is ignored (table.op.invalid.behavior=%s)",
               self.alias, where, record.lsn, self._invalid)
        return None

    def _topic(self, routed: str) -> str:
        topic = self._topics.get(routed)
        if topic is None:
            match = self._regex.fullmatch(routed)
            topic = routed if match is None else self._replace(match)
            if len(self._topics) < 100_000:
                self._topics[routed] = topic
        return topic

    def _expanded(self, record: ChangeRecord, text: str, schema: ConnectSchema) -> tuple[Any, ConnectSchema | None]:
        try:
            expanded_schema, value = expand_json(text, self._payload, self._nulls_as_bytes)
        except NotExpanded as why:
            log.warning("transform %r: the payload of an outbox event on %r is not expanded (%s); it stays text",
                        self.alias, record.topic, why)
            return text, schema
        except Unfit as why:
            raise self.fail(record, f"table.expand.json.payload: {why} (Debezium's converter refuses the record it makes "
                                    "of this payload and stops the connector)") from None
        return value, None if expanded_schema is None else self._interned(expanded_schema)

    def _envelope(self, record: ChangeRecord, plan: _Plan, row: dict[str, Any], routed: str, payload: Any,
                  payload_schema: ConnectSchema) -> tuple[dict[str, Any], ConnectSchema]:
        """The envelope value and its schema. Debezium keeps one envelope schema per schema version
        when ``table.field.event.schema.version`` is set (a null version is one too), else one per
        payload schema; the first event of each names it. An event whose payload does not fit the
        schema kept for its version stops Debezium (Connect refuses the value): it stops here too."""
        payload_schema = self._interned(payload_schema)  # equal schemas, one object: the key below is Debezium's equality
        if plan.version is not None:
            version = row.get(plan.version)
            key: tuple[Any, ...] = ("version", version)
        else:
            version, key = None, ("payload", id(payload_schema))
        fields = [("payload", payload_schema)] + [(placement.name, schema) for placement, schema in plan.envelope]
        cached = self._envelopes.get(key)
        if cached is None or (key[0] == "payload" and cached[0] is not payload_schema):
            schema = struct(fields, optional=False, name=f"{plan.envelope_name}.{routed}.Value", version=version)
            if len(self._envelopes) >= 4096:
                self._envelopes.clear()
            cached = self._envelopes[key] = (payload_schema, schema)  # the payload schema held: its id stays its own
        schema = cached[1]
        if cached[0] is not payload_schema and payload is not None:
            raise self.fail(record, f"table.field.event.schema.version: the envelope of version {version} was made for another "
                                    "payload schema (Debezium keeps one envelope schema per version), which this event's "
                                    "payload does not fit (Debezium stops the connector on it)")
        if tuple((f.name, f.schema) for f in schema.fields[1:]) != tuple(fields[1:]):
            raise self.fail(record, f"table.fields.additional.placement: the envelope of version {version} was made with other "
                                    "columns (Debezium keeps one envelope schema per version and stops on this event)")
        value = {"payload": payload}
        for placement, _ in plan.envelope:
            value[placement.name] = row.get(placement.column)
        return value, schema
