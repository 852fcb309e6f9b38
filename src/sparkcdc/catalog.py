"""What the connector knows about PostgreSQL tables and types beyond what pgoutput says — as data.

The connector's logic (table resolution, the event model's column types) asks a
:class:`CatalogLookup`; it never talks to a server itself. :class:`sparkcdc.postgres.catalog.Catalog`
answers from the system catalogs over a connection; :class:`StaticCatalog` answers from values it
was given (tests drive the streaming processor with it, without a server; a recorded catalog can
be replayed through it). This module is pure: no database driver, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["CatalogLookup", "ColumnInfo", "StaticCatalog", "TableInfo", "TypeInfo", "root_type"]


@dataclass(frozen=True, slots=True)
class TypeInfo:
    """A row of ``pg_type``, with enum labels (in ``enumsortorder``) when it is an enum."""

    oid: int
    name: str
    namespace: str
    typtype: str  # b base, c composite, d domain, e enum, p pseudo, r range, m multirange
    category: str  # typcategory: A array, B boolean, D date/time, N numeric, S string, U user, ...
    element_oid: int  # for arrays: the element type
    base_oid: int  # for domains: the type the domain is over
    base_typmod: int  # for domains: the modifier the domain gives its base type
    array_oid: int
    not_null: bool  # for domains: NOT NULL on the domain
    default_expression: str | None  # for domains: the domain's default
    enum_labels: tuple[str, ...] = ()

    @property
    def is_array(self) -> bool:
        return self.category == "A" and self.element_oid != 0

    @property
    def is_domain(self) -> bool:
        return self.typtype == "d"

    @property
    def is_enum(self) -> bool:
        return self.typtype == "e"


@dataclass(frozen=True, slots=True)
class ColumnInfo:
    name: str
    attnum: int
    type_oid: int
    type_modifier: int
    not_null: bool
    default_expression: str | None
    generated: bool
    identity: str  # '' | 'a' (ALWAYS) | 'd' (BY DEFAULT)
    declared_type: str = ""  # format_type(atttypid, atttypmod): ``numeric(10,2)``, ``character varying(20)``
    #: ``atthasmissing``: the column was added with a non-volatile default, which rows older than the
    #: ADD COLUMN take without having been written (PostgreSQL's "fast default"); no WAL carries it.
    has_missing: bool = False
    missing_array: str | None = None  # ``attmissingval`` as text: a one-element array literal of that value


@dataclass(frozen=True, slots=True)
class TableInfo:
    oid: int
    schema: str
    name: str
    kind: str  # relkind: r table, p partitioned table, ...
    replica_identity: str  # d / n / f / i
    columns: tuple[ColumnInfo, ...]
    primary_key: tuple[str, ...]
    replica_identity_index: tuple[str, ...] = ()
    unique_indexes: tuple[tuple[str, ...], ...] = ()  # unique, non-primary, without expressions; by index name
    _by_name: dict[str, ColumnInfo] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._by_name.update((c.name, c) for c in self.columns)

    def column(self, name: str) -> ColumnInfo | None:
        return self._by_name.get(name)

    @property
    def key_columns(self) -> tuple[str, ...]:
        """Debezium's key: the primary key, else the first unique index by name, else none."""
        if self.primary_key:
            return self.primary_key
        return self.unique_indexes[0] if self.unique_indexes else ()


class CatalogLookup(Protocol):
    """The catalog lookups the connector's logic makes (implementations cache as they like)."""

    def type_info(self, oid: int) -> TypeInfo:
        """The type; ``LookupError`` when no such type exists."""
        ...

    def table(self, oid: int) -> TableInfo:
        """The table of a relation OID (a Relation message's); ``LookupError`` when unknown."""
        ...

    def table_by_name(self, schema: str, name: str) -> TableInfo:
        """The table as it is now; ``LookupError`` when unknown."""
        ...

    def invalidate_table(self, oid: int) -> None:
        """Forget what is cached about the table: a Relation message says it changed."""
        ...

    def format_type(self, oid: int, modifier: int) -> str:
        """A type with a modifier as PostgreSQL writes it (``format_type``: ``character varying(20)``)."""
        ...


def root_type(catalog: CatalogLookup, oid: int) -> tuple[TypeInfo, int]:
    """Follow domains down to the base type; returns it and the innermost domain's modifier (-1 if none)."""
    info = catalog.type_info(oid)
    typmod = -1
    while info.is_domain:
        if typmod == -1:
            typmod = info.base_typmod
        info = catalog.type_info(info.base_oid)
    return info, typmod


class StaticCatalog:
    """A :class:`CatalogLookup` over given types and tables; changed only by :meth:`add_table`."""

    def __init__(self, types: Iterable[TypeInfo] = (), tables: Iterable[TableInfo] = ()) -> None:
        self._types = {t.oid: t for t in types}
        self._tables: dict[int, TableInfo] = {}
        for table in tables:
            self.add_table(table)

    def add_table(self, table: TableInfo) -> None:
        """Add or replace a table (by OID), as an ALTER TABLE would change it."""
        self._tables[table.oid] = table

    def type_info(self, oid: int) -> TypeInfo:
        try:
            return self._types[oid]
        except KeyError:
            raise LookupError(f"type OID {oid} does not exist") from None

    def table(self, oid: int) -> TableInfo:
        try:
            return self._tables[oid]
        except KeyError:
            raise LookupError(f"relation OID {oid} does not exist") from None

    def table_by_name(self, schema: str, name: str) -> TableInfo:
        for table in self._tables.values():
            if table.schema == schema and table.name == name:
                return table
        raise LookupError(f"table {schema}.{name} does not exist")

    def invalidate_table(self, oid: int) -> None:
        """Nothing is cached: the given tables are the truth."""

    def format_type(self, oid: int, modifier: int) -> str:
        """The type's name (the modifier left out: a static catalog has no ``format_type``)."""
        return self.type_info(oid).name
