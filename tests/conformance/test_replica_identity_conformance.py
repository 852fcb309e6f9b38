"""Replica identities, keyless tables, TOAST and quoted identifiers, against Debezium 3.6.3."""

from __future__ import annotations

import psycopg
import pytest

from .differential import run_conformance


@pytest.mark.parametrize("identity", ["DEFAULT", "FULL", "USING INDEX {t}_code_key"])
def test_updates_and_deletes_per_replica_identity(debezium_oracle, pg_cluster, db, unique_name: str, identity: str) -> None:
    t = f"ri_{unique_name}"
    debezium, _ = run_conformance(
        debezium_oracle, pg_cluster, db, unique_name,
        setup=[
            f"CREATE TABLE {t} (id int PRIMARY KEY, code text NOT NULL UNIQUE, qty int NOT NULL DEFAULT 5, "
            f"price numeric(8,2) NOT NULL, seen timestamptz NOT NULL DEFAULT now(), note text)",
            f"ALTER TABLE {t} REPLICA IDENTITY {identity.format(t=t)}",
            f"INSERT INTO {t} VALUES (1, 'a', 1, 1.50, '2024-01-01 00:00:00+00', 'x'), (2, 'b', 2, 2.50, '2024-01-02 00:00:00+00', NULL)",
        ],
        tables=[f"public.{t}"],
        workload=[
            f"UPDATE {t} SET note = 'y' WHERE id = 1",
            f"UPDATE {t} SET code = 'c' WHERE id = 1",
            f"UPDATE {t} SET id = 3 WHERE id = 1",
            f"DELETE FROM {t} WHERE id = 2",
            f"DELETE FROM {t} WHERE id = 3",
        ],
    )
    assert [r.op for r in debezium if r.op in ("u", "d", "c")]


def test_replica_identity_nothing_with_inserts_only_publication(debezium_oracle, pg_cluster, db, unique_name: str) -> None:
    t = f"nothing_{unique_name}"
    run_conformance(
        debezium_oracle, pg_cluster, db, unique_name,
        setup=[f"CREATE TABLE {t} (id int PRIMARY KEY, v text)", f"ALTER TABLE {t} REPLICA IDENTITY NOTHING",
               f"INSERT INTO {t} VALUES (1, 'a')"],
        tables=[f"public.{t}"],
        workload=[f"INSERT INTO {t} VALUES (2, 'b')", f"UPDATE {t} SET v = 'c'", f"DELETE FROM {t} WHERE id = 1"],
        **{"skipped.operations": "u,d"},
    )


@pytest.mark.parametrize("identity", ["DEFAULT", "FULL"])
def test_table_without_any_key(debezium_oracle, pg_cluster, db, unique_name: str, identity: str) -> None:
    t = f"nokey_{unique_name}"
    setup = [f"CREATE TABLE {t} (id int, v text NOT NULL)", f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')"]
    workload = [f"INSERT INTO {t} VALUES (3, 'c')"]
    if identity == "FULL":
        setup.append(f"ALTER TABLE {t} REPLICA IDENTITY FULL")
        workload += [f"UPDATE {t} SET v = 'z' WHERE id = 1", f"DELETE FROM {t} WHERE id = 2"]
    run_conformance(debezium_oracle, pg_cluster, db, unique_name, setup=setup, tables=[f"public.{t}"], workload=workload)


def test_unique_index_instead_of_primary_key(debezium_oracle, pg_cluster, db, unique_name: str) -> None:
    t = f"uniq_{unique_name}"
    run_conformance(
        debezium_oracle, pg_cluster, db, unique_name,
        setup=[
            f"CREATE TABLE {t} (code text NOT NULL, other text NOT NULL, v int)",
            f"CREATE UNIQUE INDEX {t}_z ON {t} (other)",
            f"CREATE UNIQUE INDEX {t}_a ON {t} (code)",
            f"ALTER TABLE {t} REPLICA IDENTITY USING INDEX {t}_a",
            f"INSERT INTO {t} VALUES ('a', 'x', 1)",
        ],
        tables=[f"public.{t}"],
        workload=[f"INSERT INTO {t} VALUES ('b', 'y', 2)", f"UPDATE {t} SET v = 3 WHERE code = 'a'", f"DELETE FROM {t} WHERE code = 'b'"],
    )


def test_unchanged_toast_values(debezium_oracle, pg_cluster, db, unique_name: str) -> None:
    t = f"toast_{unique_name}"
    big = "".join(f"{i:05d}" for i in range(3000))

    def workload() -> None:
        db.execute(f"UPDATE {t} SET small = 'b' WHERE id = 1")
        db.execute(f"UPDATE {t} SET big = %s WHERE id = 1", (big[::-1],))
        db.execute(f"UPDATE {t} SET small = 'c', n = 2 WHERE id = 1")
        db.execute(f"DELETE FROM {t} WHERE id = 1")

    run_conformance(
        debezium_oracle, pg_cluster, db, unique_name,
        setup=[
            f"CREATE TABLE {t} (id int PRIMARY KEY, big text, bytes bytea, small text, n int, jb jsonb)",
            f"ALTER TABLE {t} ALTER COLUMN big SET STORAGE EXTERNAL",
            f"ALTER TABLE {t} ALTER COLUMN bytes SET STORAGE EXTERNAL",
            f"ALTER TABLE {t} ALTER COLUMN jb SET STORAGE EXTERNAL",
        ] + [
            f"INSERT INTO {t} VALUES (1, '{big}', decode(repeat('ab', 5000), 'hex'), 'a', 1, "
            f"(SELECT jsonb_agg(g) FROM generate_series(1, 2000) g))"
        ],
        tables=[f"public.{t}"],
        workload=workload,
    )


def test_quoted_identifiers(debezium_oracle, pg_cluster, db, unique_name: str) -> None:
    schema = f'Quoted_" . Schema {unique_name}'
    table = 'Quoted_" . Table'
    qs, qt = '"' + schema.replace('"', '""') + '"', '"' + table.replace('"', '""') + '"'
    column = '"Quoted_"" . Text_Column"'
    run_conformance(
        debezium_oracle, pg_cluster, db, unique_name,
        setup=[f"CREATE SCHEMA {qs}", f"CREATE TABLE {qs}.{qt} (pk SERIAL PRIMARY KEY, {column} TEXT)",
               f"INSERT INTO {qs}.{qt} ({column}) VALUES ('snap')"],
        tables=[_regex_escape(f"{schema}.{table}")],
        workload=[f"INSERT INTO {qs}.{qt} ({column}) VALUES ('stream')", f"UPDATE {qs}.{qt} SET {column} = 'x'"],
    )


def _regex_escape(name: str) -> str:
    import re

    return re.escape(name).replace(",", ",,")


def test_skip_and_tombstone_options(debezium_oracle, pg_cluster, db: psycopg.Connection, unique_name: str) -> None:
    t = f"opts_{unique_name}"
    run_conformance(
        debezium_oracle, pg_cluster, db, unique_name,
        setup=[f"CREATE TABLE {t} (id int PRIMARY KEY, v text)", f"INSERT INTO {t} VALUES (1, 'a')"],
        tables=[f"public.{t}"],
        workload=[f"INSERT INTO {t} VALUES (2, 'b')", f"UPDATE {t} SET v = 'c' WHERE id = 1", f"UPDATE {t} SET id = 5 WHERE id = 2",
                  f"DELETE FROM {t} WHERE id = 1", f"TRUNCATE {t}"],
        **{"skipped.operations": "c", "tombstones.on.delete": "false"},
    )
