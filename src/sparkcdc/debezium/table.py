"""Per-table event shape: key and value schemas, and how a tuple becomes their payloads.

A :class:`TableDescription` says what the database says about a table (columns in the order its
tuples arrive, their types, NOT NULL, defaults, key columns); :func:`build_table_schema` combines it
with the connector options (column filters, key overrides, masking/truncation/hashing, source-type
propagation, name adjustment) into a :class:`TableSchema` whose ``key()`` and ``row()`` methods are
the per-event hot path.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..pgoutput.messages import UNCHANGED_TOAST
from .config import ConfigError, ConnectorConfig, split_list
from .connect import NO_DEFAULT, ConnectSchema, Field, struct
from .defaults import default_value
from .names import NameAdjuster, TopicNamer
from .schemas import envelope_schema
from .source_types import source_type_parameters
from .types import ColumnType, MappingOptions, ValueMapping, map_type

__all__ = [
    "ColumnDescription",
    "ColumnSelection",
    "TableDescription",
    "TableSchema",
    "TableSchemaFactory",
]


@dataclass(frozen=True, slots=True)
class ColumnDescription:
    name: str
    type: ColumnType
    not_null: bool
    default_expression: str | None
    position: int  # index of the column's value in the tuples of this table


@dataclass(frozen=True, slots=True)
class TableDescription:
    schema: str
    name: str
    columns: tuple[ColumnDescription, ...]
    primary_key: tuple[str, ...]  # Debezium's key columns unless message.key.columns says otherwise

    @property
    def qualified_name(self) -> str:
        return f"{self.schema}.{self.name}"


@dataclass(frozen=True, slots=True)
class _FieldPlan:
    name: str
    position: int
    convert: Callable[[str], Any]
    null_value: Any  # what a NULL (or a missing value of a NOT NULL column) becomes
    toast: Any  # what an unchanged TOAST value becomes


class TableSchema:
    """The event shape of one table (one version of its structure)."""

    def __init__(
        self,
        description: TableDescription,
        topic: str,
        key_schema: ConnectSchema | None,
        row_schema: ConnectSchema,
        envelope: ConnectSchema,
        key_fields: Sequence[_FieldPlan],
        value_fields: Sequence[_FieldPlan],
    ) -> None:
        self.description = description
        self.topic = topic
        self.key_schema = key_schema
        self.row_schema = row_schema
        self.envelope_schema = envelope
        self._key_fields = tuple(key_fields)
        self._value_fields = tuple(value_fields)
        self.key_positions = tuple(f.position for f in key_fields)

    @property
    def schema_name(self) -> str:
        return self.description.schema

    @property
    def table_name(self) -> str:
        return self.description.name

    @property
    def has_key(self) -> bool:
        return self.key_schema is not None

    def row(self, values: Sequence[Any]) -> dict[str, Any]:
        """Payload of ``before``/``after`` from a tuple of text values (None / UNCHANGED_TOAST allowed)."""
        out: dict[str, Any] = {}
        for plan in self._value_fields:
            value = values[plan.position]
            if value is None:
                out[plan.name] = plan.null_value
            elif value is UNCHANGED_TOAST:
                out[plan.name] = plan.toast
            else:
                out[plan.name] = plan.convert(value)
        return out

    def key(self, values: Sequence[Any]) -> dict[str, Any] | None:
        if self.key_schema is None:
            return None
        out: dict[str, Any] = {}
        for plan in self._key_fields:
            value = values[plan.position]
            out[plan.name] = plan.null_value if value is None else plan.convert(value)
        return out

    def key_changed(self, old: Sequence[Any], new: Sequence[Any]) -> bool:
        return any(old[p] != new[p] and old[p] is not UNCHANGED_TOAST for p in self.key_positions)


class ColumnSelection:
    """``column.include.list`` / ``column.exclude.list`` on ``schema.table.column``."""

    def __init__(self, config: ConnectorConfig) -> None:
        self._include = [re.compile(p) for p in config.get_list("column.include.list")]
        self._exclude = [re.compile(p) for p in config.get_list("column.exclude.list")]

    def __call__(self, qualified_column: str) -> bool:
        if self._include:
            return any(p.fullmatch(qualified_column) for p in self._include)
        return not any(p.fullmatch(qualified_column) for p in self._exclude)


_TRUNCATE = re.compile(r"column\.truncate\.to\.(\d+)\.chars")
_MASK = re.compile(r"column\.mask\.with\.(\d+)\.chars")
_HASH = re.compile(r"column\.mask\.hash\.(.+?)\.with\.salt\.(.+)")


class _ColumnRules:
    """The per-column rules of the configuration, compiled once."""

    def __init__(self, config: ConnectorConfig) -> None:
        def compiled(raw: str) -> list[re.Pattern[str]]:
            return [re.compile(p) for p in split_list(raw)]

        self.truncate = [(int(m.group(1)), compiled(v)) for m, v in config.items_matching(_TRUNCATE)]
        self.mask = [(int(m.group(1)), compiled(v)) for m, v in config.items_matching(_MASK)]
        self.hash = []
        for match, value in config.items_matching(_HASH):
            algorithm = match.group(1)
            try:
                hashlib.new(_java_digest_name(algorithm))
            except ValueError:
                raise ConfigError(match.group(0), f"unknown hash algorithm {algorithm!r}") from None
            self.hash.append((algorithm, match.group(2), compiled(value)))
        self.propagate_columns = compiled(config.get("column.propagate.source.type") or "")
        self.propagate_types = compiled(config.get("datatype.propagate.source.type") or "")
        self.key_columns: list[tuple[re.Pattern[str], list[str]]] = []
        for entry in (config.get("message.key.columns") or "").split(";"):
            if entry.strip():
                table_pattern, _, columns = entry.partition(":")
                self.key_columns.append((re.compile(table_pattern.strip()), [c.strip() for c in columns.split(",") if c.strip()]))

    def transform(self, qualified: str, convert: Callable[[str], Any]) -> Callable[[str], Any]:
        for length, patterns in self.truncate:
            if any(p.fullmatch(qualified) for p in patterns):
                inner_t, n = convert, length
                convert = lambda text, inner=inner_t, n=n: _truncate(inner(text), n)  # noqa: E731
        for length, patterns in self.mask:
            if any(p.fullmatch(qualified) for p in patterns):
                masked = "*" * length
                convert = lambda text, masked=masked: masked  # noqa: E731
        for algorithm, salt, patterns in self.hash:
            if any(p.fullmatch(qualified) for p in patterns):
                inner_h = convert
                convert = lambda text, inner=inner_h, a=algorithm, s=salt: _hashed(inner(text), a, s)  # noqa: E731
        return convert

    def propagates(self, qualified: str, type_name: str) -> bool:
        return any(p.fullmatch(qualified) for p in self.propagate_columns) or any(
            p.fullmatch(type_name) for p in self.propagate_types
        )

    def key_override(self, qualified_table: str) -> list[str] | None:
        for pattern, columns in self.key_columns:
            if pattern.fullmatch(qualified_table):
                return columns
        return None


def _truncate(value: Any, length: int) -> Any:
    return value[:length] if isinstance(value, str) else value


def _java_digest_name(algorithm: str) -> str:
    return algorithm.replace("-", "").lower()


def _hashed(value: Any, algorithm: str, salt: str) -> Any:
    if not isinstance(value, str):
        return value
    digest = hashlib.new(_java_digest_name(algorithm))
    digest.update(salt.encode("utf-8"))
    digest.update(value.encode("utf-8"))
    return digest.hexdigest()


class TableSchemaFactory:
    """Builds :class:`TableSchema` objects for one connector configuration."""

    def __init__(self, config: ConnectorConfig) -> None:
        self.config = config
        self.options = MappingOptions.from_config(config)
        self.topics = TopicNamer(
            config.topic_prefix,
            delimiter=config.get("topic.delimiter") or ".",
            heartbeat_prefix=config.get("topic.heartbeat.prefix") or "__debezium-heartbeat",
            heartbeat_name=config.get("topic.heartbeat.name") or "",
            transaction=config.get("topic.transaction") or "transaction",
        )
        self.schema_names = NameAdjuster(config.get("schema.name.adjustment.mode") or "none", allow_dots=True)
        self.field_names = NameAdjuster(config.get("field.name.adjustment.mode") or "none", allow_dots=False)
        self.columns = ColumnSelection(config)
        self.rules = _ColumnRules(config)

    def build(self, table: TableDescription) -> TableSchema:
        topic = self.topics.data_change_topic(table.schema, table.name)
        qualified_table = table.qualified_name
        override = self.rules.key_override(qualified_table)
        key_names = tuple(override) if override is not None else table.primary_key
        value_fields: list[tuple[Field, _FieldPlan]] = []
        by_name: dict[str, tuple[Field, _FieldPlan]] = {}
        for column in table.columns:
            mapping = map_type(column.type, self.options)
            if mapping is None:
                continue  # unknown type and include.unknown.datatypes is off: Debezium drops the column
            qualified = f"{qualified_table}.{column.name}"
            built = self._field(column, mapping, qualified)
            by_name[column.name] = built
            if self.columns(qualified):
                value_fields.append(built)  # key columns stay in the key even when filtered out here
        missing = [name for name in key_names if name not in by_name]
        if missing and override is not None:
            raise ConfigError("message.key.columns", f"table {qualified_table} has no column(s) {', '.join(missing)}")
        key_fields = [by_name[name] for name in key_names if name in by_name]

        prefix = self.schema_names(topic)
        row_schema = struct([f for f, _ in value_fields], optional=True, name=f"{prefix}.Value")
        key_schema = struct([f for f, _ in key_fields], name=f"{prefix}.Key") if key_fields else None
        envelope = envelope_schema(row_schema, f"{prefix}.Envelope")
        return TableSchema(table, topic, key_schema, row_schema, envelope, [p for _, p in key_fields], [p for _, p in value_fields])

    def _field(self, column: ColumnDescription, mapping: ValueMapping, qualified: str) -> tuple[Field, _FieldPlan]:
        # Some types are optional in Debezium's schemas even on NOT NULL columns (PostGIS geometry).
        schema = mapping.schema.as_optional(not column.not_null or bool(mapping.extra.get("always_optional")))
        default = default_value(column.default_expression, mapping)
        if default is not NO_DEFAULT:
            schema = schema.with_default(default)
        if self.rules.propagates(qualified, column.type.declared_name):
            schema = schema.add_parameters(source_type_parameters(column.name, column.type))
        convert = self.rules.transform(qualified, mapping.convert)
        if default is not NO_DEFAULT:
            null_value = default
        elif column.not_null:
            null_value = mapping.zero
        else:
            null_value = None
        name = self.field_names(column.name)
        if mapping.extra.get("toast_null"):
            toast = None  # Debezium has no placeholder for this type: an unchanged TOAST value is null
        elif mapping.toast is not None:
            toast = mapping.toast
        else:
            toast = self.options.placeholder_text
        return Field(name, schema), _FieldPlan(name, column.position, convert, null_value, toast)
