"""Which tables the connector captures: schema/table include and exclude lists, as Debezium reads them.

Patterns are anchored, case-insensitive regular expressions; schema lists match the schema name,
table lists match ``schema.table``. System schemas are never captured (``table.ignore.builtin``).
"""

from __future__ import annotations

from ...debezium.config import ConnectorConfig
from .signals import signal_table_of

__all__ = ["TableFilter"]

_BUILTIN_SCHEMAS = frozenset({"pg_catalog", "information_schema"})


class TableFilter:
    """``streaming``: the signal table (``signal.data.collection``) is captured too, whatever the
    lists say: Debezium streams its rows (signals and watermarks) as change events, but does not
    snapshot it unless it is listed."""

    def __init__(self, config: ConnectorConfig, *, streaming: bool = False) -> None:
        self._schema_include = config.settings.schema_include_list
        self._schema_exclude = config.settings.schema_exclude_list
        self._table_include = config.settings.table_include_list
        self._table_exclude = config.settings.table_exclude_list
        self._ignore_builtin = config.settings.table_ignore_builtin
        self._signal_table = signal_table_of(config) if streaming else None

    def __call__(self, schema: str, table: str) -> bool:
        if self._signal_table is not None and (schema, table) == self._signal_table:
            return True
        if self._ignore_builtin and (schema in _BUILTIN_SCHEMAS or schema.startswith("pg_toast") or schema.startswith("pg_temp")):
            return False
        if self._schema_include and not any(p.fullmatch(schema) for p in self._schema_include):
            return False
        if any(p.fullmatch(schema) for p in self._schema_exclude):
            return False
        qualified = f"{schema}.{table}"
        if self._table_include:
            return any(p.fullmatch(qualified) for p in self._table_include)
        return not any(p.fullmatch(qualified) for p in self._table_exclude)
