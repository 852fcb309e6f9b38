"""The differential comparison with Debezium through `sparkcdc run` itself: a real SparkSession,
the ``postgres-cdc`` source and the topic-files sink, snapshot and stream.

The rest of the conformance suite runs the in-process loop over the same planner and reader
(tests/engine/test_one_driver.py shows they are the same objects); these cases show that what
reaches the topic files through Spark is the same again.
"""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from .differential import run_conformance_through_spark
from .test_scalar_types_conformance import DECIMAL, Family

pytestmark = pytest.mark.slow


def test_every_kind_of_event_through_spark(
    spark, debezium_oracle, pg_cluster, db: psycopg.Connection, unique_name: str, tmp_path: Path
) -> None:
    table, other = f"c_{unique_name}", f"o_{unique_name}"
    debezium, ours = run_conformance_through_spark(
        debezium_oracle, pg_cluster, db, unique_name, tmp_path,
        setup=[
            f"CREATE TABLE {table} (id SERIAL PRIMARY KEY, email VARCHAR(255) NOT NULL, note TEXT, score int DEFAULT 7)",
            f"INSERT INTO {table} (email, note) SELECT 'user' || g || '@example.com', repeat('n', g) FROM generate_series(1, 300) g",
            f"CREATE TABLE {other} (id int PRIMARY KEY, doc jsonb, at timestamptz)",
            f"INSERT INTO {other} VALUES (1, '{{\"a\": 1}}', '2024-02-29 12:00:00+00'), (2, NULL, NULL)",
        ],
        tables=[f"public.{table}", f"public.{other}"],
        workload=[
            f"INSERT INTO {table} (email, note) VALUES ('carol@example.com', 'streamed')",
            f"UPDATE {table} SET note = 'changed' WHERE id = 1",
            f"UPDATE {table} SET id = 1000 WHERE id = 2",
            f"DELETE FROM {table} WHERE id = 1000",
            "SELECT pg_logical_emit_message(true, 'audit', 'in a transaction')",
            f"UPDATE {other} SET doc = '[1, 2]' WHERE id = 1",
            f"TRUNCATE {other}",
        ],
        **{"provide.transaction.metadata": "true", "skipped.operations": "none"},
    )
    assert sum(1 for r in debezium if r.op == "r") == 302
    assert {r.op for r in ours} >= {"r", "c", "u", "d", "t", "m"}


def test_decimal_modes_through_spark(
    spark, debezium_oracle, pg_cluster, db: psycopg.Connection, unique_name: str, tmp_path: Path
) -> None:
    """The server-rendered snapshot and the streamed path, in a handling mode with doubles."""
    family: Family = DECIMAL
    t = f"t_{unique_name}"
    inserts = [f"INSERT INTO {t}{f' ({family.insert_columns})' if family.insert_columns else ''} VALUES {row}" for row in family.rows]
    debezium, _ = run_conformance_through_spark(
        debezium_oracle, pg_cluster, db, unique_name, tmp_path,
        setup=[s.replace("{t}", t) for s in family.prelude] + [f"CREATE TABLE {t} (pk SERIAL PRIMARY KEY, {family.columns})"] + inserts,
        tables=[f"public.{t}"],
        workload=inserts,
        **{"decimal.handling.mode": "double"},
    )
    assert [r.op for r in debezium].count("r") == len(inserts)
