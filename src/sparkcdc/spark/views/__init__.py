"""Typed per-table views of the ``postgres-cdc`` source.

The source emits every table's changes as Debezium JSON (``key`` and ``value`` strings). A view
turns one table's changes into rows whose columns are the table's own columns as Spark types,
derived from the event schema the connector itself builds for that table (so column filters, key
overrides, name adjustment and every ``*.handling.mode`` are those of the events)::

    from sparkcdc.spark.views import describe_table, table_changes

    frame = spark.readStream.format("postgres-cdc").options(**options_for(props)).load()
    orders = table_changes(frame, "public.orders", props)      # or table_changes(frame, view)

    def batch(changes, batch_id):                               # a view works in foreachBatch too
        table_changes(changes, view).write ...

Output columns: the table's data columns (typed, named as in the events) then the metadata columns
:data:`METADATA_COLUMNS`. Rows: the table's c/u/d/r/t events; tombstones, transaction, heartbeat
and logical-message records are left out. c/u/r take their values from ``after``, d from
``before`` (key columns from the event key when ``before`` lacks them), t has every data column
null. An unchanged TOAST value (Debezium's placeholder) becomes NULL and the column's name is listed
in ``__unchanged``. Everything is Spark SQL expressions (``from_json`` with a schema derived from the
Connect schemas, then per-type conversions): no Python UDF, and the result stays lazy.

See ``docs/spark-source.md`` ("Typed per-table views") for the type mapping table.

The package, by job: :mod:`.model` (the view: columns, keys, metadata columns), :mod:`.type_map`
(Connect schema -> Spark type per handling mode, and each codec), :mod:`.expressions` (the Spark SQL
conversion texts), :mod:`.reader` (reading a column, unchanged TOAST), :mod:`.describe` (the catalog
side), :mod:`.changes` (``table_changes``), :mod:`.versions` (a table's versions in a batch, merged),
:mod:`.batches` (``batch_changes``) and :mod:`.errors`.
"""

from __future__ import annotations

from .batches import batch_changes
from .changes import table_changes
from .describe import describe_table
from .errors import TableNotCapturedError, TableViewError, UnknownTableError, UnsupportedColumnError
from .model import CHANGE_OPS, METADATA_COLUMNS, OLD_KEY, TableView, ViewColumn, view_of
from .type_map import VARIABLE_SCALE_DECIMAL_TYPE, spark_type
from .versions import merged_view

__all__ = [
    "CHANGE_OPS",
    "METADATA_COLUMNS",
    "OLD_KEY",
    "VARIABLE_SCALE_DECIMAL_TYPE",
    "TableNotCapturedError",
    "TableView",
    "TableViewError",
    "UnknownTableError",
    "UnsupportedColumnError",
    "ViewColumn",
    "batch_changes",
    "describe_table",
    "merged_view",
    "spark_type",
    "table_changes",
    "view_of",
]
