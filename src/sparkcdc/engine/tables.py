"""Turning what the server says about a table into the table's event shape.

For streaming, a Relation message is authoritative for the columns and the order of values in the
tuples that follow it; the catalog adds what pgoutput does not carry (NOT NULL, defaults, primary
key, enum labels, domain base types). For the snapshot, the catalog alone describes the table.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..catalog import CatalogLookup, ColumnInfo, TableInfo, root_type
from ..debezium.table import ColumnDescription, TableDescription, TableSchema, TableSchemaFactory
from ..debezium.types import ColumnType
from ..pgoutput.messages import Relation
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
        """Snapshot: the schema of a table as the catalog describes it now."""
        info = self.catalog.table_by_name(schema, table)
        columns = [(c.name, c.type_oid, c.type_modifier) for c in info.columns if not c.generated]
        return self.factory.build(self._describe(schema, table, columns, info), snapshot=True)

    def _describe(self, schema: str, table: str, columns: Sequence[tuple[str, int, int]], info: TableInfo) -> TableDescription:
        described = []
        for position, (name, type_oid, modifier) in enumerate(columns):
            catalog_column: ColumnInfo | None = info.column(name)
            declared = self.catalog.type_info(type_oid)
            not_null = bool(catalog_column and catalog_column.not_null) or (declared.is_domain and declared.not_null)
            default = catalog_column.default_expression if catalog_column else None
            if default is None and declared.is_domain:
                default = declared.default_expression
            described.append(
                ColumnDescription(name, column_type(self.catalog, type_oid, modifier), not_null, default, position)
            )
        return TableDescription(schema, table, tuple(described), info.key_columns)
