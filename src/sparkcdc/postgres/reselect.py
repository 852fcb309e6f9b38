"""Reading columns of rows again by key (the reselect post processor's query), as PostgreSQL's text.

One query for many keys: the keys' text values go in as one text array per key column, are cast to
the columns' types, and each row found comes back with the index of the key it matched, so that a
key matching several rows (a key that is not unique) is seen as such. Values come back as the text
the types' output functions give under the connection's settings (sparkcdc's text settings: the
same text pgoutput and COPY send), NULL as None.
"""

from __future__ import annotations

from collections.abc import Sequence

import psycopg

from .errors import server_error
from .replication import quote_ident

__all__ = ["reselect_rows"]


def reselect_rows(
    conn: psycopg.Connection,
    schema: str,
    table: str,
    key: Sequence[tuple[str, str]],
    columns: Sequence[str],
    keys: Sequence[Sequence[str | None]],
) -> dict[int, list[tuple[str | None, ...]]]:
    """The rows of ``schema.table`` whose ``key`` columns ((name, type to cast to)) equal each of
    ``keys`` (text values), as ``columns``' text: key index -> the rows it matched (none: absent)."""
    if not key:
        raise ValueError("a row is read again by at least one key column")
    names = [f"k{i}" for i in range(len(key))]
    arrays = ", ".join("%s::text[]" for _ in key)
    match = " AND ".join(f"t.{quote_ident(column)} = k.{name}::{kind}" for (column, kind), name in zip(key, names, strict=True))
    selected = ", ".join(f"t.{quote_ident(column)}" for column in columns)
    query = (f"SELECT k.i, {selected} FROM {quote_ident(schema)}.{quote_ident(table)} AS t "
             f"JOIN unnest({arrays}) WITH ORDINALITY AS k({', '.join(names)}, i) ON {match}")
    params = [[values[i] for values in keys] for i in range(len(key))]
    try:
        with conn.cursor() as cursor:
            cursor.execute(query.encode(), params)
            result = cursor.pgresult
            rows: dict[int, list[tuple[str | None, ...]]] = {}
            if result is None:
                return rows
            for r in range(result.ntuples):
                index = int(result.get_value(r, 0) or b"0") - 1
                row = tuple(None if (raw := result.get_value(r, c)) is None else bytes(raw).decode("utf-8")
                            for c in range(1, result.nfields))
                rows.setdefault(index, []).append(row)
            return rows
    except psycopg.Error as exc:
        raise server_error(f"reading {', '.join(columns)} of {schema}.{table} again by key failed: {exc}", exc.sqlstate,
                           table=f"{schema}.{table}", connected=not conn.closed) from exc
