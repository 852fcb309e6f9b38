"""What a typed view is: its data columns (Spark types, keys, TOAST placeholders) and its metadata columns.

:func:`view_of` derives a :class:`TableView` from the event schema the connector builds for a table
(so column filters, key overrides, name adjustment and every ``*.handling.mode`` are those of the
events); it reads no database (:func:`~sparkcdc.spark.views.describe_table` does the catalog part).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql import types as T

from ...debezium.connect import ConnectSchema
from .errors import UnsupportedColumnError
from .type_map import spark_type

if TYPE_CHECKING:
    from ...debezium.config import ConnectorConfig
    from ...debezium.table import TableSchema

__all__ = ["CHANGE_OPS", "METADATA_COLUMNS", "OLD_KEY", "TableView", "ViewColumn", "view_of"]

#: The ``op`` values of row changes (snapshot read, create, update, delete, truncate).
CHANGE_OPS = ("c", "u", "d", "r", "t")

#: The metadata columns after the data columns, with their Spark types.
METADATA_COLUMNS: tuple[tuple[str, T.DataType], ...] = (
    ("__op", T.StringType()),
    ("__commit_lsn", T.LongType()),
    ("__lsn", T.LongType()),
    ("__ordinal", T.LongType()),
    ("__tx_id", T.LongType()),
    ("__source_ts", T.TimestampType()),
    ("__snapshot", T.StringType()),
    ("__unchanged", T.ArrayType(T.StringType())),
)

#: The last column: the old key of the create that ends a primary-key change (Debezium's
#: ``__debezium.oldkey`` header, typed like the key columns), null otherwise. Its value tells where a
#: column the create could not carry (unchanged TOAST) is stored: in the row of the old key.
OLD_KEY = "__old_key"

_METADATA_NAMES = frozenset([*(name for name, _ in METADATA_COLUMNS), OLD_KEY])


@dataclass(frozen=True)
class ViewColumn:
    """One data column of a view.

    ``nullable`` is the column's optionality in the event schema (False for NOT NULL columns); the
    view's own Spark columns are always nullable (deletes and truncates leave columns null).
    ``placeholder`` is the JSON-ready value an unchanged TOAST value of this column carries in the
    events (``None``: Debezium emits null there, so it cannot be told from a NULL).
    """

    name: str
    spark_type: T.DataType
    connect_schema: ConnectSchema
    pg_type: str
    nullable: bool
    is_key: bool
    placeholder: Any = None
    in_value: bool = True  # False: a key column the column filters leave out of the value (taken from the key)
    key_schema: ConnectSchema | None = None  # the column's schema in the event key, for key columns
    in_delete_image: bool = True  # a delete's ``before`` carries the column (the table's replica identity)
    #: The column's identity in the source table (``attnum``; 0: not known, then its name is): what
    #: tells a renamed column from a dropped one and a new one of the same name.
    attnum: int = 0
    #: What rows older than the column hold (its raw value as a block carries it, None for NULL):
    #: the value PostgreSQL gave them when the column was added (``fill_known``), or not known
    #: (``fill_known`` False: added with a volatile default, whose values no WAL carries).
    fill: Any = None
    fill_known: bool = True
    #: The source no longer has the column (a view merged over versions of the table keeps it: its
    #: values up to the drop, null after).
    dropped: bool = False


@dataclass(frozen=True)
class TableView:
    """What :func:`table_changes` needs to know about one table: its columns and how its events are encoded."""

    table: str  # "schema.table"
    topic: str
    keys: tuple[str, ...]
    columns: tuple[ViewColumn, ...]
    schema_name: str = ""
    table_name: str = ""
    key_schemas_enable: bool = False
    value_schemas_enable: bool = False  # under CloudEvents: whether its data attribute carries its schema
    #: The values are Debezium's CloudEvents (value.converter=CloudEventsConverter): before and after are in ``data``.
    cloudevents: bool = False
    #: The configuration's transforms (``transforms=``, their aliases): the ``columns`` layout's
    #: records are the transformed ones, which table_changes cannot read as change events.
    transforms: tuple[str, ...] = ()
    replica_identity: str = "d"  # pg_class.relreplident when described: d, n, f or i
    relation_id: int = 0  # the source table's pg_class.oid (0: not known)
    #: A merged view's columns of older versions that were left out because which column they are
    #: could not be told (see :func:`sparkcdc.spark.views.versions.merged_view`).
    uncertain: tuple[str, ...] = ()

    @property
    def spark_schema(self) -> T.StructType:
        return T.StructType([T.StructField(c.name, c.spark_type, True) for c in self.columns])

    def column(self, name: str) -> ViewColumn:
        for candidate in self.columns:
            if candidate.name == name:
                return candidate
        raise KeyError(f"{self.table} has no column {name!r}")



def view_of(
    table_schema: TableSchema,
    config: ConnectorConfig,
    *,
    declared_types: Mapping[str, str] | None = None,
    replica_identity: str = "f",
    identity_columns: Sequence[str] | None = None,
) -> TableView:
    """The view of a table whose event schema is ``table_schema`` (built for ``config``).

    ``declared_types``: column name -> PostgreSQL type text; ``identity_columns``: the columns a
    delete's ``before`` carries (None: all of them, REPLICA IDENTITY FULL).
    """
    description = table_schema.description
    qualified = description.qualified_name
    declared = declared_types or {}
    if description.replica_identity:  # the description knows (a Relation message's, completed from the catalog)
        replica_identity, identity_columns = description.replica_identity, description.identity_columns
    column_names = [c.name for c in description.columns]
    value_plans = table_schema._value_fields  # noqa: SLF001 - the field plans say which column each field reads
    key_plans = table_schema._key_fields if table_schema.key_schema is not None else ()  # noqa: SLF001
    key_fields = {f.name: f.schema for f in table_schema.key_schema.fields} if table_schema.key_schema is not None else {}

    def source_column(position: int, field_name: str) -> str:
        return column_names[position] if position >= 0 else field_name

    view_columns: list[ViewColumn] = []
    def described(position: int) -> Any:
        return description.columns[position] if position >= 0 else None

    for plan, field in zip(value_plans, table_schema.row_schema.fields, strict=True):
        original = source_column(plan.position, field.name)
        column = described(plan.position)
        toastable = plan.position < 0 or _toastable(column.type)
        fill, fill_known = _fill(column, plan)
        view_columns.append(
            ViewColumn(
                name=field.name,
                spark_type=spark_type(field.schema, column=f"{qualified}.{field.name}"),
                connect_schema=field.schema,
                pg_type=(column.declared_type if column is not None else "") or declared.get(original, ""),
                nullable=field.schema.optional,
                is_key=field.name in key_fields,
                placeholder=plan.toast if toastable else None,
                key_schema=key_fields.get(field.name),
                in_delete_image=identity_columns is None or original in identity_columns or field.name in key_fields,
                attnum=0 if column is None else column.attnum,
                fill=fill,
                fill_known=fill_known,
            )
        )
    in_value = {c.name for c in view_columns}
    for plan in key_plans:
        if plan.name in in_value:
            continue
        schema = key_fields[plan.name]
        column = described(plan.position)
        view_columns.append(
            ViewColumn(
                name=plan.name,
                spark_type=spark_type(schema, column=f"{qualified}.{plan.name}"),
                connect_schema=schema,
                pg_type=(column.declared_type if column is not None else "") or declared.get(source_column(plan.position, plan.name), ""),
                nullable=schema.optional,
                is_key=True,
                in_value=False,
                key_schema=schema,
                attnum=0 if column is None else column.attnum,
            )
        )
    cloudevents = config.converters.cloudevents
    clashing = [c.name for c in view_columns if c.name in _METADATA_NAMES]
    if clashing:
        raise UnsupportedColumnError(f"table {qualified}: column(s) {', '.join(clashing)} clash with the view's metadata columns")
    return TableView(
        table=qualified,
        topic=table_schema.topic,
        keys=tuple(key_fields),
        columns=tuple(view_columns),
        schema_name=description.schema,
        table_name=description.name,
        key_schemas_enable=config.key_schemas_enable,
        value_schemas_enable=config.value_schemas_enable if cloudevents is None else cloudevents.data_schemas,
        cloudevents=cloudevents is not None,
        transforms=config.transforms.aliases,
        replica_identity=replica_identity,
        relation_id=description.relation_id,
    )


def _fill(column: Any, plan: Any) -> tuple[Any, bool]:
    """What rows older than ``column`` hold, as its field ``plan`` converts it (see
    :attr:`ViewColumn.fill`). A column added without a default left them NULL; one added with a
    non-volatile default gave them its value (``attmissingval``), which the plan converts as it
    converts any value of the column (masking and all); any other default is not known."""
    if column is None:
        return None, True
    if not column.attnum:  # which catalog column it is was not told: nothing is known of its past
        return None, False
    if column.has_missing:
        if column.missing_value is None:
            return None, True
        try:
            return plan.convert(column.missing_value), True
        except Exception:  # a value the plan cannot represent: as if not known (the rows are read again)
            return None, False
    return None, column.default_expression is None


# Fixed-length types (pg_type.typlen > 0): PostgreSQL never TOASTs their values, so no placeholder
# can stand for them (Debezium's plan still has one; comparing every integer with it is wasted work).
_FIXED_LENGTH_TYPES = frozenset({
    "int2", "int4", "int8", "oid", "float4", "float8", "bool", "date", "time", "timetz", "timestamp", "timestamptz",
    "interval", "uuid", "money", "point", "macaddr", "macaddr8", "char", "box", "lseg", "line", "circle", "pg_lsn",
    "tid", "xid", "xid8", "cid",
})  # fmt: skip


def _toastable(column_type: Any) -> bool:
    """Whether values of this (domain-resolved) column type can be stored out of line (TOAST)."""
    if column_type.element is not None:
        return True
    return column_type.typtype != "e" and column_type.name not in _FIXED_LENGTH_TYPES
