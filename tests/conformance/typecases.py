"""One data-type case run through both connectors: rows in the snapshot, the same rows streamed.

``type_case`` creates ``<name>`` (``pk serial`` key, a ``tag`` column to update, then the columns
under test), inserts ``rows`` before the connectors start (snapshot ``r`` records), and as the
workload inserts the same rows again, updates every row (``tag``) and deletes the first one, so
every value appears in ``after`` of ``r``/``c``/``u`` records and, with REPLICA IDENTITY FULL (the
default here), in ``before`` of ``u``/``d`` records too. Debezium's and sparkcdc's records must be
equal (``differential.run_conformance``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from .differential import run_conformance
from .oracle import OracleRecord


def type_case(
    oracle: Any,
    cluster: Any,
    db: psycopg.Connection,
    name: str,
    *,
    columns: str,
    rows: Sequence[str],
    names: str | None = None,
    setup: Sequence[str] = (),
    after_create: Sequence[str] = (),
    identity: str = "FULL",
    **options: str,
) -> tuple[list[OracleRecord], list[OracleRecord]]:
    """``columns``: the column definitions after ``pk``/``tag``; ``rows``: ``(v1, v2, ...)`` value lists
    for ``names`` (default: every column named in ``columns``); ``setup``: SQL run first (types,
    extensions); ``after_create``: SQL run between creating the table and the inserts."""
    table = f"t_{name}"
    if names is None:
        names = ", ".join(_column_names(columns))
    inserts = [f"INSERT INTO {table} ({names}) VALUES {row}" for row in rows]
    debezium, ours = run_conformance(
        oracle, cluster, db, name,
        setup=[
            *setup,
            f"CREATE TABLE {table} (pk serial PRIMARY KEY, tag int NOT NULL DEFAULT 0, {columns})",
            f"ALTER TABLE {table} REPLICA IDENTITY {identity}",
            *after_create,
            *inserts,
        ],
        tables=[f"public.{table}"],
        workload=[*inserts, f"UPDATE {table} SET tag = 1", f"DELETE FROM {table} WHERE pk = 1"],
        **options,
    )
    ops = [r.op for r in debezium if r.op]
    assert ops.count("r") == len(rows) and ops.count("c") == len(rows), ops
    return debezium, ours


def _column_names(columns: str) -> list[str]:
    """The column names of a column definition list (top-level commas only)."""
    out, depth, current = [], 0, []
    for char in columns + ",":
        if char == "," and depth == 0:
            out.append("".join(current).split()[0])
            current = []
            continue
        depth += char == "("
        depth -= char == ")"
        current.append(char)
    return out
