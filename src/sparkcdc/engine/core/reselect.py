"""Debezium's reselect columns post processor: which streamed events need columns read again, and
how the values read become the event's.

PostgreSQL does not write an unchanged TOASTed value to the WAL, so an UPDATE's new row carries the
unavailable-value placeholder for it (``unavailable.value.placeholder``; null for types that have
none). ``io.debezium.processors.reselect.ReselectColumnsPostProcessor`` reads such columns again,
by key, from the table, and puts the values into the event's ``after``; it also reads columns that
are null (``reselect.null.values``). Exactly as Debezium 3.6 decides (its documentation and
observed behaviour against Debezium 3.6.3, tests/conformance/test_reselect_conformance.py):

* only create and update events with an ``after`` and a key (a keyless table without
  ``message.key.columns`` has none): never snapshot reads, deletes, the signal table's rows;
* a field is read again when its value is the placeholder in the form its schema gives it (a
  string, bytes, the ``{"p": "p"}`` of a map or hstore-as-JSON, an array holding one, or the
  placeholder's bytes as an int array), with ``reselect.unavailable.values``; or null, with
  ``reselect.null.values``; and ``schema.table:field`` passes the include (or exclude) list;
* the row is found by the table's primary key, as the new row carries it, or with
  ``reselect.use.event.key`` by the event key's columns (``message.key.columns``);
* what is read is the row as it is when read (Debezium queries when it emits the event), converted
  as Debezium converts values it reads with JDBC (sparkcdc's snapshot conversion, column masks and
  truncation included); a row not found (or a failed query) leaves the event as it was, with a
  warning, or stops the connector (``reselect.error.handling.mode=fail``).

Where sparkcdc differs, on purpose: the key is bound as the text the row carried, cast to the
column's type (Debezium binds converted values, so keys of some types, e.g. temporal or decimal
ones, cannot be bound and their rows are not read again; and its query leaves key column names
unquoted); and the rows of a run of messages are read together, one query per table and run instead
of one per event, which gives what Debezium's per-event queries give when the rows do not change
between them (both read the row as it is then, not as it was at the change).

Pure: the streaming processor hands each event to :meth:`Reselector.consider`; the stream reader
(:mod:`sparkcdc.engine.reselect_reader`) queries the table for :meth:`Reselector.take`'s events and hands the rows
back to :meth:`Reselector.fill` or :meth:`Reselector.not_found`.
"""

from __future__ import annotations

import base64
import logging
from dataclasses import dataclass
from typing import Any

from ...debezium.config import ConnectorConfig
from ...debezium.connect import ConnectSchema
from ...debezium.post_processors import ReselectSpec
from ...debezium.records import ChangeRecord
from ...debezium.table import TableSchema, TableSchemaFactory
from ...debezium.types import MappingOptions
from ...debezium.types.base import UnrepresentableValueError
from ...errors import PipelineError
from ...lsn import format_lsn
from ...pgoutput.messages import UNCHANGED_TOAST
from .signals import signal_table_of

__all__ = ["KeyColumn", "Pending", "ReselectError", "Reselector"]

log = logging.getLogger(__name__)

_JSON = "io.debezium.data.Json"


class ReselectError(PipelineError):
    """``reselect.error.handling.mode=fail``: a row to read columns from was not found, or the query failed."""


@dataclass(frozen=True)
class KeyColumn:
    """A column the row is found by: its name and type (``"namespace"."typname"``, what its text is cast to)."""

    name: str
    type: str


@dataclass
class Pending:
    """An event whose ``fields`` are to be read again (``columns``: their columns), by ``key_values``
    (as text, in ``key`` order) of the table's ``key`` columns."""

    record: ChangeRecord
    table: TableSchema
    fields: tuple[str, ...]
    columns: tuple[str, ...]
    key: tuple[KeyColumn, ...]
    key_values: tuple[str | None, ...]

    @property
    def qualified_table(self) -> str:
        return self.table.qualified_name

    def describe_key(self) -> str:
        return ", ".join(f"{k.name}={v!r}" for k, v in zip(self.key, self.key_values, strict=True))


@dataclass(frozen=True)
class _TablePlan:
    """What a table version needs for reselection, worked out once per TableSchema."""

    fields: tuple[tuple[str, str, ConnectSchema, bool], ...]  # (field, column, schema, selected by the lists)
    primary_key: tuple[tuple[KeyColumn, int], ...]  # the primary key's columns and their tuple positions
    event_key: tuple[tuple[KeyColumn, int], ...]  # the event key's columns (message.key.columns) and positions
    converters: dict[str, tuple[Any, Any, bool]]  # field -> (convert, null value, optional), Debezium's JDBC-read way


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _column_type(column: Any) -> str:
    """The type a key column's text is cast to: its base type, schema-qualified (a domain compares as its base)."""
    kind = column.type
    return f"{_quoted(kind.namespace)}.{_quoted(kind.name)}" if kind.namespace else _quoted(kind.name)


class Reselector:
    """One ``ReselectColumnsPostProcessor`` of a stream reader (see the module docstring)."""

    def __init__(self, spec: ReselectSpec, config: ConnectorConfig, factory: TableSchemaFactory) -> None:
        self.spec = spec
        self.factory = factory
        options = MappingOptions.from_config(config)
        placeholder = options.placeholder_bytes
        self._text = options.placeholder_text
        self._json = '{"' + self._text + '":"' + self._text + '"}'
        self._bytes = base64.b64encode(placeholder).decode("ascii")
        self._map = {self._text: self._text}
        self._ints = [b - 256 if b > 127 else b for b in placeholder]  # Java's bytes are signed
        self.signal_table = signal_table_of(config)
        self._plans: dict[int, tuple[TableSchema, _TablePlan]] = {}
        self._pending: list[Pending] = []

    # -- deciding ----------------------------------------------------------------------------------
    def consider(self, record: ChangeRecord, table: TableSchema, values: tuple[Any, ...]) -> None:
        """A change event just made from the row ``values`` (the tuple's text values): kept for
        reading again if it needs it."""
        value = record.value
        if value is None or record.key is None or record.op not in ("c", "u"):
            return
        after = value.get("after")
        if after is None or (self.signal_table is not None and (table.schema_name, table.table_name) == self.signal_table):
            return
        plan = self._plan(table)
        fields: list[str] = []
        columns: list[str] = []
        for field, column, schema, selected in plan.fields:
            if not selected:
                continue
            current = after.get(field)
            if (self.spec.unavailable_values and self._unavailable(schema, current)) or (self.spec.null_values and current is None):
                fields.append(field)
                columns.append(column)
        if not fields:
            return
        key = plan.event_key if self.spec.use_event_key else plan.primary_key
        key_values = tuple(values[position] for _, position in key)
        self._pending.append(Pending(record, table, tuple(fields), tuple(columns), tuple(k for k, _ in key),
                                     tuple(None if v is UNCHANGED_TOAST else v for v in key_values)))

    def _unavailable(self, schema: ConnectSchema, value: Any) -> bool:
        """Whether ``value`` (JSON-ready) is the placeholder as a field of ``schema`` carries it."""
        kind = schema.type
        if kind == "string":
            return value == self._text or (schema.name == _JSON and value == self._json)
        if kind == "bytes":
            return value == self._bytes
        if kind == "map":
            return value == self._map
        if kind == "array" and value is not None and schema.items is not None:
            items = schema.items
            if any(self._unavailable(items, item) for item in value):
                return True
            return items.type in ("int32", "int64") and value == self._ints
        return False

    def _plan(self, table: TableSchema) -> _TablePlan:
        cached = self._plans.get(id(table))
        if cached is not None and cached[0] is table:
            return cached[1]
        description = table.description
        by_position = {c.position: c for c in description.columns}
        by_name = {c.name: c for c in description.columns}
        fields = []
        for plan, field in zip(table.value_fields, table.row_schema.fields, strict=True):
            column = by_position[plan.position].name if plan.position in by_position else plan.name
            fields.append((field.name, column, field.schema, self.spec.selects(f"{table.qualified_name}:{field.name}")))
        primary = tuple((KeyColumn(name, _column_type(by_name[name])), by_name[name].position)
                        for name in description.primary_key if name in by_name)
        key_fields = table.key_fields or ()
        event_key = tuple((KeyColumn(by_position[p.position].name, _column_type(by_position[p.position])), p.position)
                          for p in key_fields if p.position in by_position)
        # Debezium converts what it reads with JDBC as its snapshot does: sparkcdc's snapshot schema of the table.
        snapshot = self.factory.build(description, snapshot=True)
        converters = {field.name: (plan.convert, plan.null_value, plan.optional)
                      for plan, field in zip(snapshot.value_fields, snapshot.row_schema.fields, strict=True)}
        made = _TablePlan(tuple(fields), primary, event_key, converters)
        self._plans[id(table)] = (table, made)
        return made

    # -- handing over ------------------------------------------------------------------------------
    def take(self) -> list[Pending]:
        """The events considered since the last call that need columns read again."""
        pending, self._pending = self._pending, []
        return pending

    def fill(self, pending: Pending, row: dict[str, str | None]) -> None:
        """The event's fields set from ``row`` (column -> text as PostgreSQL outputs it, None: NULL)."""
        after = pending.record.value["after"]
        converters = self._plan(pending.table).converters
        for field, column in zip(pending.fields, pending.columns, strict=True):
            text = row[column]
            convert, null_value, optional = converters[field]
            if text is None:
                after[field] = null_value
                continue
            try:
                after[field] = convert(text)
            except UnrepresentableValueError:
                if not optional:
                    raise
                after[field] = None

    def not_found(self, pending: Pending, reason: str) -> None:
        """The row could not be read (``reason``): a warning and the event as it was, or (fail) an error."""
        record = pending.record
        message = (f"post processor {self.spec.name!r} could not read {', '.join(pending.columns)} of "
                   f"{pending.qualified_table} again for the event at LSN {format_lsn(record.lsn)} "
                   f"(key {pending.describe_key()}): {reason}")
        if self.spec.fail:
            raise ReselectError(f"{message} ({self.spec.error_mode_property}=fail)", lsn=record.lsn or None,
                                table=pending.qualified_table)
        log.warning("%s; the event keeps its values (%s=warn)", message, self.spec.error_mode_property)
