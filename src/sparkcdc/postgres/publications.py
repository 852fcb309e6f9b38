"""Publications: which tables pgoutput sends, and which operations."""

from __future__ import annotations

from collections.abc import Sequence

import psycopg

from .replication import quote_ident, quote_literal

__all__ = [
    "create_publication",
    "drop_publication",
    "ensure_publication",
    "publication_exists",
    "publication_members",
    "publication_tables",
    "qualified_name",
    "set_publication_tables",
    "replica_identity",
    "set_replica_identity",
]


def qualified_name(schema: str, table: str) -> str:
    return f"{quote_ident(schema)}.{quote_ident(table)}"


def publication_exists(conn: psycopg.Connection, name: str) -> bool:
    return conn.execute("SELECT 1 FROM pg_publication WHERE pubname = %s", (name,)).fetchone() is not None


def publication_tables(conn: psycopg.Connection, name: str) -> list[tuple[str, str]]:
    """(schema, table) pairs the publication covers, sorted."""
    rows = conn.execute(
        "SELECT schemaname::text, tablename::text FROM pg_publication_tables WHERE pubname = %s ORDER BY 1, 2", (name,)
    ).fetchall()
    return [(row[0], row[1]) for row in rows]


def publication_members(conn: psycopg.Connection, name: str) -> list[tuple[str, str]]:
    """(schema, table) pairs named in the publication's ``FOR TABLE`` list, sorted.

    Unlike :func:`publication_tables` (what the server publishes), a partitioned table stays itself
    here: ``pg_publication_tables`` lists its leaf partitions instead unless the publication has
    ``publish_via_partition_root``.
    """
    rows = conn.execute(
        """SELECT n.nspname::text, c.relname::text FROM pg_publication p
             JOIN pg_publication_rel r ON r.prpubid = p.oid JOIN pg_class c ON c.oid = r.prrelid
             JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE p.pubname = %s ORDER BY 1, 2""",
        (name,),
    ).fetchall()
    return [(row[0], row[1]) for row in rows]


def create_publication(
    conn: psycopg.Connection,
    name: str,
    *,
    tables: Sequence[tuple[str, str]] | None = None,
    publish: Sequence[str] | None = None,
    via_partition_root: bool = False,
) -> None:
    """``CREATE PUBLICATION``: ``tables=None`` means FOR ALL TABLES, ``[]`` means no tables."""
    sql = f"CREATE PUBLICATION {quote_ident(name)}"
    if tables is None:
        sql += " FOR ALL TABLES"
    elif tables:
        sql += " FOR TABLE " + ", ".join(qualified_name(schema, table) for schema, table in tables)
    parameters = []
    if publish is not None:
        parameters.append(f"publish = {quote_literal(', '.join(publish))}")
    if via_partition_root:
        parameters.append("publish_via_partition_root = true")
    if parameters:
        sql += " WITH (" + ", ".join(parameters) + ")"
    conn.execute(sql.encode())


def drop_publication(conn: psycopg.Connection, name: str) -> None:
    conn.execute(f"DROP PUBLICATION IF EXISTS {quote_ident(name)}".encode())


def ensure_publication(
    conn: psycopg.Connection,
    name: str,
    *,
    tables: Sequence[tuple[str, str]] | None = None,
) -> bool:
    """Reuse the publication if it exists, else create it; returns whether it was created now.

    An existing publication is left as it is: which tables it covers is the owner's decision (the
    connector's ``publication.autocreate.mode`` decides whether to change it).
    """
    if publication_exists(conn, name):
        return False
    try:
        create_publication(conn, name, tables=tables)
    except psycopg.errors.DuplicateObject:
        return False
    return True


def set_publication_tables(conn: psycopg.Connection, name: str, tables: Sequence[tuple[str, str]]) -> None:
    """``ALTER PUBLICATION ... SET TABLE``: the publication names exactly ``tables`` from now on."""
    listed = ", ".join(qualified_name(schema, table) for schema, table in tables)
    conn.execute(f"ALTER PUBLICATION {quote_ident(name)} SET TABLE {listed}".encode())


def replica_identity(conn: psycopg.Connection, schema: str, table: str) -> tuple[str, str | None] | None:
    """The table's replica identity now: ("FULL" | "DEFAULT" | "NOTHING" | "INDEX", the index's name
    for INDEX); None when the table does not exist. Reading it needs no privilege on the table."""
    row = conn.execute(
        """SELECT c.relreplident::text,
                  (SELECT ic.relname::text FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
                    WHERE i.indrelid = c.oid AND i.indisreplident)
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname = %s""",
        (schema, table),
    ).fetchone()
    if row is None:
        return None
    kind = {"f": "FULL", "d": "DEFAULT", "n": "NOTHING", "i": "INDEX"}[row[0]]
    return kind, (row[1] if kind == "INDEX" else None)


def set_replica_identity(conn: psycopg.Connection, schema: str, table: str, identity: str, index: str | None = None) -> None:
    """``ALTER TABLE ... REPLICA IDENTITY``: ``identity`` FULL, DEFAULT or NOTHING, or INDEX with ``index``."""
    upper = identity.upper()
    if upper == "INDEX":
        if not index:
            raise ValueError("REPLICA IDENTITY USING INDEX needs an index name")
        clause = f"USING INDEX {quote_ident(index)}"
    elif upper in ("FULL", "DEFAULT", "NOTHING"):
        clause = upper
    else:
        raise ValueError(f"unknown replica identity {identity!r}")
    conn.execute(f"ALTER TABLE {qualified_name(schema, table)} REPLICA IDENTITY {clause}".encode())
