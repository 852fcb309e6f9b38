"""What the event model needs to know about tables and types that pgoutput does not say.

A Relation message names columns, type OIDs, modifiers and key flags; Debezium's events also carry
NOT NULL (optionality), column defaults, enum labels, domain base types and primary keys. We read
those from the system catalogs, lazily, per relation and per type OID, and cache them: a database
with thousands of tables costs nothing until a table shows up (unlike a full schema scan at start).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import psycopg

from ..catalog import ColumnInfo, TableInfo, TypeInfo, root_type
from .errors import ObjectNotFoundError

__all__ = ["Catalog", "ColumnInfo", "TableInfo", "TypeInfo", "user_tables"]


_TYPE_QUERY = """
SELECT t.oid, t.typname::text, n.nspname::text, t.typtype::text, t.typcategory::text, t.typelem, t.typbasetype,
       t.typtypmod, t.typarray, t.typnotnull, pg_get_expr(t.typdefaultbin, 0),
       CASE WHEN t.typtype = 'e' THEN ARRAY(SELECT e.enumlabel::text FROM pg_enum e WHERE e.enumtypid = t.oid
                                             ORDER BY e.enumsortorder) END
  FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
 WHERE t.oid = ANY(%s)
"""

_TABLE_QUERY = """
SELECT c.oid, n.nspname::text, c.relname::text, c.relkind::text, c.relreplident::text
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
"""

_COLUMNS_QUERY = """
SELECT a.attname::text, a.attnum, a.atttypid, a.atttypmod, a.attnotnull, pg_get_expr(d.adbin, d.adrelid),
       a.attgenerated <> '', a.attidentity::text, format_type(a.atttypid, a.atttypmod), a.atthasmissing,
       CASE WHEN a.atthasmissing THEN a.attmissingval::text END
  FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
 WHERE a.attrelid = %s AND a.attnum > 0 AND NOT a.attisdropped
 ORDER BY a.attnum
"""

# Index columns in index order (expression columns, attnum 0, cannot be key columns). Ordered by
# index name, as JDBC's getIndexInfo orders them: Debezium keys a table without a primary key by
# the first unique index in that order.
_INDEXES_QUERY = """
SELECT ic.relname::text, i.indisprimary, i.indisreplident, i.indisunique,
       ARRAY(SELECT a.attname::text FROM unnest(i.indkey) WITH ORDINALITY k(attnum, pos)
               JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
              ORDER BY k.pos),
       i.indexprs IS NULL
  FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
 WHERE i.indrelid = %s AND i.indisvalid
 ORDER BY ic.relname
"""


class Catalog:
    """Cached catalog lookups over one (autocommit) connection: the server's :class:`~sparkcdc.catalog.CatalogLookup`."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn
        self._types: dict[int, TypeInfo] = {}
        self._tables: dict[int, TableInfo] = {}
        self._formatted: dict[tuple[int, int], str] = {}

    # -- types -----------------------------------------------------------------------------------
    def type_info(self, oid: int) -> TypeInfo:
        info = self._types.get(oid)
        if info is None:
            self.load_types([oid])
            info = self._types.get(oid)
            if info is None:
                raise ObjectNotFoundError(f"type OID {oid} does not exist")
        return info

    def load_types(self, oids: Iterable[int]) -> None:
        """Load types and, transitively, their element and base types."""
        pending = {oid for oid in oids if oid and oid not in self._types}
        while pending:
            rows = self.conn.execute(_TYPE_QUERY, (list(pending),)).fetchall()
            pending = set()
            for row in rows:
                info = TypeInfo(
                    oid=row[0], name=row[1], namespace=row[2], typtype=row[3], category=row[4], element_oid=row[5],
                    base_oid=row[6], base_typmod=row[7], array_oid=row[8], not_null=row[9], default_expression=row[10],
                    enum_labels=tuple(row[11] or ()),
                )
                self._types[info.oid] = info
                for related in (info.element_oid, info.base_oid):
                    if related and related not in self._types:
                        pending.add(related)

    def format_type(self, oid: int, modifier: int) -> str:
        """``format_type(oid, modifier)``, asked once per pair."""
        key = (oid, modifier)
        text = self._formatted.get(key)
        if text is None:
            row = self.conn.execute("SELECT format_type(%s, %s)", (oid, modifier)).fetchone()
            text = self._formatted[key] = str(row[0]) if row else ""
        return text

    def root_type(self, oid: int) -> tuple[TypeInfo, int]:
        """Follow domains down to the base type; returns it and the innermost domain's modifier (-1 if none)."""
        return root_type(self, oid)

    def invalidate_type(self, oid: int) -> None:
        self._types.pop(oid, None)

    # -- tables ----------------------------------------------------------------------------------
    def table(self, oid: int) -> TableInfo:
        info = self._tables.get(oid)
        if info is None:
            info = self._load_table(f"{_TABLE_QUERY} WHERE c.oid = %s", (oid,), f"relation OID {oid}")
        return info

    def table_by_name(self, schema: str, name: str) -> TableInfo:
        return self._load_table(f"{_TABLE_QUERY} WHERE n.nspname = %s AND c.relname = %s", (schema, name), f"table {schema}.{name}")

    def invalidate_table(self, oid: int) -> None:
        self._tables.pop(oid, None)

    def declared_types(self, oid: int) -> dict[str, str]:
        """Column name -> its type as declared (``format_type``: ``numeric(10,2)``, ``character varying(20)``),
        for every live column of the relation, generated ones included; read each time, not cached."""
        rows = self.conn.execute(
            "SELECT attname::text, format_type(atttypid, atttypmod) FROM pg_attribute"
            " WHERE attrelid = %s AND attnum > 0 AND NOT attisdropped",
            (oid,),
        ).fetchall()
        return dict(rows)

    def list_tables(self, kinds: Sequence[str] = ("r", "p")) -> list[tuple[str, str]]:
        """(schema, table) of every user table, sorted, excluding system schemas."""
        rows = self.conn.execute(
            """SELECT n.nspname::text, c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE c.relkind = ANY(%s) AND n.nspname NOT IN ('pg_catalog', 'information_schema')
                  AND n.nspname NOT LIKE 'pg\\_toast%%' AND n.nspname NOT LIKE 'pg\\_temp\\_%%'
                ORDER BY 1, 2""",
            (list(kinds),),
        ).fetchall()
        return [(row[0], row[1]) for row in rows]

    def _load_table(self, query: str, params: tuple, what: str) -> TableInfo:
        row = self.conn.execute(query, params).fetchone()
        if row is None:
            raise ObjectNotFoundError(f"{what} does not exist")
        oid, schema, name, kind, replica_identity = row
        columns = tuple(
            ColumnInfo(name=r[0], attnum=r[1], type_oid=r[2], type_modifier=r[3], not_null=r[4], default_expression=r[5],
                       generated=r[6], identity=r[7], declared_type=r[8], has_missing=r[9], missing_array=r[10])
            for r in self.conn.execute(_COLUMNS_QUERY, (oid,)).fetchall()
        )
        primary_key: tuple[str, ...] = ()
        identity_index: tuple[str, ...] = ()
        unique: list[tuple[str, ...]] = []
        for _, is_primary, is_identity, is_unique, names, plain in self.conn.execute(_INDEXES_QUERY, (oid,)).fetchall():
            names = tuple(names)
            if is_primary:
                primary_key = names
            if is_identity:
                identity_index = names
            if is_unique and plain and not is_primary:
                unique.append(names)
        info = TableInfo(oid, schema, name, kind, replica_identity, columns, primary_key, identity_index, tuple(unique))
        self.load_types(c.type_oid for c in columns)
        self._tables[oid] = info
        return info


def user_tables(conn: psycopg.Connection) -> list[tuple[str, str]]:
    """(schema, table) of every table and partitioned table (partitions too) outside the system
    schemas, in name order: what the table filters choose the captured tables from."""
    rows = conn.execute(
        """SELECT n.nspname::text, c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE c.relkind IN ('r', 'p')
              AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%%'
            ORDER BY 1, 2"""
    ).fetchall()
    return [(row[0], row[1]) for row in rows]
