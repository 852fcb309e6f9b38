"""Turning what the server says about a table into the table's event shape.

For streaming, a Relation message is authoritative for the columns and the order of values in the
tuples that follow it; the catalog adds what pgoutput does not carry (NOT NULL, defaults, primary
key, enum labels, domain base types). For the snapshot, the catalog alone describes the table.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...catalog import CatalogLookup, ColumnInfo, TableInfo, root_type
from ...debezium.table import ColumnDescription, TableDescription, TableSchema, TableSchemaFactory
from ...debezium.types import ColumnType
from ...debezium.types.arrays import parse_array
from ...pgoutput.messages import Relation
from .errors import UnknownRelationError
from .filters import TableFilter

__all__ = ["TableResolver", "column_type"]


def column_type(catalog: CatalogLookup, type_oid: int, modifier: int) -> ColumnType:
    """The column type with domains resolved to their base (the innermost domain's modifier applies)."""
    declared = catalog.type_info(type_oid)
    root, domain_modifier = root_type(catalog, type_oid)
    effective = modifier if modifier != -1 else domain_modifier
    element = column_type(catalog, root.element_oid, effective) if root.is_array else None
    return ColumnType(
        oid=root.oid,
        name=root.name,
        namespace=root.namespace,
        modifier=effective,
        declared_name=declared.name,
        typtype=root.typtype,
        category=root.category,
        enum_labels=root.enum_labels,
        element=element,
    )


class TableResolver:
    """Table schemas by relation id (streaming) or by name (snapshot), built once per table version."""

    def __init__(self, catalog: CatalogLookup, factory: TableSchemaFactory, table_filter: TableFilter) -> None:
        self.catalog = catalog
        self.factory = factory
        self.table_filter = table_filter
        self._by_relation: dict[int, TableSchema | None] = {}
        #: Relation OID -> schema (``None``: not captured), for the hot path; read-only outside.
        self.captured_by_relation = self._by_relation
        self._relations: dict[int, Relation] = {}

    def on_relation(self, relation: Relation) -> TableSchema | None:
        """A Relation message arrived: (re)build the table's schema if its description changed."""
        previous = self._relations.get(relation.relation_id)
        if previous is not None and previous == relation and relation.relation_id in self._by_relation:
            return self._by_relation[relation.relation_id]
        self._relations[relation.relation_id] = relation
        if not self.table_filter(relation.namespace, relation.name):
            self._by_relation[relation.relation_id] = None
            return None
        self.catalog.invalidate_table(relation.relation_id)
        info = self.catalog.table(relation.relation_id)
        columns = [(c.name, c.type_oid, c.type_modifier) for c in relation.columns]
        schema = self.factory.build(self._describe(relation.namespace, relation.name, columns, info))
        self._by_relation[relation.relation_id] = schema
        return schema

    def for_relation_id(self, relation_id: int) -> TableSchema | None:
        """The schema for data messages; ``None`` when the table is not captured."""
        try:
            return self._by_relation[relation_id]
        except KeyError:
            raise UnknownRelationError(f"data for relation OID {relation_id} arrived before its Relation message") from None

    def for_table(self, schema: str, table: str) -> TableSchema:
        """Snapshot: the schema of a table as the catalog describes it now. Generated columns are
        in it, as in Debezium's (its snapshot reads the table's JDBC metadata and ``SELECT *``),
        though before PostgreSQL 18 pgoutput never sends them: streamed changes lack them."""
        info = self.catalog.table_by_name(schema, table)
        columns = [(c.name, c.type_oid, c.type_modifier) for c in info.columns]
        return self.factory.build(self._describe(schema, table, columns, info), snapshot=True)

    def _describe(self, schema: str, table: str, columns: Sequence[tuple[str, int, int]], info: TableInfo) -> TableDescription:
        described = []
        for position, ((name, type_oid, modifier), catalog_column) in enumerate(zip(columns, catalog_columns(columns, info), strict=True)):
            declared = self.catalog.type_info(type_oid)
            not_null = bool(catalog_column and catalog_column.not_null) or (declared.is_domain and declared.not_null)
            default = catalog_column.default_expression if catalog_column else None
            if default is None and declared.is_domain:
                default = declared.default_expression
            attnum, declared_type, has_missing, missing = _identity_facts(catalog_column, type_oid, modifier)
            described.append(ColumnDescription(
                name, column_type(self.catalog, type_oid, modifier), not_null, default, position, attnum,
                declared_type or self.catalog.format_type(type_oid, modifier), has_missing, missing,
                catalog_column.identity if catalog_column else "",
            ))
        identity = {"d": info.primary_key, "i": info.replica_identity_index, "n": ()}.get(info.replica_identity)
        return TableDescription(schema, table, tuple(described), info.key_columns, info.oid, info.replica_identity, identity)


def catalog_columns(columns: Sequence[tuple[str, int, int]], info: TableInfo) -> list[ColumnInfo | None]:
    """The catalog's column for each of ``columns`` (a Relation message's, in attribute order), or
    None where it cannot be told which column it is.

    A Relation message names columns but not their ``attnum``, and the catalog read now may already
    reflect DDL that came after the message (the stream runs behind the server). Two passes:

    1. *anchors*: a column is matched by name where its type is the message's and the matched
       columns' ``attnum`` increase in the message's order (a Relation message lists live columns
       in attribute order). A name that is gone (renamed or dropped since), out of place (dropped
       and added again since, so now at the end) or of another type is not an anchor.
    2. *gaps*: between two anchors, every live catalog column was there when the message was sent
       (its ``attnum`` is below the right anchor's, which was; numbers are never reused), so it is
       one of the message's columns there. Where the message has exactly as many columns between
       the anchors as the catalog has live ones, they are the same columns in the same order:
       renamed, retyped, or both. Otherwise (columns dropped since lie between them too), and after
       the last anchor (columns added since may be there), a column stays unmatched.

    An unmatched column counts as one whose identity is unknown rather than be taken for another
    (its fill for older rows is then unknown too: see ``view_of``)."""
    found = [column if column is not None and column.type_oid == type_oid else None
             for column, (_, type_oid, _) in zip((info.column(name) for name, _, _ in columns), columns, strict=True)]
    matched: list[ColumnInfo | None] = []
    last = 0
    for index, column in enumerate(found):
        following = next((c.attnum for c in found[index + 1:] if c is not None), None)
        if column is None or column.attnum <= last or (following is not None and column.attnum >= following):
            matched.append(None)
            continue
        matched.append(column)
        last = column.attnum
    live = sorted((c for c in info.columns if not c.generated), key=lambda c: c.attnum)  # what a Relation message lists
    anchors = [(-1, 0)] + [(i, c.attnum) for i, c in enumerate(matched) if c is not None]
    for (left, low), (right, high) in zip(anchors, anchors[1:], strict=False):
        between = [c for c in live if low < c.attnum < high]
        if right - left - 1 == len(between):
            matched[left + 1:right] = between
    return matched


def _identity_facts(column: ColumnInfo | None, type_oid: int, modifier: int) -> tuple[int, str, bool, str | None]:
    """A described column's ``attnum``, declared type and fast-default value (ColumnDescription's
    fields after ``position``), from its catalog column when that is the same column of the same
    type (else unknown: a type changed since means the table was rewritten, and the fast default
    may have been written into the rows)."""
    if column is None:
        return 0, "", False, None
    if column.type_oid != type_oid or column.type_modifier != modifier:
        return column.attnum, "", False, None
    if not column.has_missing or column.missing_array is None:
        return column.attnum, column.declared_type, False, None
    elements = parse_array(column.missing_array)
    if len(elements) != 1 or not (elements[0] is None or isinstance(elements[0], str)):
        return column.attnum, column.declared_type, False, None  # not a value this reader understands: unknown
    value = elements[0]
    return column.attnum, column.declared_type, True, value if isinstance(value, str) else None
