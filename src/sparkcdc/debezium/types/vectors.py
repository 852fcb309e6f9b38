"""pgvector's ``vector``, ``halfvec`` and ``sparsevec``, as Debezium 3.6.3 represents them.

Checked against the real connector (PostgreSQL 18, pgvector 0.8):

* ``vector`` -> ``array<double>`` named ``io.debezium.data.DoubleVector`` (v1); ``halfvec`` ->
  ``array<float>`` named ``io.debezium.data.FloatVector`` (v1); items required. Debezium parses each
  element of the text (``[1,2.5]``) with ``Double.parseDouble`` / ``Float.parseFloat``, so a
  ``halfvec`` element is the float32 nearest its text (``0.1`` is stored as ``0.099975586``).
* ``sparsevec`` -> struct ``io.debezium.data.SparseDoubleVector`` (v1, doc "Sparse double vector")
  ``{dimensions: int16, vector: map<int16, double>}``, every part required. The indices are the
  text's own (1-based, ``{1:1.5,3:2}/5``). The map is a ``java.util.HashMap<Short, Double>`` sized
  for the entry count; JsonConverter writes a map with non-string keys as ``[[key, value], ...]`` in
  that map's iteration order, which is replayed here (``hstore.java_sized_hashmap_order``).
  ``{}/5`` (no non-zero entry) gives an empty map.
* A ``sparsevec`` whose dimensions or an index do not fit a Java ``short`` (> 32767; pgvector
  allows 1e9) fails ``Short.parseShort``: Debezium logs a warning and emits null.
* pgvector refuses NaN and infinities, so no element is ever a non-finite number.
* An unchanged TOAST value (Debezium's placeholder string does not fit the array or struct) is null.

The types come with an extension, so their OIDs differ per database: the mapping goes by the type
name the catalog resolves (``pg_type.typname``), never by OID.
"""

from __future__ import annotations

from typing import Any

from ..connect import array, float32, float64, int16, map_, struct
from .base import ColumnType, ConversionError, MappingOptions, UnrepresentableValueError, ValueMapping
from .hstore import java_sized_hashmap_order
from .numeric import java_float

__all__ = [
    "DOUBLE_VECTOR_NAME",
    "FLOAT_VECTOR_NAME",
    "SPARSE_VECTOR_NAME",
    "VECTOR_TYPES",
    "map_vector_type",
    "parse_sparse_vector",
]

DOUBLE_VECTOR_NAME = "io.debezium.data.DoubleVector"
FLOAT_VECTOR_NAME = "io.debezium.data.FloatVector"
SPARSE_VECTOR_NAME = "io.debezium.data.SparseDoubleVector"
#: pgvector's type names (``pg_type.typname``), the same in every schema the extension is installed in.
VECTOR_TYPES = frozenset({"vector", "halfvec", "sparsevec"})

_SHORT_MAX = 32767

_SPARSE_SCHEMA = struct(
    [("dimensions", int16()), ("vector", map_(int16(), float64()))],
    name=SPARSE_VECTOR_NAME,
    version=1,
    doc="Sparse double vector",
)


def _elements(text: str, type_name: str) -> list[str]:
    if len(text) < 3 or text[0] != "[" or text[-1] != "]":
        raise ConversionError(f"{text[:80]!r} is not {type_name} text ([x,y,...])")
    return text[1:-1].split(",")


def _double_vector(text: str) -> list[float]:
    try:
        return [float(element) for element in _elements(text, "vector")]
    except ValueError:
        raise ConversionError(f"{text[:80]!r} is not vector text (an element is not a number)") from None


def _float_vector(text: str) -> list[float | str]:
    return [java_float(element) for element in _elements(text, "halfvec")]


def parse_sparse_vector(text: str) -> tuple[int, list[tuple[int, str]]]:
    """``{i:v,...}/dimensions`` (sparsevec_out) -> (dimensions, [(index, value text), ...])."""
    body, slash, dimensions = text.rpartition("/")
    if not slash or len(body) < 2 or body[0] != "{" or body[-1] != "}" or not dimensions.isdigit():
        raise ConversionError(f"{text[:80]!r} is not sparsevec text ({{i:v,...}}/dimensions)")
    entries: list[tuple[int, str]] = []
    inner = body[1:-1]
    if inner:
        for entry in inner.split(","):
            index, colon, value = entry.partition(":")
            if not colon or not index.isdigit():
                raise ConversionError(f"{text[:80]!r} is not sparsevec text (entry {entry[:40]!r})")
            entries.append((int(index), value))
    return int(dimensions), entries


def _sparse_vector(text: str) -> dict[str, Any]:
    dimensions, entries = parse_sparse_vector(text)
    if dimensions > _SHORT_MAX or any(index > _SHORT_MAX for index, _ in entries):
        raise UnrepresentableValueError(
            f"sparsevec {text[:80]!r}: dimensions or an index past 32767 do not fit Debezium's int16 (it emits null)"
        )
    try:
        pairs = [[index, float(value)] for index, value in entries]
    except ValueError:
        raise ConversionError(f"{text[:80]!r} is not sparsevec text (a value is not a number)") from None
    if len(pairs) > 1:
        order = java_sized_hashmap_order([index for index, _ in entries], len(entries))
        pairs = [pairs[i] for i in order]
    return {"dimensions": dimensions, "vector": pairs}


_NULL_TOAST = {"toast_null": True}


def map_vector_type(column: ColumnType, options: MappingOptions) -> ValueMapping | None:
    name = column.name
    if name not in VECTOR_TYPES or column.typtype != "b":
        return None
    if name == "vector":
        schema = array(float64(), name=DOUBLE_VECTOR_NAME, version=1)
        return ValueMapping(schema, _double_vector, zero=[], extra=dict(_NULL_TOAST))
    if name == "halfvec":
        schema = array(float32(), name=FLOAT_VECTOR_NAME, version=1)
        return ValueMapping(schema, _float_vector, zero=[], extra=dict(_NULL_TOAST))
    return ValueMapping(_SPARSE_SCHEMA, _sparse_vector, zero=None, extra=dict(_NULL_TOAST))
