"""The errors of typed per-table views.

Kept in a module of their own (and out of the compiled modules) so every part of the view —
description, type map, change reading — raises the same classes, importable from
``sparkcdc.spark.views``.
"""

from __future__ import annotations

from ...errors import ConfigurationError

__all__ = ["TableNotCapturedError", "TableViewError", "UnknownTableError", "UnsupportedColumnError"]


class TableViewError(ConfigurationError):
    """A typed view cannot be built or applied."""


class UnknownTableError(TableViewError, LookupError):
    """The table does not exist in the connector's database."""


class TableNotCapturedError(TableViewError, LookupError):
    """The table exists but the connector's include/exclude lists leave it out."""


class UnsupportedColumnError(TableViewError, TypeError):
    """A column's Connect schema has no faithful Spark type."""
