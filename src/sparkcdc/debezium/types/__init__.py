"""PostgreSQL type -> Debezium Connect representation, for every type and handling mode.

``map_type(column_type, options)`` returns the :class:`ValueMapping` of a column, or ``None`` when
the type is unknown and ``include.unknown.datatypes`` is off (Debezium then leaves the column out).
Domains arrive already resolved to their base type (see :class:`ColumnType`).
"""

from __future__ import annotations

from .arrays import map_array_type
from .base import (
    SESSION_SETTINGS,
    ColumnType,
    ConversionError,
    MappingOptions,
    UnsupportedTypeError,
    ValueMapping,
)
from .geometric import map_geometric_type
from .hstore import map_hstore_type
from .numeric import map_numeric_type
from .temporal import map_temporal_type
from .text import map_text_type, unknown_mapping
from .vectors import map_vector_type

__all__ = [
    "SESSION_SETTINGS",
    "ColumnType",
    "ConversionError",
    "MappingOptions",
    "UnsupportedTypeError",
    "ValueMapping",
    "map_type",
]

_MAPPERS = (map_numeric_type, map_text_type, map_temporal_type, map_geometric_type, map_hstore_type, map_vector_type)


def map_type(column: ColumnType, options: MappingOptions) -> ValueMapping | None:
    if column.element is not None:
        return map_array_type(column, options, lambda element: map_type(element, options))
    for mapper in _MAPPERS:
        mapping = mapper(column, options)
        if mapping is not None:
            return mapping
    if options.include_unknown_datatypes:
        return unknown_mapping(options)
    return None
