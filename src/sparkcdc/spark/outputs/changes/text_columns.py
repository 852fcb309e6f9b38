"""A snapshot chunk's text columns typed a whole column at a time in Arrow (the ``changes`` layout).

Why: typing a chunk value by value (:meth:`TableSchema.columns_of`: a Python converter call and a
Python object per cell, then ``pa.array`` of them) was about half of a typed snapshot chunk's CPU
(benchmarks/RESULTS.md, snapshot apply: the census that reads the chunks took 14 s of a 49 s
run). For the converters whose result Arrow computes identically for every text PostgreSQL can
print, the column is converted by Arrow's kernels instead:

* integers (``int2``, ``int4``, ``int8``): Arrow's string cast accepts exactly what the converters
  accept (ASCII digits, an optional ``-``; no ``+``, spaces or ``_``) and fails out of range;
* ``float8`` (and anything ``json_float`` converts): Arrow's string cast and Python's ``float``
  both round correctly, and ``NaN``/``Infinity``/``-Infinity`` (which the converter keeps as text)
  become the same non-finite doubles the block holds;
* ``bool``: ``t``/``f``;
* text kept as it is (``_identity``: text, varchar, json, uuid …);
* ``timestamptz`` as a ZonedTimestamp: values of the layout UTC sessions print for years 1 to
  9999 are rearranged by string kernels exactly as the converter's fast path does.

Anything else — another converter, a transformed one (masking, truncation, hashing), a text the
kernel rejects (the converter then raises its own error, or decides an unrepresentable value), a
default Arrow cannot hold — takes the per-value converter for that column, with the semantics of
``columns_of``: NULL becomes the field's null value, an unrepresentable value fails a key field and
becomes null in an optional row field. ``tests/spark/test_text_columns.py`` checks both paths agree.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ....debezium.table import TableSchema
from ....debezium.types.base import UnrepresentableValueError
from ....debezium.types.numeric import _bool, _int16, _int32, _int64, json_float
from ....debezium.types.temporal import ZONED_TIMESTAMP_NAME, _precision
from ....debezium.types.text import STREAMING_UNRESOLVED, _identity

__all__ = ["typed_columns", "vector_converter"]

#: One column's values: an Arrow array (converted by a kernel) or a list (converted per value).
Values = pa.Array | list[Any]
Columns = dict[str, Values]
#: A kernel conversion of a column of text; None: some value needs the per-value converter.
Vector = Callable[[pa.Array], pa.Array | None]

_INTEGERS = {id(_int16): pa.int16(), id(_int32): pa.int32(), id(_int64): pa.int64()}
# What sparkcdc's UTC sessions print for a timestamptz of years 1..9999 (to_zoned's fast path).
_ZONED_LAYOUT = r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{1,6})?\+00$"


def typed_columns(table: TableSchema, texts: Sequence[pa.Array], size: int) -> tuple[Columns | None, Columns]:
    """``(key columns, row columns)`` of ``size`` rows given as text columns (the table's columns
    in order): the values :meth:`TableSchema.columns_of` gives, field by field, as Arrow arrays
    where a kernel computes them (see the module doc) and as lists elsewhere."""
    done: dict[tuple[int, int, int], Values] = {}

    def values(plan: Any, key: bool) -> Values:
        if plan.position < 0:
            return [plan.null_value] * size
        # A row field reading a key field's column with its converter takes its values (as key_and_row).
        cache = (plan.position, id(plan.convert), id(plan.null_value))
        found = done.get(cache)
        if found is None:
            found = done[cache] = _column(plan, texts[plan.position], key)
        return found

    key_fields = table.key_fields
    keys = None if key_fields is None else {plan.name: values(plan, True) for plan in key_fields}
    return keys, {plan.name: values(plan, False) for plan in table.value_fields}


def _column(plan: Any, texts: pa.Array, key: bool) -> Values:
    vector = vector_converter(plan)
    if vector is not None:
        converted = vector(texts)
        if converted is not None and converted.null_count and plan.null_value is not None:
            converted = _filled(converted, plan.null_value)
        if converted is not None:
            return converted
    return _one_by_one(plan, texts, key)


def vector_converter(plan: Any) -> Vector | None:
    """The kernel conversion of a field plan's converter, when there is one (see the module doc)."""
    mapping = plan.mapping
    convert = plan.convert
    if mapping is None or mapping.convert is not convert or mapping.extra.get(STREAMING_UNRESOLVED):
        return None  # transformed (masked, truncated, hashed) or replaced: only the converter knows
    integer = _INTEGERS.get(id(convert))
    if integer is not None:
        return _cast(integer)
    if convert is json_float:
        return _cast(pa.float64())
    if convert is _bool:
        return _booleans
    if convert is _identity:
        return _strings
    column = plan.column_type
    if (column is not None and column.name == "timestamptz" and mapping.schema.name == ZONED_TIMESTAMP_NAME
            and mapping.snapshot_convert is None):
        return _zoned(_precision(column.modifier))
    return None


def _cast(arrow_type: pa.DataType) -> Vector:
    def cast(texts: pa.Array) -> pa.Array | None:
        try:
            return texts.cast(arrow_type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None  # a text the converter decides (it raises its own error)
    return cast


def _booleans(texts: pa.Array) -> pa.Array | None:
    true = pc.equal(texts, "t")
    known = pc.sum(true).as_py() or 0
    known += pc.sum(pc.equal(texts, "f")).as_py() or 0
    return true if known == len(texts) - texts.null_count else None


def _strings(texts: pa.Array) -> pa.Array:
    return texts


def _zoned(width: int) -> Vector:
    """``to_zoned``'s fast path for a whole column: ``YYYY-MM-DDTHH:MM:SS[.fraction]Z``, the
    fraction exactly ``width`` digits (width 0: as printed)."""
    def zoned(texts: pa.Array) -> pa.Array | None:
        if pc.all(pc.match_substring_regex(texts, _ZONED_LAYOUT)).as_py() is False:
            return None  # another layout (infinity, a year past 9999, BC …): the converter's
        if width <= 0:
            return pc.binary_join_element_wise(
                pc.replace_substring(pc.utf8_slice_codeunits(texts, 0, -3), " ", "T", max_replacements=1), "Z", "")
        clock = pc.replace_substring(pc.utf8_slice_codeunits(texts, 0, 19), " ", "T", max_replacements=1)
        digits = pc.utf8_slice_codeunits(pc.binary_join_element_wise(pc.utf8_slice_codeunits(texts, 20, -3), "000000", ""), 0, width)
        return pc.binary_join_element_wise(clock, ".", digits, "Z", "")
    return zoned


def _filled(values: pa.Array, null_value: Any) -> pa.Array | None:
    """NULLs as the field's null value (its default, or a NOT NULL column's fallback); None when
    Arrow cannot hold that value in the column's type."""
    try:
        return values.fill_null(pa.scalar(null_value, values.type))
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        return None


def _one_by_one(plan: Any, texts: pa.Array, key: bool) -> list[Any]:
    """The converter per value, as ``columns_of`` (and its row-by-row fallback) applies it."""
    convert, null_value = plan.convert, plan.null_value
    try:
        return [null_value if value is None else convert(value) for value in texts.to_pylist()]
    except UnrepresentableValueError:
        if key or not plan.optional:
            raise  # a key cannot be null; nor can a required field (Debezium fails the event)
    out: list[Any] = []
    for value in texts.to_pylist():
        if value is None:
            out.append(null_value)
            continue
        try:
            out.append(convert(value))
        except UnrepresentableValueError:
            out.append(None)  # Debezium logs "Failed to convert value" and emits null
    return out
