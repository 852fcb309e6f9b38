"""``table_changes``: one table's changes from the ``postgres-cdc`` source as typed rows.

Everything is Spark SQL expressions (``from_json`` with a schema derived from the Connect schemas,
then per-type conversions): no Python UDF, and the result stays lazy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .describe import describe_table
from .errors import TableViewError
from .expressions import quote_name, sql_literal
from .model import CHANGE_OPS, METADATA_COLUMNS, OLD_KEY, TableView
from .reader import ColumnReader

if TYPE_CHECKING:
    from ..outputs import Output

__all__ = ["table_changes"]

_OLD_KEY_HEADER = "__debezium.oldkey"  # the header that carries a primary-key change's old key
_SOURCE_COLUMNS = ("topic", "key", "value", "headers", "op", "schema", "table", "lsn", "commit_lsn", "ordinal", "tx_id",
                   "source_ts", "snapshot")


def _envelope_type(readers: list[ColumnReader]) -> T.StructType:
    row = T.StructType([T.StructField(r.column.name, r.raw, True) for r in readers if r.column.in_value])
    return T.StructType([T.StructField("before", row, True), T.StructField("after", row, True)])


def _key_type(readers: list[ColumnReader]) -> T.StructType:
    return T.StructType([T.StructField(r.column.name, r.key_codec.raw, True) for r in readers if r.key_codec is not None])


def _parse(text: Column, schema: T.StructType, wrapped: bool) -> Column:
    if not wrapped:
        return F.from_json(text, schema)
    return F.from_json(text, T.StructType([T.StructField("payload", schema, True)])).getField("payload")


def _parse_value(text: Column, schema: T.StructType, view: TableView) -> Column:
    """A change event's value: JsonConverter's envelope, or a CloudEvent whose ``data`` holds before
    and after (value.converter=CloudEventsConverter; its ``{"schema", "payload"}`` as ``json.schemas.enable`` says)."""
    if not view.cloudevents:
        return _parse(text, schema, view.value_schemas_enable)
    data = T.StructType([T.StructField("payload", schema, True)]) if view.value_schemas_enable else schema
    parsed = F.from_json(text, T.StructType([T.StructField("data", data, True)])).getField("data")
    return parsed.getField("payload") if view.value_schemas_enable else parsed


def _output_of(frame: DataFrame) -> Output:
    """The output a frame of the source was read with, from its columns (an analysis); the default
    one ("columns") in a Declarative Pipelines query function, where Spark refuses analyses."""
    from ..outputs import default_output, output_of_columns
    from ..pipeline_analysis import in_pipeline_query_function

    if in_pipeline_query_function(frame.sparkSession):
        return default_output()
    try:
        columns = frame.columns
    except Exception as exc:
        condition = getattr(exc, "getCondition", lambda: None)()
        if condition == "ATTEMPT_ANALYSIS_IN_PIPELINE_QUERY_FUNCTION":
            raise TableViewError("table_changes in a Declarative Pipelines query function cannot look at the frame's "
                                 "columns (Spark refuses analyses there): pass layout='columns' or layout='changes'") from exc
        raise
    output = output_of_columns(columns)
    if output is not None:
        return output
    missing = [name for name in _SOURCE_COLUMNS if name not in columns]
    if missing:
        raise TableViewError(
            f"table_changes needs the postgres-cdc source's default 'columns' layout; the frame lacks {', '.join(missing)}"
        )
    return default_output()


def _output_named(layout: str) -> Output:
    """The output of a ``layout=`` argument: one whose rows ``table_changes`` reads."""
    from ..outputs import named

    try:
        output = named(layout)
    except ValueError:
        output = None
    if output is None or not (output.carries_events or output.carries_typed_changes):
        raise TableViewError(f"table_changes reads the postgres-cdc source's 'columns' or 'changes' layout, not {layout!r}")
    return output


def table_changes(frame: DataFrame, table: str | TableView, properties: Mapping[str, str] | None = None, *,
                  layout: str | None = None) -> DataFrame:
    """One table's changes from the ``postgres-cdc`` source (default "columns" layout), typed.

    ``table`` is a :class:`TableView` (from :func:`describe_table`) or a table name, then described
    with ``properties`` (the connector properties the source was started with).

    ``layout``: the source's ``sparkcdc.output.layout`` the frame was read with, ``"columns"`` or
    ``"changes"``. Given, the frame is not analysed: on Spark Connect an analysis is a round trip to
    the server (which, for a ``postgres-cdc`` read, runs the source's Python to learn its schema), and
    a Declarative Pipelines query function may not analyse at all. Without it, the frame's columns
    tell the layout (and name what a frame of another kind lacks), except in a pipeline query
    function: there it is the source's default, ``"columns"`` (pass ``"changes"`` for the other).
    """
    output = None if layout is None else _output_named(layout)
    if isinstance(table, TableView):
        view = table
    else:
        if properties is None:
            raise TypeError(f"table_changes({table!r}): pass the connector properties, or a TableView from describe_table")
        view = describe_table(properties, table)
    from ..outputs.changes.typed import typed_changes

    if output is None:
        output = _output_of(frame)
    if output.carries_typed_changes:
        return typed_changes(frame, view)
    if view.transforms:
        raise TableViewError(
            f"table_changes({view.table}): the 'columns' layout carries the records as transforms= "
            f"({', '.join(view.transforms)}) made them, not Debezium's change events; read the postgres-cdc source with "
            "sparkcdc.output.layout=changes, which carries the changes before the transforms (what table_changes and "
            "apply_changes read), or remove transforms= from the properties the view is described with"
        )
    readers = [ColumnReader.of(column) for column in view.columns]
    has_key = any(r.key_codec is not None for r in readers)
    meta_names = [name for name, _ in METADATA_COLUMNS[:-1]]

    events = frame.where(
        (F.col("schema") == view.schema_name) & (F.col("table") == view.table_name)
        & F.col("op").isin(*CHANGE_OPS) & F.col("value").isNotNull()
    )
    parsed = events.select(
        _parse_value(F.col("value"), _envelope_type(readers), view).alias("__value"),
        (_parse(F.col("key"), _key_type(readers), view.key_schemas_enable) if has_key else F.lit(None)).alias("__key"),
        # Headers are always serialized with their schema (as Debezium's JsonConverter for headers does).
        (_parse(F.expr(f"CAST(try_element_at(filter(headers, __h -> __h.key = {sql_literal(_OLD_KEY_HEADER)}), 1).value AS STRING)"),
                _key_type(readers), True) if has_key else F.lit(None)).alias("__oldkey"),
        F.col("op").alias("__op"),
        F.col("commit_lsn").cast("long").alias("__commit_lsn"),
        F.col("lsn").cast("long").alias("__lsn"),
        F.col("ordinal").cast("long").alias("__ordinal"),
        F.col("tx_id").cast("long").alias("__tx_id"),
        F.col("source_ts").cast("timestamp").alias("__source_ts"),
        F.col("snapshot").alias("__snapshot"),
    )
    # The image: c/u/r read ``after``, d ``before`` (t has neither). Each parsed value is read once.
    picked = parsed.selectExpr("CASE WHEN __op = 'd' THEN __value.before ELSE __value.after END AS __image", "__key", "__oldkey",
                               *meta_names)

    # Per column, as plain columns: the raw value (placeholders and a delete's missing columns already
    # null, read as the codec reads it), the key's raw value and the unchanged-TOAST flag.
    flag_exprs: list[str] = []
    value_exprs: list[str] = []
    plans: list[tuple[ColumnReader, str | None, str | None, str | None]] = []
    for index, reader in enumerate(readers):
        column = reader.column
        raw_name = key_name = flag_name = None
        if column.in_value:
            raw = f"__image.{quote_name(column.name)}"
            test = reader.unchanged(raw)
            if test is not None:
                flag_name = f"__f{index}"
                # A create carries placeholders only as the second half of a primary-key change.
                flag_exprs.append(f"(__op IN ('u', 'c') AND coalesce({test}, false)) AS {flag_name}")
                raw = f"CASE WHEN {flag_name} THEN NULL ELSE {raw} END"
            if not column.in_delete_image:  # a delete's before-image lacks it: Debezium's fallback, not data
                raw = f"CASE WHEN __op = 'd' THEN NULL ELSE {raw} END"
            raw_name = f"__r{index}"
            value_exprs.append(f"{reader.reparsed(raw)} AS {raw_name}")
        if reader.key_codec is not None:
            key_name = f"__k{index}"
            value_exprs.append(f"__key.{quote_name(column.name)} AS {key_name}")
        plans.append((reader, raw_name, key_name, flag_name))
    # The raw values use the flags: the flags come first, in a projection of their own.
    flagged = picked.selectExpr("*", *flag_exprs) if flag_exprs else picked
    flag_names = [flag for _, _, _, flag in plans if flag is not None]
    stage = flagged.selectExpr(*value_exprs, *flag_names, *meta_names, "__oldkey")

    data: list[str] = []
    unchanged: list[str] = []
    for reader, raw_name, key_name, flag_name in plans:
        column = reader.column
        value = reader.codec.apply(raw_name) if raw_name is not None else None
        if key_name is not None:
            assert reader.key_codec is not None
            from_key = reader.key_codec.apply(key_name)
            value = from_key if value is None else f"coalesce({value}, {from_key})"
        assert value is not None
        data.append(f"CAST({value} AS {column.spark_type.simpleString()}) AS {quote_name(column.name)}")
        if flag_name is not None:
            flag = flag_name if key_name is None else f"{flag_name} AND {key_name} IS NULL"  # a key column comes from the key
            unchanged.append(f"CASE WHEN {flag} THEN {sql_literal(column.name)} END")
    unchanged_names = f"filter(array({', '.join(unchanged)}), __n -> __n IS NOT NULL)" if unchanged else "array()"
    old_key_fields = [
        f"{sql_literal(reader.column.name)}, CAST({reader.key_codec.apply(f'__oldkey.{quote_name(reader.column.name)}')} "
        f"AS {reader.column.spark_type.simpleString()})"
        for reader in readers if reader.key_codec is not None
    ]
    old_key = (f"CASE WHEN __oldkey IS NULL THEN NULL ELSE named_struct({', '.join(old_key_fields)}) END" if old_key_fields
               else "CAST(NULL AS STRUCT<>)")
    return stage.selectExpr(*data, *meta_names, f"CAST({unchanged_names} AS ARRAY<STRING>) AS __unchanged",
                            f"{old_key} AS {OLD_KEY}")
