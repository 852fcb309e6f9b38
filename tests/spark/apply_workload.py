"""A random change workload over three tables, and checks that a mirror / a history equals the source.

Tables (names prefixed so tests do not collide):
- ``<p>_accounts``: bigint key, a TOASTed ``notes`` column (storage EXTERNAL, > 2 kB) that most
  updates leave unchanged; REPLICA IDENTITY DEFAULT, so those updates carry Debezium's placeholder.
- ``<p>_items``: text key that updates change (primary-key changes), truncated once mid-way.
- ``<p>_links``: a two-column key whose updates move rows to a new key.
"""

from __future__ import annotations

import random
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg

TABLE_KINDS = ("accounts", "items", "links")
KEYS = {"accounts": ("id",), "items": ("sku",), "links": ("a", "b")}


def tables(prefix: str) -> list[str]:
    return [f"public.{prefix}_{kind}" for kind in TABLE_KINDS]


def create(conn: psycopg.Connection, prefix: str, rows: int = 2000, seed: int = 1) -> None:
    rng = random.Random(seed)
    conn.execute(f"""
        CREATE TABLE {prefix}_accounts (id bigint PRIMARY KEY, owner text NOT NULL, balance numeric(12,2), notes text);
        ALTER TABLE {prefix}_accounts ALTER COLUMN notes SET STORAGE EXTERNAL;
        CREATE TABLE {prefix}_items (sku text PRIMARY KEY, qty integer NOT NULL, price double precision, updated timestamp);
        CREATE TABLE {prefix}_links (a integer, b integer, weight integer, label varchar(20), PRIMARY KEY (a, b));
    """)
    with conn.cursor() as cur:
        cur.executemany(f"INSERT INTO {prefix}_accounts VALUES (%s, %s, %s, %s)",
                        [(i, f"owner{i}", Decimal(rng.randint(0, 10**6)) / 100, _notes(rng)) for i in range(1, rows + 1)])
        cur.executemany(f"INSERT INTO {prefix}_items VALUES (%s, %s, %s, now())",
                        [(f"sku-{i}", rng.randint(0, 100), rng.random() * 100) for i in range(1, rows + 1)])
        cur.executemany(f"INSERT INTO {prefix}_links VALUES (%s, %s, %s, %s)",
                        [(i, i % 7, rng.randint(0, 9), f"l{i}") for i in range(1, rows + 1)])


def _notes(rng: random.Random) -> str:
    return rng.randbytes(1600).hex()  # 3,200 characters stored out of line (storage EXTERNAL)


def run_workload(conn: psycopg.Connection, prefix: str, changes: int, *, seed: int = 2, per_transaction: int = 50,
                 truncate_at: float | None = 0.6, first_new: int = 10**6) -> dict[str, int]:
    """``changes`` random changes in transactions; returns counts per kind of change. New keys count
    up from ``first_new``; ``truncate_at`` None: no TRUNCATE."""
    rng = random.Random(seed)
    counts: dict[str, int] = {}
    accounts = list(conn.execute(f"SELECT id FROM {prefix}_accounts").fetchall())
    account_ids = {r[0] for r in accounts}
    skus = {r[0] for r in conn.execute(f"SELECT sku FROM {prefix}_items").fetchall()}
    links = {(r[0], r[1]) for r in conn.execute(f"SELECT a, b FROM {prefix}_links").fetchall()}
    next_id, next_sku, next_link = first_new, first_new, first_new
    truncated = truncate_at is None
    done = 0

    def count(kind: str) -> None:
        counts[kind] = counts.get(kind, 0) + 1

    while done < changes:
        with conn.transaction():
            for _ in range(min(per_transaction, changes - done)):
                done += 1
                if not truncated and truncate_at is not None and done >= changes * truncate_at:
                    conn.execute(f"TRUNCATE {prefix}_items")
                    skus.clear()
                    truncated = True
                    count("items truncate")
                    continue
                table = rng.choice(TABLE_KINDS)
                roll = rng.random()
                if table == "accounts":
                    if roll < 0.2 or not account_ids:
                        next_id += 1
                        conn.execute(f"INSERT INTO {prefix}_accounts VALUES (%s, %s, %s, %s)",
                                     (next_id, f"owner{next_id}", Decimal(rng.randint(0, 10**6)) / 100, _notes(rng)))
                        account_ids.add(next_id)
                        count("accounts insert")
                    elif roll < 0.75:  # the TOASTed notes stay as they are
                        conn.execute(f"UPDATE {prefix}_accounts SET balance = balance + 1.25, owner = owner || '+' WHERE id = %s",
                                     (rng.choice(tuple(account_ids)),))
                        count("accounts update (notes unchanged)")
                    elif roll < 0.79:  # a primary-key change; the TOASTed notes are not sent, the new row keeps them
                        old_id = rng.choice(tuple(account_ids))
                        next_id += 1
                        conn.execute(f"UPDATE {prefix}_accounts SET id = %s, balance = balance + 1 WHERE id = %s", (next_id, old_id))
                        account_ids.discard(old_id)
                        account_ids.add(next_id)
                        count("accounts key change (notes unchanged)")
                    elif roll < 0.85:
                        conn.execute(f"UPDATE {prefix}_accounts SET notes = %s WHERE id = %s", (_notes(rng), rng.choice(tuple(account_ids))))
                        count("accounts update (notes changed)")
                    else:
                        victim = rng.choice(tuple(account_ids))
                        conn.execute(f"DELETE FROM {prefix}_accounts WHERE id = %s", (victim,))
                        account_ids.discard(victim)
                        count("accounts delete")
                elif table == "items":
                    if roll < 0.3 or not skus:
                        next_sku += 1
                        conn.execute(f"INSERT INTO {prefix}_items VALUES (%s, %s, %s, now())", (f"sku-{next_sku}", rng.randint(0, 100), rng.random()))
                        skus.add(f"sku-{next_sku}")
                        count("items insert")
                    elif roll < 0.7:
                        conn.execute(f"UPDATE {prefix}_items SET qty = qty + 1, price = %s, updated = now() WHERE sku = %s",
                                     (rng.random() * 100, rng.choice(tuple(skus))))
                        count("items update")
                    elif roll < 0.85:  # a primary-key change
                        old = rng.choice(tuple(skus))
                        next_sku += 1
                        conn.execute(f"UPDATE {prefix}_items SET sku = %s, qty = qty + 10 WHERE sku = %s", (f"sku-{next_sku}", old))
                        skus.discard(old)
                        skus.add(f"sku-{next_sku}")
                        count("items key change")
                    else:
                        victim = rng.choice(tuple(skus))
                        conn.execute(f"DELETE FROM {prefix}_items WHERE sku = %s", (victim,))
                        skus.discard(victim)
                        count("items delete")
                else:
                    if roll < 0.3 or not links:
                        next_link += 1
                        conn.execute(f"INSERT INTO {prefix}_links VALUES (%s, %s, %s, %s)", (next_link, 1, rng.randint(0, 9), None))
                        links.add((next_link, 1))
                        count("links insert")
                    elif roll < 0.6:
                        a, b = rng.choice(tuple(links))
                        conn.execute(f"UPDATE {prefix}_links SET weight = weight + 1, label = %s WHERE a = %s AND b = %s",
                                     (f"w{rng.randint(0, 99)}", a, b))
                        count("links update")
                    elif roll < 0.8:  # move to a new two-column key
                        a, b = rng.choice(tuple(links))
                        next_link += 1
                        conn.execute(f"UPDATE {prefix}_links SET a = %s, b = 2 WHERE a = %s AND b = %s", (next_link, a, b))
                        links.discard((a, b))
                        links.add((next_link, 2))
                        count("links key change")
                    else:
                        a, b = rng.choice(tuple(links))
                        conn.execute(f"DELETE FROM {prefix}_links WHERE a = %s AND b = %s", (a, b))
                        links.discard((a, b))
                        count("links delete")
    return counts


def source_rows(conn: psycopg.Connection, table: str, kind: str) -> list[tuple[Any, ...]]:
    keys = ", ".join(KEYS[kind])
    return conn.execute(f"SELECT * FROM {table} ORDER BY {keys}").fetchall()


def mirror_mismatches(source: psycopg.Connection, mirror: psycopg.Connection, prefix: str) -> list[str]:
    """Tables whose mirror differs from the source (count and md5 of every row's text)."""
    wrong = []
    for kind, table in zip(TABLE_KINDS, tables(prefix), strict=True):
        keys = ", ".join(f"t.{k}" for k in KEYS[kind])
        query = f"SELECT count(*), coalesce(md5(string_agg(t::text, '|' ORDER BY {keys})), '') FROM {table} t"
        if source.execute(query).fetchone() != mirror.execute(query).fetchone():
            wrong.append(table)
    return wrong


def delta_mismatches(source: psycopg.Connection, root: Path, prefix: str) -> list[str]:
    from deltalake import DeltaTable

    wrong = []
    for kind, table in zip(TABLE_KINDS, tables(prefix), strict=True):
        schema, name = table.split(".")
        stored = DeltaTable(str(root / schema / name)).to_pyarrow_table()
        columns = [d.name for d in source.execute(f"SELECT * FROM {table} LIMIT 0").description or ()]
        rows = sorted(tuple(r[c] for c in columns) for r in stored.to_pylist())
        if rows != source_rows(source, table, kind):
            wrong.append(table)
    return wrong


def iceberg_mismatches(source: psycopg.Connection, catalog: Any, prefix: str) -> list[str]:
    """Tables whose Iceberg mirror (namespace = the source schema) differs from the source, row for row."""
    wrong = []
    for kind, table in zip(TABLE_KINDS, tables(prefix), strict=True):
        stored = catalog.load_table(table).scan().to_arrow()
        columns = [d.name for d in source.execute(f"SELECT * FROM {table} LIMIT 0").description or ()]
        rows = sorted(tuple(r[c] for c in columns) for r in stored.to_pylist())
        if rows != source_rows(source, table, kind):
            wrong.append(table)
    return wrong


def history_problems(source: psycopg.Connection, history: psycopg.Connection, prefix: str) -> list[str]:
    """SCD2 in PostgreSQL: see :func:`_history_problems`."""
    def read(table: str, columns: list[str], keys: tuple[str, ...]) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        open_rows = history.execute(
            f'SELECT {", ".join(columns)} FROM {table} WHERE "__END_AT" IS NULL ORDER BY {", ".join(keys)}').fetchall()
        versions = history.execute(
            f'SELECT {", ".join(keys)}, "__START_AT", "__END_AT" FROM {table} ORDER BY {", ".join(keys)}, "__START_AT"').fetchall()
        return open_rows, versions
    return _history_problems(source, prefix, read)


def iceberg_history_problems(source: psycopg.Connection, catalog: Any, prefix: str) -> list[str]:
    """SCD2 in Iceberg (sequences stored as structs): see :func:`_history_problems`."""
    def sequence(value: Any) -> Any:
        return tuple(value.values()) if isinstance(value, dict) else value

    def read(table: str, columns: list[str], keys: tuple[str, ...]) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        stored = catalog.load_table(table).scan().to_arrow().to_pylist()
        open_rows = sorted(tuple(r[c] for c in columns) for r in stored if r["__END_AT"] is None)
        versions = sorted((*(r[k] for k in keys), sequence(r["__START_AT"]), sequence(r["__END_AT"])) for r in stored)
        return open_rows, versions
    return _history_problems(source, prefix, read)


def _history_problems(source: psycopg.Connection, prefix: str, read: Any) -> list[str]:
    """SCD2: the open versions equal the source, one per live key, and each key's versions chain
    without overlap (``__START_AT`` < ``__END_AT`` <= the next ``__START_AT``)."""
    problems = []
    for kind, table in zip(TABLE_KINDS, tables(prefix), strict=True):
        keys = KEYS[kind]
        columns = [d.name for d in source.execute(f"SELECT * FROM {table} LIMIT 0").description or ()]
        open_rows, versions = read(table, columns, keys)
        if open_rows != source_rows(source, table, kind):
            problems.append(f"{table}: open versions differ from the source")
        width = len(keys)
        for older, newer in zip(versions, versions[1:], strict=False):
            if older[:width] != newer[:width]:
                continue
            start, end, next_start = older[width], older[width + 1], newer[width]
            if end is None or not (start < end <= next_start):
                problems.append(f"{table}: versions of key {older[:width]} overlap or do not chain")
                break
    return problems
