"""Arrow tables into PostgreSQL by COPY, without a Python object per value where that can be helped.

psycopg's ``write_row`` costs about 25 µs a row of six columns here (each value a Python object,
then adapted), more than everything else a change costs. pyarrow's CSV writer renders a batch of
the common types in C++, in a form PostgreSQL's ``COPY … (FORMAT csv)`` reads exactly as it reads
their text: every string quoted (an unquoted empty field is NULL, ``""`` the empty string),
``true``/``false``, ``nan``/``inf``, ISO dates and times. So:

* integers, floats, decimals, booleans, strings, dates and timestamps go as CSV; a timestamp with a
  zone goes as its UTC wall time, read in a session whose ``TimeZone`` is UTC (the caller's ``SET
  LOCAL TIME ZONE 'UTC'``);
* lists of strings or integers go as PostgreSQL array literals built column at a time;
* a table with a column of any other type (binary, nested, durations…) goes row by row through
  psycopg, which adapts every Python value.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
from psycopg import Cursor, sql

__all__ = ["copy_table", "int_list_column"]

_CHUNK_ROWS = 65536
_NULL_TEXT = pa.scalar(None, pa.string())


def copy_table(cur: Cursor[Any], target: sql.Composable, data: pa.Table, constants: Sequence[tuple[str, Any]] = ()) -> None:
    """COPY ``data`` (its columns named as ``target``'s) into ``target``, each row with the
    ``constants`` (column name, value) too."""
    names = [name for name, _ in constants] + data.column_names
    columns = sql.SQL(", ").join(sql.Identifier(name) for name in names)
    ready = [_csv_ready(column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column) for column in data.columns]
    if all(column is not None for column in ready):
        rows = data.num_rows
        arrays = [_constant(value, rows) for _, value in constants] + ready
        csv = pa.Table.from_arrays(arrays, names=[f"c{i}" for i in range(len(arrays))])
        options = pcsv.WriteOptions(include_header=False)
        with cur.copy(sql.SQL("COPY {} ({}) FROM STDIN (FORMAT csv)").format(target, columns)) as copy:
            for batch in csv.to_batches(max_chunksize=_CHUNK_ROWS):
                buffer = io.BytesIO()
                pcsv.write_csv(batch, buffer, options)
                copy.write(buffer.getvalue())
        return
    values = [column.to_pylist() for column in data.columns]
    fixed = [value for _, value in constants]
    with cur.copy(sql.SQL("COPY {} ({}) FROM STDIN").format(target, columns)) as copy:
        for row in zip(*values, strict=True):
            copy.write_row([*fixed, *row])


def int_list_column(fields: Sequence[Any], mask: Any = None) -> pa.Array:
    """A list<int64> array whose rows are the values of ``fields`` (integer columns) side by side;
    ``mask`` true: the row is null. A sequence of several columns as PostgreSQL stores it (bigint[])."""
    arrays = [pc.fill_null(f.combine_chunks() if isinstance(f, pa.ChunkedArray) else f, 0).cast(pa.int64()) for f in fields]
    rows = len(arrays[0]) if arrays else 0
    values = np.column_stack([a.to_numpy() for a in arrays]).ravel() if rows else np.zeros(0, dtype=np.int64)
    offsets = pa.array(np.arange(0, rows * len(arrays) + 1, max(len(arrays), 1), dtype=np.int32))
    lists = pa.ListArray.from_arrays(offsets, pa.array(values, type=pa.int64()))
    if mask is not None and pc.any(mask).as_py():
        lists = pc.if_else(mask, pa.scalar(None, lists.type), lists)
    return lists


def _constant(value: Any, rows: int) -> pa.Array:
    if isinstance(value, bool):
        return pa.array(np.full(rows, value, dtype=bool))
    if isinstance(value, int):
        return pa.array(np.full(rows, value, dtype=np.int64))
    return pc.fill_null(pa.nulls(rows, pa.string()), str(value))


def _csv_ready(column: pa.Array) -> pa.Array | None:
    """``column`` as pyarrow's CSV writer renders it for PostgreSQL, or None when it cannot be."""
    t = column.type
    if pa.types.is_dictionary(t):
        return _csv_ready(column.dictionary_decode())
    if (pa.types.is_null(t) or pa.types.is_boolean(t) or pa.types.is_integer(t) or pa.types.is_float32(t)
            or pa.types.is_float64(t) or pa.types.is_decimal(t) or pa.types.is_string(t) or pa.types.is_large_string(t)
            or pa.types.is_date32(t)):
        return column
    if pa.types.is_string_view(t):
        return column.cast(pa.string())
    if pa.types.is_float16(t):
        return column.cast(pa.float32())
    if pa.types.is_date64(t):
        return column.cast(pa.date32())
    if pa.types.is_timestamp(t):
        return column.cast(pa.timestamp(t.unit)) if t.tz else column  # UTC wall time, read with TimeZone UTC
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _array_literals(column)
    return None


def _array_literals(column: pa.Array) -> pa.Array | None:
    """A list column as PostgreSQL array literals (``{1,2}``, ``{"a","b"}``), for lists of integers
    or strings; None for others."""
    element = column.type.value_type
    flat = column.flatten()
    if pa.types.is_integer(element):
        texts = pc.cast(flat, pa.string())
    elif pa.types.is_string(element) or pa.types.is_large_string(element):
        escaped = pc.replace_substring(pc.replace_substring(flat.cast(pa.string()), "\\", "\\\\"), '"', '\\"')
        texts = pc.binary_join_element_wise('"', escaped, '"', "")
    else:
        return None
    texts = pc.fill_null(texts, "NULL")
    lengths = pc.fill_null(pc.list_value_length(column), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    offsets = pa.array(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32))
    joined = pc.binary_join(pa.ListArray.from_arrays(offsets, texts), ",")
    literals = pc.binary_join_element_wise("{", joined, "}", "")
    return pc.if_else(column.is_valid(), literals, _NULL_TEXT)
