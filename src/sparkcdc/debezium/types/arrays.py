"""Placeholder until arrays are implemented."""

from __future__ import annotations

from collections.abc import Callable

from .base import ColumnType, MappingOptions, ValueMapping


def map_array_type(
    column: ColumnType, options: MappingOptions, map_element: Callable[[ColumnType], ValueMapping | None]
) -> ValueMapping | None:
    return None
