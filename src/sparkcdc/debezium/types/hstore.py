"""Placeholder until the hstore family is implemented."""

from __future__ import annotations

from .base import ColumnType, MappingOptions, ValueMapping


def map_hstore_type(column: ColumnType, options: MappingOptions) -> ValueMapping | None:
    return None
