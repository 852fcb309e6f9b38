"""The demo's sample database: a small shop (customers, products, orders), and random activity on it.

``sparkcdc demo`` (:mod:`sparkcdc.cli.demo`) creates the shop and an empty mirror database, lets
:class:`ChangeGenerator` change the shop while the pipeline runs, and compares the two with
:func:`table_checksum`. Every statement the demo sends is here.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from typing import Any

import psycopg

__all__ = ["SCHEMA", "TABLES", "ChangeGenerator", "create_shop", "row_count", "table_checksum", "tables_exist"]

TABLES = ("public.customers", "public.products", "public.orders")

SCHEMA = """
CREATE TABLE customers (id bigint PRIMARY KEY, name text NOT NULL, email text NOT NULL, country char(2),
                        created_at timestamp NOT NULL DEFAULT now());
CREATE TABLE products (id integer PRIMARY KEY, title text NOT NULL, price numeric(10,2) NOT NULL,
                       in_stock boolean NOT NULL DEFAULT true, description text);
CREATE TABLE orders (id bigint PRIMARY KEY, customer_id bigint NOT NULL, product_id integer NOT NULL,
                     quantity integer NOT NULL, status text NOT NULL, ordered_at timestamptz NOT NULL DEFAULT now());
INSERT INTO customers (id, name, email, country)
  SELECT i, 'customer ' || i, 'c' || i || '@example.com', (ARRAY['DE','FR','US','JP','BR'])[1 + i % 5]
  FROM generate_series(1, 2000) i;
INSERT INTO products (id, title, price, description)
  SELECT i, 'product ' || i, round((i * 7.31) % 500 + 1, 2), repeat('A fine product. ', 20 + i % 50)
  FROM generate_series(1, 300) i;
INSERT INTO orders (id, customer_id, product_id, quantity, status)
  SELECT i, 1 + i % 2000, 1 + i % 300, 1 + i % 4, (ARRAY['new','paid','shipped'])[1 + i % 3]
  FROM generate_series(1, 5000) i;
"""


def create_shop(admin_conninfo: str, shop_conninfo: str) -> None:
    """Create the databases ``shop`` and ``mirror`` (connected to ``admin_conninfo``, a maintenance
    database of the cluster) and fill ``shop`` (``shop_conninfo``: the new database)."""
    with psycopg.connect(admin_conninfo, autocommit=True) as admin:
        admin.execute("CREATE DATABASE shop")
        admin.execute("CREATE DATABASE mirror")
    with psycopg.connect(shop_conninfo, autocommit=True) as shop:
        shop.execute(SCHEMA)  # type: ignore[arg-type]


class ChangeGenerator(threading.Thread):
    """Random shop activity in small transactions until stopped."""

    def __init__(self, conninfo: str, *, seed: int = 1) -> None:
        super().__init__(name="demo-generator", daemon=True)
        self.conninfo = conninfo
        self.rng = random.Random(seed)
        self.stopping = threading.Event()
        self.counts: Counter[str] = Counter()
        self.failure: BaseException | None = None

    def run(self) -> None:
        try:
            with psycopg.connect(self.conninfo, autocommit=False) as conn:
                next_customer, next_order = 100_000, 100_000
                while not self.stopping.is_set():
                    with conn.transaction():
                        for _ in range(self.rng.randint(1, 5)):
                            next_customer, next_order = self._one_change(conn, next_customer, next_order)
                    self.stopping.wait(0.005)  # pacing, not synchronisation: the demo is meant to be watched
        except BaseException as exc:  # noqa: BLE001 - reported by the demo
            self.failure = exc

    def _one_change(self, conn: psycopg.Connection[Any], next_customer: int, next_order: int) -> tuple[int, int]:
        roll = self.rng.random()
        if roll < 0.25:
            next_order += 1
            conn.execute("INSERT INTO orders (id, customer_id, product_id, quantity, status) VALUES (%s, %s, %s, %s, 'new')",
                         (next_order, self.rng.randint(1, 2000), self.rng.randint(1, 300), self.rng.randint(1, 9)))
            self.counts["orders insert"] += 1
        elif roll < 0.5:
            cur = conn.execute("UPDATE orders SET status = %s WHERE id = (SELECT id FROM orders ORDER BY random() LIMIT 1)",
                               (self.rng.choice(["paid", "shipped", "returned"]),))
            self.counts["orders update"] += cur.rowcount
        elif roll < 0.6:
            cur = conn.execute("DELETE FROM orders WHERE id = (SELECT id FROM orders ORDER BY random() LIMIT 1)")
            self.counts["orders delete"] += cur.rowcount
        elif roll < 0.7:
            next_customer += 1
            conn.execute("INSERT INTO customers (id, name, email, country) VALUES (%s, %s, %s, 'NL')",
                         (next_customer, f"new customer {next_customer}", f"n{next_customer}@example.com"))
            self.counts["customers insert"] += 1
        elif roll < 0.85:
            cur = conn.execute("UPDATE customers SET email = 'moved' || id || '@example.org' WHERE id = %s", (self.rng.randint(1, 2000),))
            self.counts["customers update"] += cur.rowcount
        elif roll < 0.97:
            # The description (TOASTed) is left as it is: the event carries a placeholder, the mirror keeps its value.
            cur = conn.execute("UPDATE products SET price = round((price * 1.05)::numeric, 2), in_stock = NOT in_stock WHERE id = %s",
                               (self.rng.randint(1, 300),))
            self.counts["products update"] += cur.rowcount
        else:
            next_customer += 1  # a primary-key change: Debezium's delete + tombstone + create
            cur = conn.execute("UPDATE customers SET id = %s WHERE id = (SELECT max(id) FROM customers WHERE id > 2000)",
                               (next_customer,))
            self.counts["customers key change"] += cur.rowcount
        return next_customer, next_order


def table_checksum(conn: psycopg.Connection[Any], table: str) -> tuple[int, str]:
    """Row count and md5 of every row in ``id`` order: equal for two tables with equal rows."""
    row = conn.execute(f"SELECT count(*), coalesce(md5(string_agg(t::text, '|' ORDER BY t.id)), '') FROM {table} t").fetchone()
    assert row is not None
    return int(row[0]), str(row[1])


def row_count(conn: psycopg.Connection[Any], table: str) -> int:
    row = conn.execute(f"SELECT count(*) FROM {table}").fetchone()  # type: ignore[arg-type]
    return int(row[0]) if row else 0


def tables_exist(conn: psycopg.Connection[Any], tables: tuple[str, ...] = TABLES) -> bool:
    """Whether every one of ``tables`` exists (in the mirror: the pipeline has created them)."""
    row = conn.execute("SELECT bool_and(to_regclass(t) IS NOT NULL) FROM unnest(%s::text[]) t", (list(tables),)).fetchone()
    return bool(row and row[0])
