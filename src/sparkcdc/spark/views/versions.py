"""Versions of a table's view, and the one view that merges them.

A micro-batch can hold changes of a table before and after an ``ALTER TABLE``: each block of the
``changes`` layout says which version of the table it was written for (its description, see
:mod:`sparkcdc.debezium.descriptions`). :func:`view_of_description` builds a version's view from
that text as the reader built it; :func:`merged_view` merges the versions of a batch (oldest
first) into the view the batch is read as:

* the newest version's columns, in its order, named and typed as it has them;
* then the columns of older versions the newest lacks (dropped in the batch), marked
  :attr:`ViewColumn.dropped` (nullable, never a key): their values up to the drop, null after;
* a column's identity is its ``attnum``, where both versions know it (else its name): a renamed
  column is one column, under its new name; a column dropped and added again under the same name
  is two, and the older one is left out (a name can hold one column);
* an older column whose identity is not known (its version was read from a Relation message after
  later DDL had renamed or dropped it) and whose name the newest version lacks is left out too, and
  named in :attr:`TableView.uncertain`: whether it was renamed or dropped cannot be told, so the
  batch's rows of that version may lack its value under its new name, and the applier has the
  table read again.

:func:`fill_expression` is what a row of a version that lacks a live column holds in it: the value
PostgreSQL gave rows older than the column (:attr:`ViewColumn.fill`), as Spark SQL.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from pyspark.sql import types as T

from .expressions import sql_literal
from .model import TableView, ViewColumn, view_of
from .reader import ColumnReader

__all__ = [
    "fill_expression",
    "lossy_columns",
    "matching_column",
    "merged_view",
    "ordered_versions",
    "view_of_description",
    "widens",
]


def view_of_description(text: str, properties_or_config: Any) -> TableView:
    """The view of the table version ``text`` describes (a block's ``description``), built with
    the connector's configuration (or its properties) as the reader built it."""
    from ...debezium.descriptions import description_from_json
    from ...debezium.table import TableSchemaFactory
    from ..source.options import config_from_options

    config = properties_or_config if hasattr(properties_or_config, "raw") else config_from_options(properties_or_config)
    return view_of(TableSchemaFactory(config).build(description_from_json(text)), config)


def same_column(a: ViewColumn, b: ViewColumn) -> bool:
    """Whether two versions' columns are the same source column (see the module doc)."""
    if a.attnum and b.attnum:
        return a.attnum == b.attnum
    return a.name == b.name


def matching_column(column: ViewColumn, view: TableView) -> ViewColumn | None:
    """``view``'s column that is ``column`` (by identity), if any."""
    return next((candidate for candidate in view.columns if same_column(candidate, column)), None)


def merged_view(versions: Sequence[TableView]) -> TableView:
    """One view over ``versions`` (oldest first; see the module doc)."""
    if not versions:
        raise ValueError("merged_view of no version")
    newest = versions[-1]
    if len(versions) == 1:
        return newest
    columns = list(newest.columns)
    uncertain: list[str] = []
    for older in reversed(versions[:-1]):
        for column in older.columns:
            if any(same_column(column, kept) for kept in columns) or any(kept.name == column.name for kept in columns):
                continue
            if not column.attnum:  # renamed or dropped: not told (the Relation message was read after later DDL)
                uncertain.append(column.name)
                continue
            columns.append(replace(column, dropped=True, nullable=True, is_key=False, in_value=True, key_schema=None,
                                   fill=None, fill_known=True))
    return replace(newest, columns=tuple(columns), uncertain=tuple(dict.fromkeys(uncertain)))


def fill_expression(column: ViewColumn) -> str | None:
    """Spark SQL: ``column``'s value in a row older than it (its codec applied to the raw fill),
    or None where that is null or not known (the row's value is null)."""
    if column.dropped or not column.fill_known or column.fill is None or not column.in_value:
        return None
    reader = ColumnReader.of(column)
    raw = T.StructType([T.StructField("v", reader.codec.raw, True)])
    literal = f"from_json({sql_literal(json.dumps({'v': column.fill}))}, {sql_literal(raw.json())}).v"
    return f"CAST({reader.codec.apply(literal)} AS {column.spark_type.simpleString()})"


def renamed_names(version: TableView, merged: TableView) -> Mapping[str, str]:
    """A version's column names -> the merged view's, where they differ (renamed since)."""
    out: dict[str, str] = {}
    for column in version.columns:
        found = matching_column(column, merged)
        if found is not None and found.name != column.name:
            out[column.name] = found.name
    return out


def widens(older: T.DataType, newer: T.DataType) -> bool:
    """Whether every value of Spark type ``older`` is the same value in ``newer`` (a cast that
    loses nothing): the same type, a wider integer, float to double, a decimal with at least as
    many digits on each side of the point."""
    if older == newer:
        return True
    integers = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
    if isinstance(older, integers) and isinstance(newer, integers):
        return [isinstance(older, t) for t in integers].index(True) <= [isinstance(newer, t) for t in integers].index(True)
    if isinstance(older, T.FloatType) and isinstance(newer, T.DoubleType):
        return True
    if isinstance(older, T.DecimalType) and isinstance(newer, T.DecimalType):
        return newer.scale >= older.scale and newer.precision - newer.scale >= older.precision - older.scale
    if isinstance(older, T.ArrayType) and isinstance(newer, T.ArrayType):
        return widens(older.elementType, newer.elementType)
    return False


def lossy_columns(versions: Sequence[TableView], merged: TableView) -> tuple[str, ...]:
    """The merged view's columns whose values in an older version do not widen to its type (a type
    changed with ``USING``, or any conversion that is not a widening): those rows' values are what
    PostgreSQL's rewrite made of them, which no WAL record carries, so the table is read again."""
    lossy = []
    for column in merged.columns:
        for version in versions:
            own = matching_column(column, version)
            if own is not None and not widens(own.spark_type, column.spark_type):
                lossy.append(column.name)
                break
    return tuple(lossy)


def ordered_versions(found: Mapping[str, tuple[str, bool, tuple[int, int, int]]]) -> tuple[tuple[str, str], ...]:
    """A table's versions in a batch, oldest first, from shape -> (description, whether its blocks
    are all snapshot reads, its newest block's position): those seen in streamed changes by their
    newest change's position, those seen only in snapshot reads before them (a snapshot chunk's rows
    are placed where its window closes; where a chunk read a newer version than the stream has shown
    yet, its new columns come in as dropped ones and become live with the table's next streamed
    change)."""
    order = sorted(found.items(), key=lambda item: (not item[1][1], item[1][2]))
    return tuple((shape, description) for shape, (description, _, _) in order)
