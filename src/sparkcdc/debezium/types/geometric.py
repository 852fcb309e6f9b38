"""Placeholder until the geometric family is implemented."""

from __future__ import annotations

from .base import ColumnType, MappingOptions, ValueMapping


def map_geometric_type(column: ColumnType, options: MappingOptions) -> ValueMapping | None:
    return None
