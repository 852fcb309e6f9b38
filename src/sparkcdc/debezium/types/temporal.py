"""Placeholder until the temporal family is implemented."""

from __future__ import annotations

from .base import ColumnType, MappingOptions, ValueMapping


def map_temporal_type(column: ColumnType, options: MappingOptions) -> ValueMapping | None:
    return None
