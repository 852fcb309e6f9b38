"""Which tables the connector captures: schema/table include and exclude lists, as Debezium reads them.

Patterns are anchored, case-insensitive regular expressions; schema lists match the schema name,
table lists match ``schema.table``. System schemas are never captured (``table.ignore.builtin``).
"""

from __future__ import annotations

from ..debezium.config import ConnectorConfig

__all__ = ["TableFilter"]

_BUILTIN_SCHEMAS = frozenset({"pg_catalog", "information_schema"})


class TableFilter:
    def __init__(self, config: ConnectorConfig) -> None:
        self._schema_include = config.get_patterns("schema.include.list")
        self._schema_exclude = config.get_patterns("schema.exclude.list")
        self._table_include = config.get_patterns("table.include.list")
        self._table_exclude = config.get_patterns("table.exclude.list")
        self._ignore_builtin = config.get_bool("table.ignore.builtin")

    def __call__(self, schema: str, table: str) -> bool:
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
