"""``describe_table``: the view of a table, read from the catalog of the connector's database.

The only part of the views that talks to PostgreSQL: it resolves the table as the connector's own
streaming path does (the catalog, the table filters, the resolver) and builds its event schema;
the SQL itself is in :mod:`sparkcdc.postgres.catalog`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .errors import TableNotCapturedError, UnknownTableError
from .model import TableView, view_of, view_shape

__all__ = ["DescribedViews", "describe_table"]


def _split_table(table: str) -> tuple[str, str]:
    schema, dot, name = table.partition(".")
    return (schema, name) if dot else ("public", schema)


def describe_table(properties: Mapping[str, str], table: str) -> TableView:
    """The view of ``table`` ("schema.table", or "table" in schema public) for these connector properties.

    Reads the catalog and builds the connector's own streaming event schema for the table.
    Raises :class:`UnknownTableError` or :class:`TableNotCapturedError` naming the table, and
    :class:`UnsupportedColumnError` naming the column whose schema has no Spark type.
    """
    from ...debezium.table import TableSchemaFactory
    from ...engine.connection import sql_connection
    from ...engine.filters import TableFilter
    from ...engine.tables import TableResolver
    from ...postgres.catalog import Catalog
    from ..options import config_from_options

    config = config_from_options(properties)  # Debezium names, or data source options (sparkcdc.config)
    schema_name, table_name = _split_table(table)
    qualified = f"{schema_name}.{table_name}"
    table_filter = TableFilter(config)
    with sql_connection(config, application_name="sparkcdc-views") as conn:
        catalog = Catalog(conn)
        try:
            info = catalog.table_by_name(schema_name, table_name)
        except LookupError:
            raise UnknownTableError(
                f"table {qualified} does not exist in database {config.get('database.dbname')!r}"
            ) from None
        if info.kind not in ("r", "p"):
            raise UnknownTableError(f"{qualified} is not a table (pg_class.relkind {info.kind!r})")
        if not table_filter(schema_name, table_name):
            raise TableNotCapturedError(
                f"table {qualified} is not captured by this connector (see table.include.list / table.exclude.list, "
                "schema.include.list / schema.exclude.list)"
            )
        declared = catalog.declared_types(info.oid)
        factory = TableSchemaFactory(config)
        resolver = TableResolver(catalog, factory, table_filter)
        # What a Relation message lists: the table's columns less generated ones, in attnum order.
        columns = [(c.name, c.type_oid, c.type_modifier) for c in info.columns if not c.generated]
        description = resolver._describe(schema_name, table_name, columns, info)  # noqa: SLF001 - the resolver's own path
        table_schema = factory.build(description)
    identity = {"d": info.primary_key, "i": info.replica_identity_index, "n": ()}.get(info.replica_identity)
    return view_of(
        table_schema, config, declared_types=declared, replica_identity=info.replica_identity, identity_columns=identity
    )


class DescribedViews:
    """Views described once and reused: a table is described again only when changes of another
    shape (``view_shape``; the ``changes`` layout's blocks carry theirs) show that a Relation
    message changed it. Each description is a few catalog queries: per table and micro-batch they
    added up."""

    def __init__(self, properties: Mapping[str, str]) -> None:
        self.properties = dict(properties)
        self._views: dict[str, TableView] = {}
        self.described = 0  # catalog descriptions made (what the tests count)

    def get(self, table: str, shapes: Iterable[str] = ()) -> TableView:
        """The view of ``table``, reused when ``shapes`` (of the batch's changes of it) are all the
        cached view's; described again otherwise, and whenever the shapes are not known (none given,
        as on the ``columns`` layout: a column added to the table must not go unnoticed)."""
        shapes = set(shapes)
        view = self._views.get(table)
        if view is None or not shapes or shapes != {view_shape(view)}:
            view = self._views[table] = describe_table(self.properties, table)
            self.described += 1
        return view

    def forget(self) -> None:
        self._views.clear()
