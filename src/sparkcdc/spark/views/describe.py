"""``describe_table``: the view of a table, read from the catalog of the connector's database.

The only part of the views that talks to PostgreSQL: it resolves the table as the connector's own
streaming path does (the catalog, the table filters, the resolver) and builds its event schema;
the SQL itself is in :mod:`sparkcdc.postgres.catalog`.
"""

from __future__ import annotations

from collections.abc import Mapping

from .errors import TableNotCapturedError, UnknownTableError
from .model import TableView, view_of

__all__ = ["describe_table"]


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
    from ...engine.core.filters import TableFilter
    from ...engine.core.tables import TableResolver
    from ...postgres.catalog import Catalog
    from ..source.options import config_from_options

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
                f"table {qualified} does not exist in database {config.settings.database_dbname!r}"
            ) from None
        if info.kind not in ("r", "p"):
            raise UnknownTableError(f"{qualified} is not a table (pg_class.relkind {info.kind!r})")
        if not table_filter(schema_name, table_name):
            raise TableNotCapturedError(
                f"table {qualified} is not captured by this connector (see table.include.list / table.exclude.list, "
                "schema.include.list / schema.exclude.list)"
            )
        factory = TableSchemaFactory(config)
        resolver = TableResolver(catalog, factory, table_filter)
        # What a Relation message lists: the table's columns less generated ones, in attnum order; the
        # description carries their declared types and the table's replica identity.
        columns = [(c.name, c.type_oid, c.type_modifier) for c in info.columns if not c.generated]
        description = resolver._describe(schema_name, table_name, columns, info)  # noqa: SLF001 - the resolver's own path
    return view_of(factory.build(description), config)
