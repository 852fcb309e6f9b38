"""Per-table event shape: key and value schemas, and how a tuple becomes their payloads.

A :class:`TableDescription` says what the database says about a table (columns in the order its
tuples arrive, their types, NOT NULL, defaults, key columns); :func:`build_table_schema` combines it
with the connector options (column filters, key overrides, masking/truncation/hashing, source-type
propagation, name adjustment) into a :class:`TableSchema` whose ``key()`` and ``row()`` methods are
the per-event hot path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..errors import ConfigurationError
from ..pgoutput.messages import UNCHANGED_TOAST
from .column_rules import ColumnRules
from .config import ConnectorConfig
from .connect import NO_DEFAULT, ConnectSchema, Field, struct
from .defaults import default_value
from .names import NameAdjuster, TopicNamer
from .schemas import envelope_schema
from .source_types import column_length, source_type_parameters
from .sql_json import FieldSql, PayloadSql, payload_sql, value_renderer
from .types import ColumnType, MappingOptions, ValueMapping, map_type
from .types.base import UnrepresentableValueError
from .types.text import STREAMING_UNRESOLVED

__all__ = [
    "ColumnDescription",
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
    #: The column's identity in its table (``pg_attribute.attnum``; 0 when it could not be told): a
    #: rename keeps it, a column dropped and added again under the same name gets a new one.
    attnum: int = 0
    declared_type: str = ""  # the type as declared (``format_type``), "" when not known
    #: What rows older than the column hold, when it was added with a non-volatile default (see
    #: :attr:`sparkcdc.catalog.ColumnInfo.has_missing`): the value's text (None: NULL).
    has_missing: bool = False
    missing_value: str | None = None
    identity: str = ""  # ``pg_attribute.attidentity``: '' (none), 'a' (ALWAYS) or 'd' (BY DEFAULT)


@dataclass(frozen=True, slots=True)
class TableDescription:
    schema: str
    name: str
    columns: tuple[ColumnDescription, ...]
    primary_key: tuple[str, ...]  # Debezium's key columns unless message.key.columns says otherwise
    relation_id: int = 0  # pg_class.oid (0: not known): a table dropped and created again gets a new one
    replica_identity: str = ""  # pg_class.relreplident: d, n, f or i ("" when not known)
    #: The columns a delete's old tuple carries (the replica identity's; None: every column, FULL).
    identity_columns: tuple[str, ...] | None = None

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
    optional: bool = True  # an unrepresentable value (UnrepresentableValueError) becomes null only then
    renderer: Callable[[str], str] | None = None  # the SQL rendering of ``convert`` (see sql_json), if any
    #: The column's type and mapping ``convert`` comes from (None after masking): a reader that
    #: converts whole columns at once recognizes ``mapping.convert is convert`` (untransformed).
    column_type: ColumnType | None = None
    mapping: ValueMapping | None = None


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
        self.key_positions = tuple(f.position for f in key_fields if f.position >= 0)
        #: ``row(values)``: payload of ``before``/``after`` from a tuple of text values (None and
        #: UNCHANGED_TOAST allowed). Generated code; values it cannot represent take the general path.
        self.row = _compile_payload(self._value_fields, with_toast=True, fallback=self._row_one_by_one)
        self._fast_key = _compile_payload(self._key_fields, with_toast=False)
        #: ``key_and_row(values)``: ``(self.key(values), self.row(values))`` in one generated call.
        self.key_and_row = _compile_key_and_row(
            self._key_fields if key_schema is not None else None, self._value_fields, lambda values: (self.key(values), self.row(values))
        )
        #: ``columns_of(rows)``: the key and row payloads of many tuples, column by column (see
        #: :func:`_compile_columns`).
        self.columns_of = _compile_columns(
            self._key_fields if key_schema is not None else None, self._value_fields, len(description.columns), self.key_and_row)
        self.schema_name = description.schema
        self.table_name = description.name
        self.qualified_name = f"{description.schema}.{description.name}"

    @property
    def key_fields(self) -> tuple[_FieldPlan, ...] | None:
        """The key's fields (None: the table has no key), for readers that convert whole columns."""
        return self._key_fields if self.key_schema is not None else None

    @property
    def value_fields(self) -> tuple[_FieldPlan, ...]:
        """The row's fields, for readers that convert whole columns."""
        return self._value_fields

    @property
    def has_key(self) -> bool:
        return self.key_schema is not None

    def payload_sql(self, column_expression: Callable[[int], str]) -> PayloadSql | None:
        """SQL rendering the key and row payloads of this table's rows (see :mod:`.sql_json`), or
        None when a field has no rendering. ``column_expression(position)`` names a column in SQL."""
        key = None if self.key_schema is None else [_field_sql(p) for p in self._key_fields]
        return payload_sql(key, [_field_sql(p) for p in self._value_fields], column_expression)

    def _row_one_by_one(self, values: Sequence[Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for plan in self._value_fields:
            value = values[plan.position]
            if value is None:
                out[plan.name] = plan.null_value
            elif value is UNCHANGED_TOAST:
                out[plan.name] = plan.toast
            else:
                try:
                    out[plan.name] = plan.convert(value)
                except UnrepresentableValueError:
                    if not plan.optional:
                        raise  # Debezium's null fails the required field, and so the event
                    out[plan.name] = None  # Debezium logs "Failed to convert value" and emits null
        return out

    def key(self, values: Sequence[Any]) -> dict[str, Any] | None:
        if self.key_schema is None:
            return None
        return self._fast_key(values)

    def key_changed(self, old: Sequence[Any], new: Sequence[Any]) -> bool:
        return any(old[p] != new[p] and old[p] is not UNCHANGED_TOAST for p in self.key_positions)


def _field_sql(plan: _FieldPlan) -> FieldSql:
    return FieldSql(plan.name, plan.position, plan.null_value, plan.renderer)


def _compile_payload(
    plans: Sequence[_FieldPlan], *, with_toast: bool, fallback: Callable[[Sequence[Any]], dict[str, Any]] | None = None
) -> Callable[[Sequence[Any]], dict[str, Any]]:
    """A function building the payload dict of ``plans`` from a tuple, generated once per table.

    Straight-line code (no loop, no attribute lookups) is what makes the per-row cost low: it is
    the equivalent of the general loop in :meth:`TableSchema._row_one_by_one`, field by field.
    A position of -1 is a column that is not read (its value is always the field's null value).
    """
    namespace: dict[str, Any] = {"TOAST": UNCHANGED_TOAST, "Unrepresentable": UnrepresentableValueError, "fallback": fallback}
    lines = ["def payload(values):"]
    if fallback is not None:
        lines.append("  try:")
    items = []
    for index, plan in enumerate(plans):
        namespace[f"c{index}"], namespace[f"n{index}"], namespace[f"t{index}"] = plan.convert, plan.null_value, plan.toast
        if plan.position < 0:
            lines.append(f"    f{index} = n{index}")
        elif with_toast:
            lines.append(f"    v = values[{plan.position}]")
            lines.append(f"    f{index} = n{index} if v is None else (t{index} if v is TOAST else c{index}(v))")
        else:
            lines.append(f"    v = values[{plan.position}]")
            lines.append(f"    f{index} = n{index} if v is None else c{index}(v)")
        items.append(f"{plan.name!r}: f{index}")
    lines.append("    return {" + ", ".join(items) + "}")
    if fallback is not None:
        lines.append("  except Unrepresentable:")
        lines.append("    return fallback(values)")
    exec("\n".join(lines), namespace)  # noqa: S102 - generated from field plans only, never from data
    return namespace["payload"]  # type: ignore[no-any-return]


def _compile_key_and_row(
    key_plans: Sequence[_FieldPlan] | None,
    value_plans: Sequence[_FieldPlan],
    fallback: Callable[[Sequence[Any]], tuple[dict[str, Any] | None, dict[str, Any]]],
) -> Callable[[Sequence[Any]], tuple[dict[str, Any] | None, dict[str, Any]]]:
    """``(key, row)`` of a tuple in one generated function (``key_plans`` None: the key is None).

    The key fields come first, computed exactly as the key function does, then the row fields as
    the row function does, except that a row field reading the same column with the same converter
    as a key field takes the key field's value where both would call the converter (the value is
    neither NULL nor unchanged TOAST). An unrepresentable value hands the whole tuple to
    ``fallback``, which computes key and row separately, as the two functions do.
    """
    namespace: dict[str, Any] = {"TOAST": UNCHANGED_TOAST, "Unrepresentable": UnrepresentableValueError, "fallback": fallback}
    lines = ["def key_and_row(values):", "  try:"]
    key_items = []
    shared: dict[tuple[int, int], str] = {}  # (position, id(convert)) -> the key field's variable
    for index, plan in enumerate(key_plans or ()):
        namespace[f"kc{index}"], namespace[f"kn{index}"] = plan.convert, plan.null_value
        if plan.position < 0:
            lines.append(f"    k{index} = kn{index}")
        else:
            lines.append(f"    v = values[{plan.position}]")
            lines.append(f"    k{index} = kn{index} if v is None else kc{index}(v)")
            shared.setdefault((plan.position, id(plan.convert)), f"k{index}")
        key_items.append(f"{plan.name!r}: k{index}")
    items = []
    for index, plan in enumerate(value_plans):
        namespace[f"c{index}"], namespace[f"n{index}"], namespace[f"t{index}"] = plan.convert, plan.null_value, plan.toast
        if plan.position < 0:
            lines.append(f"    f{index} = n{index}")
        else:
            converted = shared.get((plan.position, id(plan.convert)), f"c{index}(v)")
            lines.append(f"    v = values[{plan.position}]")
            lines.append(f"    f{index} = n{index} if v is None else (t{index} if v is TOAST else {converted})")
        items.append(f"{plan.name!r}: f{index}")
    key = "{" + ", ".join(key_items) + "}" if key_plans is not None else "None"
    lines.append(f"    return {key}, {{" + ", ".join(items) + "}")
    lines.append("  except Unrepresentable:")
    lines.append("    return fallback(values)")
    exec("\n".join(lines), namespace)  # noqa: S102 - generated from field plans only, never from data
    return namespace["key_and_row"]  # type: ignore[no-any-return]


Columns = dict[str, list[Any]]


def _compile_columns(
    key_plans: Sequence[_FieldPlan] | None,
    value_plans: Sequence[_FieldPlan],
    width: int,
    key_and_row: Callable[[Sequence[Any]], tuple[dict[str, Any] | None, dict[str, Any]]],
) -> Callable[[Sequence[Sequence[Any]]], tuple[Columns | None, Columns]]:
    """``(key columns, row columns)`` of many tuples in one generated function: each field's values
    as a list, converted a column at a time (one comprehension per field, no dictionary per row),
    for readers that build whole columns (a snapshot chunk's rows). The values are exactly
    :meth:`TableSchema.key_and_row`'s, field by field; an unrepresentable value sends the tuples
    through ``key_and_row`` one by one (its own fallback decides that value). ``key_plans`` None:
    no key columns."""
    namespace: dict[str, Any] = {"TOAST": UNCHANGED_TOAST, "Unrepresentable": UnrepresentableValueError,
                                 "one_by_one": _one_by_one(key_plans, value_plans, key_and_row)}
    lines = ["def columns_of(rows):", "  try:", f"    cols = list(zip(*rows)) if rows else [()] * {width}", "    size = len(rows)"]
    key_items = []
    for index, plan in enumerate(key_plans or ()):
        namespace[f"kc{index}"], namespace[f"kn{index}"] = plan.convert, plan.null_value
        if plan.position < 0:
            lines.append(f"    k{index} = [kn{index}] * size")
        else:
            lines.append(f"    k{index} = [kn{index} if v is None else kc{index}(v) for v in cols[{plan.position}]]")
        key_items.append(f"{plan.name!r}: k{index}")
    items = []
    for index, plan in enumerate(value_plans):
        namespace[f"c{index}"], namespace[f"n{index}"], namespace[f"t{index}"] = plan.convert, plan.null_value, plan.toast
        if plan.position < 0:
            lines.append(f"    f{index} = [n{index}] * size")
        else:
            lines.append(f"    f{index} = [n{index} if v is None else (t{index} if v is TOAST else c{index}(v)) for v in cols[{plan.position}]]")
        items.append(f"{plan.name!r}: f{index}")
    key = "{" + ", ".join(key_items) + "}" if key_plans is not None else "None"
    lines.append(f"    return {key}, {{" + ", ".join(items) + "}")
    lines.append("  except Unrepresentable:")
    lines.append("    return one_by_one(rows)")
    exec("\n".join(lines), namespace)  # noqa: S102 - generated from field plans only, never from data
    return namespace["columns_of"]  # type: ignore[no-any-return]


def _one_by_one(
    key_plans: Sequence[_FieldPlan] | None, value_plans: Sequence[_FieldPlan],
    key_and_row: Callable[[Sequence[Any]], tuple[dict[str, Any] | None, dict[str, Any]]],
) -> Callable[[Sequence[Sequence[Any]]], tuple[Columns | None, Columns]]:
    def columns(rows: Sequence[Sequence[Any]]) -> tuple[Columns | None, Columns]:
        pairs = [key_and_row(values) for values in rows]
        keys = None if key_plans is None else {p.name: [k[p.name] for k, _ in pairs] for p in key_plans}  # type: ignore[index]
        return keys, {p.name: [row[p.name] for _, row in pairs] for p in value_plans}
    return columns


class TableSchemaFactory:
    """Builds :class:`TableSchema` objects for one connector configuration."""

    def __init__(self, config: ConnectorConfig) -> None:
        self.config = config
        self.options = MappingOptions.from_config(config)
        self.topics = TopicNamer(
            config.topic_prefix,
            delimiter=config.text("topic.delimiter"),
            heartbeat_prefix=config.text("topic.heartbeat.prefix"),
            heartbeat_name=config.text("topic.heartbeat.name"),
            transaction=config.text("topic.transaction"),
        )
        self.schema_names = NameAdjuster(config.text("schema.name.adjustment.mode"), allow_dots=True)
        self.field_names = NameAdjuster(config.text("field.name.adjustment.mode"), allow_dots=False)
        self.rules = ColumnRules(config)

    def build(self, table: TableDescription, *, snapshot: bool = False) -> TableSchema:
        """``snapshot``: the schema for snapshot rows, which differs from the streaming one only for
        key columns that ``column.*.list`` filters out (see :meth:`_key_field`)."""
        topic = self.topics.data_change_topic(table.schema, table.name)
        qualified_table = table.qualified_name
        override = self.rules.key_override(qualified_table)
        key_names = tuple(override) if override is not None else table.primary_key
        value_fields: list[tuple[Field, _FieldPlan]] = []
        key_candidates: dict[str, tuple[ColumnDescription, ValueMapping, bool, Callable[[str], str] | None]] = {}
        for column in table.columns:
            mapping = map_type(column.type, self.options)
            if mapping is None:
                continue  # unknown type and include.unknown.datatypes is off: Debezium drops the column
            renderer = value_renderer(column.type, mapping) if snapshot else None
            if not snapshot and mapping.extra.get(STREAMING_UNRESOLVED) and not self.options.include_unknown_datatypes:
                # Debezium's streaming path cannot read this type: null, or the NOT NULL fallback.
                mapping = replace(mapping, convert=_constant(mapping.zero if column.not_null else None))
            if snapshot and mapping.snapshot_convert is not None:
                mapping = replace(mapping, convert=mapping.snapshot_convert)  # Debezium reads these via JDBC objects
                renderer = None
            qualified = f"{qualified_table}.{column.name}"
            selected = self.rules.selected(qualified)
            key_candidates[column.name] = (column, mapping, selected, renderer)
            if selected:
                value_fields.append(self._value_field(column, mapping, qualified, snapshot, renderer))
        missing = [name for name in key_names if name not in key_candidates]
        if missing and override is not None:
            raise ConfigurationError(f"table {qualified_table} has no column(s) {', '.join(missing)}", prop="message.key.columns")
        key_fields = [self._key_field(*key_candidates[name], snapshot) for name in key_names if name in key_candidates]

        prefix = self.schema_names(topic)
        row_schema = struct([f for f, _ in value_fields], optional=True, name=f"{prefix}.Value")
        key_schema = struct([f for f, _ in key_fields], name=f"{prefix}.Key") if key_fields else None
        envelope = envelope_schema(row_schema, f"{prefix}.Envelope")
        return TableSchema(table, topic, key_schema, row_schema, envelope, [p for _, p in key_fields], [p for _, p in value_fields])

    def _key_field(
        self, column: ColumnDescription, mapping: ValueMapping, selected: bool, renderer: Callable[[str], str] | None,
        snapshot: bool,
    ) -> tuple[Field, _FieldPlan]:
        """A key field: the plain column, without value transformations or their parameters.

        A key column that the column filters exclude behaves as in Debezium: the snapshot does not
        read it (so a NOT NULL column shows its fallback value), and streaming marks it optional.
        """
        field, plan = self._field(column, mapping, mapping.convert, {}, renderer)
        if selected:
            return field, plan
        if snapshot:
            return field, _FieldPlan(plan.name, -1, plan.convert, plan.null_value, plan.toast, renderer=renderer)
        return Field(field.name, field.schema.as_optional(True)), plan

    def _value_field(
        self, column: ColumnDescription, mapping: ValueMapping, qualified: str, snapshot: bool,
        renderer: Callable[[str], str] | None = None,
    ) -> tuple[Field, _FieldPlan]:
        parameters: dict[str, str] = {}
        if self.rules.propagates(qualified, f"{column_table(qualified)}.{column.type.declared_name}"):
            parameters.update(
                source_type_parameters(column.name, column.type, snapshot=snapshot, default_expression=column.default_expression)
            )
        convert, added, mask = self.rules.value_transform(qualified, mapping.convert, column_length(column.type))
        parameters.update(added)
        if convert is not mapping.convert or mask is not None:
            renderer = None  # truncated, masked or hashed: only the Python converter knows
        field, plan = self._field(column, mapping, convert, parameters, renderer)
        if mask is not None:
            plan = _FieldPlan(plan.name, plan.position, convert, mask, mask)
        elif plan.null_value is not None:
            fallback = self.rules.fallback_transform(qualified, column_length(column.type))
            if fallback is not None:  # Debezium truncates and hashes the fallback value too
                plan = replace(plan, null_value=fallback(plan.null_value))
        return field, plan

    def _field(
        self, column: ColumnDescription, mapping: ValueMapping, convert: Callable[[str], Any], parameters: dict[str, str],
        renderer: Callable[[str], str] | None = None,
    ) -> tuple[Field, _FieldPlan]:
        # Some types are optional in Debezium's schemas even on NOT NULL columns (PostGIS geometry).
        schema = mapping.schema.as_optional(not column.not_null or bool(mapping.extra.get("always_optional")))
        default = default_value(column.default_expression, mapping, column.type)
        if default is not NO_DEFAULT:
            schema = schema.with_default(default)
        if parameters:
            schema = schema.add_parameters(parameters)
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
        return Field(name, schema), _FieldPlan(name, column.position, convert, null_value, toast, schema.optional, renderer,
                                               column.type, mapping)


def _constant(value: Any) -> Callable[[str], Any]:
    """A converter that ignores its text."""
    return lambda _text: value


def column_table(qualified_column: str) -> str:
    """``schema.table.column`` -> ``schema.table``."""
    return qualified_column.rsplit(".", 1)[0]
