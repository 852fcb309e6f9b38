"""pgvector columns of a PostgreSQL mirror: typed values back into the extension's text form.

A mirror column keeps its source's pgvector type (``vector(3)``, ``halfvec``, ``sparsevec(5)``), but
the typed changes hold what Debezium's representation became in Spark: ``list<double>`` (vector),
``list<float>`` (halfvec), ``struct<dimensions, vector: map<index, value>>`` (sparsevec). COPY reads
neither a list nor a struct as a pgvector value, so each such column is rendered, column at a time
in Arrow, as the type's input text: ``[1,2.5]`` and ``{1:1.5,3:-2}/5``. Floats print in their
shortest round-trip form, so the mirror holds the source's very values. Arrays of vectors are
refused by name (:func:`vector_kind` tells them apart).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["VECTOR_EXTENSION_TYPES", "vector_kind", "vector_text"]

#: pgvector's types (``pg_type.typname``).
VECTOR_EXTENSION_TYPES = frozenset({"vector", "halfvec", "sparsevec"})


def vector_kind(pg_type: str | None) -> str | None:
    """The pgvector type a ``format_type`` text names (``vector(3)``, ``public.halfvec``,
    ``sparsevec(5)[]`` -> ``sparsevec[]``), or None for any other type."""
    if not pg_type:
        return None
    text = pg_type.strip()
    suffix = ""
    while text.endswith("[]"):
        text, suffix = text[:-2].rstrip(), suffix + "[]"
    base = text.split("(", 1)[0].rsplit(".", 1)[-1].strip().strip('"')
    return base + suffix if base in VECTOR_EXTENSION_TYPES else None


def _texts(values: pa.Array) -> pa.Array:
    return pc.cast(values, pa.string())


def _spans(column: pa.ListArray | pa.MapArray) -> tuple[pa.Array, int, int]:
    """The rows' offsets rebased to 0, and where their child values start and end (a sliced array's
    ``values``/``keys`` are the whole buffer's; a null row may still span values: masked later)."""
    offsets = column.offsets.to_numpy(zero_copy_only=False)
    first, last = int(offsets[0]), int(offsets[-1])
    return pa.array(offsets - first, pa.int32()), first, last


def _joined(offsets: pa.Array, items: pa.Array, opening: str, closing: pa.Array | str) -> pa.Array:
    """Per row: ``opening`` + its ``items`` (texts) joined by commas + ``closing``."""
    joined = pc.binary_join(pa.ListArray.from_arrays(offsets, items), ",")
    return pc.binary_join_element_wise(opening, joined, closing, "")


def _whole(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def _dense(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``list<float|double>`` -> ``[x,y,...]``."""
    column = _whole(column)
    offsets, first, last = _spans(column)
    text = _joined(offsets, _texts(column.values.slice(first, last - first)), "[", "]")
    return pc.if_else(column.is_valid(), text, pa.scalar(None, pa.string()))


def _sparse(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``struct<dimensions, vector: map<index, value>>`` -> ``{i:v,...}/dimensions`` (pgvector sorts the indices)."""
    column = _whole(column)
    dimensions, vector = column.field("dimensions"), column.field("vector")
    offsets, first, last = _spans(vector)
    entries = pc.binary_join_element_wise(_texts(vector.keys.slice(first, last - first)),
                                          _texts(vector.items.slice(first, last - first)), ":")
    closing = pc.binary_join_element_wise("}/", _texts(dimensions), "")
    text = _joined(offsets, entries, "{", closing)
    valid = pc.and_(column.is_valid(), pc.and_(dimensions.is_valid(), vector.is_valid()))
    return pc.if_else(valid, text, pa.scalar(None, pa.string()))


def vector_text(column: pa.Array | pa.ChunkedArray, kind: str) -> pa.Array:
    """A typed pgvector column (``kind`` from :func:`vector_kind`, not an array kind) as the type's input text."""
    if kind == "sparsevec":
        return _sparse(column)
    return _dense(column)
