"""Debezium 3.6.3 and sparkcdc capture the same workloads; every record must match.

See ``differential.py`` for what is compared and the few fields that are not.
"""

from __future__ import annotations

import psycopg

from .differential import assert_same_records, capture_both


def test_change_events_of_every_kind(debezium_oracle, pg_cluster, db: psycopg.Connection, unique_name: str) -> None:
    table = f"customers_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id SERIAL PRIMARY KEY, email VARCHAR(255) NOT NULL, note TEXT, score int DEFAULT 7)")
    db.execute(f"INSERT INTO {table} (email, note) VALUES ('alice@example.com', 'first'), ('bob@example.com', NULL)")
    options = {"provide.transaction.metadata": "true", "skipped.operations": "none"}
    with capture_both(debezium_oracle, pg_cluster, db, unique_name, [f"public.{table}"], **options) as finish:
        db.execute(f"INSERT INTO {table} (email, note) VALUES ('carol@example.com', 'streamed')")
        db.execute(f"UPDATE {table} SET note = 'changed' WHERE id = 1")
        db.execute(f"UPDATE {table} SET id = 10 WHERE id = 2")
        db.execute(f"DELETE FROM {table} WHERE id = 10")
        with db.transaction():
            db.execute(f"INSERT INTO {table} (email) VALUES ('dave@example.com')")
            db.execute("SELECT pg_logical_emit_message(true, 'audit', 'in a transaction')")
            db.execute(f"UPDATE {table} SET score = NULL WHERE id = 1")
        db.execute("SELECT pg_logical_emit_message(false, 'beat', 'not in a transaction')")
        db.execute(f"TRUNCATE {table}")
        debezium, ours = finish()
    assert any(r.op == "r" for r in debezium) and any(r.op == "t" for r in debezium)
    assert_same_records(debezium, ours)


def test_multi_table_truncate(debezium_oracle, pg_cluster, db: psycopg.Connection, unique_name: str) -> None:
    """One TRUNCATE of several tables (CASCADE, RESTART IDENTITY): one ``t`` record per captured table."""
    from .differential import run_conformance

    parent, child, other = f"tp_{unique_name}", f"tc_{unique_name}", f"to_{unique_name}"
    debezium, _ = run_conformance(
        debezium_oracle, pg_cluster, db, unique_name,
        setup=[
            f"CREATE TABLE {parent} (id serial PRIMARY KEY)",
            f"CREATE TABLE {child} (id serial PRIMARY KEY, parent int REFERENCES {parent})",
            f"CREATE TABLE {other} (id serial PRIMARY KEY)",
            f"INSERT INTO {parent} DEFAULT VALUES; INSERT INTO {child} (parent) VALUES (1); INSERT INTO {other} DEFAULT VALUES",
        ],
        tables=[f"public.{parent}", f"public.{child}", f"public.{other}"],
        workload=[f"TRUNCATE {parent}, {other} RESTART IDENTITY CASCADE", f"INSERT INTO {other} DEFAULT VALUES"],
        **{"skipped.operations": "none", "provide.transaction.metadata": "true"},
    )
    assert sorted(r.value_payload["source"]["table"] for r in debezium if r.op == "t") == sorted([parent, child, other])
