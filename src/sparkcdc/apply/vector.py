"""Column-at-a-time helpers over Arrow tables that the fold and the targets share: which rows end a
run of equal keys, which row of another table has the same key, lexicographic sequence order.

They exist so that a batch's rows stay Arrow buffers from the fold to the target's write; a Python
object per row costs about a microsecond each, which a fast apply cannot afford.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "cast_column",
    "ends_of_runs",
    "equal_neighbours",
    "flat_columns",
    "has_name",
    "last_of_each",
    "later",
    "match_rows",
    "not_later",
    "struct_column",
]

_INDEX = "__sparkcdc_index"


def ends_of_runs(table: pa.Table, names: Sequence[str]) -> np.ndarray:
    """For a table sorted by ``names``: whether each row is the last of its run of equal values."""
    n = table.num_rows
    ends = np.ones(n, dtype=bool)
    if n < 2:
        return ends
    differs = np.zeros(n - 1, dtype=bool)
    for name in names:
        column = table.column(name)
        unequal = pc.not_equal(column.slice(0, n - 1), column.slice(1)).to_numpy(zero_copy_only=False)
        differs |= unequal.astype(bool)
    ends[:-1] = differs
    return ends


def equal_neighbours(table: pa.Table, names: Sequence[str]) -> np.ndarray:
    """For each row but the last: whether the next row has the same values of ``names``."""
    n = table.num_rows
    same = np.ones(max(n - 1, 0), dtype=bool)
    for name in names:
        column = table.column(name)
        same &= pc.equal(column.slice(0, n - 1), column.slice(1)).to_numpy(zero_copy_only=False).astype(bool)
    return same


def match_rows(left: pa.Table, right: pa.Table, names: Sequence[str]) -> pa.Array:
    """Per row of ``left``: the index of the row of ``right`` with the same ``names`` values (the last
    one when several have), null when none has. Struct columns are matched field by field."""
    left_flat = flat_columns(left, names)
    right_flat = flat_columns(right, names)
    keys = [f"__k{i}" for i in range(len(left_flat))]
    left_keys = pa.table(dict(zip(keys, left_flat, strict=True)) | {_INDEX + "l": pa.array(np.arange(left.num_rows, dtype=np.int64))})
    right_keys = pa.table(dict(zip(keys, [c.cast(left_flat[i].type) for i, c in enumerate(right_flat)], strict=True))
                          | {_INDEX + "r": pa.array(np.arange(right.num_rows, dtype=np.int64))})
    if right.num_rows:
        right_keys = right_keys.group_by(keys, use_threads=False).aggregate([(_INDEX + "r", "max")]).rename_columns(
            [*keys, _INDEX + "r"])
    joined = left_keys.join(right_keys, keys, join_type="inner", use_threads=False)
    found = np.full(left.num_rows, -1, dtype=np.int64)
    found[joined.column(_INDEX + "l").to_numpy()] = joined.column(_INDEX + "r").to_numpy()
    return pa.array(found, mask=found < 0)


def last_of_each(rows: pa.Table, names: Sequence[str]) -> np.ndarray:
    """Whether each row is the last of the rows with its values of ``names`` (structs by field)."""
    index = match_rows(rows, rows, names).to_numpy(zero_copy_only=False)
    return np.asarray(index == np.arange(rows.num_rows), dtype=bool)


def flat_columns(table: pa.Table, names: Sequence[str]) -> list[pa.ChunkedArray]:
    """The columns ``names``, a struct column as its fields (in order)."""
    columns: list[pa.ChunkedArray] = []
    for name in names:
        column = table.column(name)
        if pa.types.is_struct(column.type):
            columns += [pc.struct_field(column, i) for i in range(column.type.num_fields)]
        else:
            columns.append(column)
    return columns


def _compare(left: Sequence[Any], right: Sequence[Any], strict: bool) -> pa.ChunkedArray | pa.Array:
    """``left > right`` (``strict``) or ``left >= right``, as tuples compare: field by field."""
    result = pc.greater(left[-1], right[-1]) if strict else pc.greater_equal(left[-1], right[-1])
    for a, b in zip(reversed(left[:-1]), reversed(right[:-1]), strict=True):
        result = pc.or_(pc.greater(a, b), pc.and_(pc.equal(a, b), result))
    return result


def later(left: Sequence[Any], right: Sequence[Any]) -> Any:
    """Sequences ``left`` > ``right`` (each a list of columns, the sequence's fields in order)."""
    return _compare(left, right, strict=True)


def not_later(left: Sequence[Any], right: Sequence[Any]) -> Any:
    """Sequences ``left`` <= ``right``."""
    return pc.invert(later(left, right))


def struct_column(columns: Sequence[Any], type_: pa.StructType, mask: Any = None) -> pa.Array:
    """A struct array of ``type_`` from its fields' columns (``mask`` true: the struct is null)."""
    arrays = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in columns]
    arrays = [a.cast(type_.field(i).type) for i, a in enumerate(arrays)]
    if mask is not None and not isinstance(mask, pa.Array):
        mask = pa.array(mask, type=pa.bool_())
    return pa.StructArray.from_arrays(arrays, fields=list(type_), mask=mask)


def has_name(lists: Any, name: str) -> np.ndarray:
    """Per row of a list<string> column: whether ``name`` is among its values (null: no)."""
    if isinstance(lists, pa.ChunkedArray):
        lists = lists.combine_chunks()
    found = np.zeros(len(lists), dtype=bool)
    if len(lists) == 0:
        return found
    flat = pc.list_flatten(lists)
    if len(flat) == 0:
        return found
    parents = pc.list_parent_indices(lists).to_numpy()
    hits = pc.equal(flat, name).to_numpy(zero_copy_only=False)
    found[parents[hits.astype(bool)]] = True
    return found


def cast_column(column: Any, type_: pa.DataType) -> Any:
    """``column`` as ``type_``: Arrow's cast, or through Python values where Arrow has none (a
    value Arrow will not cast safely, e.g. an integer into a decimal of other digits)."""
    if column.type == type_:
        return column
    try:
        return column.cast(type_)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        try:
            return pa.array(column.to_pylist(), type=type_)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
            return pa.array(column.to_pylist()).cast(type_)
