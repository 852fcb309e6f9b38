"""``sparkcdc demo`` (``make demo``): the whole pipeline on a throwaway PostgreSQL and local Spark.

A small shop schema (customers, products, orders) is created and filled; the pipeline snapshots
it and streams while a generator keeps changing it (inserts, updates, deletes, a primary-key
change); Debezium topics go to a directory and every table is mirrored, SCD type 1, into a second
database of the same cluster. When the generator stops and the slot has caught up with the last
change, the demo compares every mirror table with its source row for row and says so.
"""

from __future__ import annotations

import random
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from rich.console import Console
from rich.table import Table

from ..embedded_postgres import ThrowawayCluster

__all__ = ["DemoResult", "run_demo"]

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


@dataclass
class DemoResult:
    generated: Counter[str] = field(default_factory=Counter)  # "table op" -> changes made by the generator
    applied: dict[str, int] = field(default_factory=dict)  # table -> events the mirror applied
    rows: dict[str, tuple[int, int]] = field(default_factory=dict)  # table -> (source rows, mirror rows)
    mismatched: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def mirror_equal(self) -> bool:
        return not self.mismatched and bool(self.rows)


def properties(cluster: ThrowawayCluster) -> dict[str, str]:
    """The connector configuration the demo runs (printed at its start)."""
    return {
        "name": "demo",
        "database.hostname": cluster.host,
        "database.port": str(cluster.port),
        "database.user": cluster.user,
        "database.dbname": "shop",
        "topic.prefix": "shop",
        "slot.name": "sparkcdc_demo",
        "publication.name": "sparkcdc_demo",
        "publication.autocreate.mode": "filtered",
        "table.include.list": ",".join(TABLES),
        "snapshot.mode": "initial",
    }


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


def _checksum(conn: psycopg.Connection[Any], table: str) -> tuple[int, str]:
    row = conn.execute(f"SELECT count(*), coalesce(md5(string_agg(t::text, '|' ORDER BY t.id)), '') FROM {table} t").fetchone()
    assert row is not None
    return int(row[0]), str(row[1])


def _wait(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.2)


def run_demo(*, seconds: float = 20.0, console: Console | None = None, workdir: Path | None = None, master: str = "local[2]") -> DemoResult:
    from ..spark.runner import run_pipeline

    out = console or Console(highlight=False)
    started = time.monotonic()
    result = DemoResult()
    with tempfile.TemporaryDirectory(prefix="sparkcdc-demo-", dir=workdir) as scratch, ThrowawayCluster() as cluster:
        out.print(f"[bold]PostgreSQL[/bold] started on {cluster.host}:{cluster.port} (throwaway, {cluster.root})")
        with psycopg.connect(cluster.conninfo(), autocommit=True) as admin:
            admin.execute("CREATE DATABASE shop")
            admin.execute("CREATE DATABASE mirror")
        with psycopg.connect(cluster.conninfo("shop"), autocommit=True) as shop:
            shop.execute(SCHEMA)  # type: ignore[arg-type]
        out.print("sample schema [bold]shop[/bold]: customers 2,000 rows, products 300, orders 5,000")
        props = properties(cluster)
        mirror_url = f"postgresql://{cluster.user}@{cluster.host}:{cluster.port}/mirror"
        grid = Table(title="connector configuration", show_header=False)
        for key, value in props.items():
            grid.add_row(key, value)
        out.print(grid)
        out.print(f"topics → {scratch}/topics    mirror (SCD1) → {mirror_url}")

        stop = threading.Event()
        outcome: dict[str, Any] = {}

        def pipeline() -> None:
            try:
                outcome["summary"] = run_pipeline(props, output=Path(scratch) / "topics", checkpoint=Path(scratch) / "checkpoint",
                                                  master=master, stop_event=stop, apply_to=(mirror_url,))
            except BaseException as exc:  # noqa: BLE001 - reported below
                outcome["error"] = exc

        runner = threading.Thread(target=pipeline, name="demo-pipeline", daemon=True)
        runner.start()
        generator = ChangeGenerator(cluster.conninfo("shop"))
        with psycopg.connect(cluster.conninfo("shop"), autocommit=True) as shop, \
                psycopg.connect(cluster.conninfo("mirror"), autocommit=True) as mirror:
            _wait(lambda: _mirrored(mirror) or "error" in outcome, 300, "the snapshot to reach the mirror")
            _raise_failure(outcome)
            out.print(f"snapshot applied after {time.monotonic() - started:.1f} s; streaming while the generator changes the shop")
            generator.start()
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline and "error" not in outcome:
                time.sleep(2)  # progress display cadence
                out.print(f"  {sum(generator.counts.values()):>6} changes made · slot lag {_lag(shop)} bytes · "
                          f"mirror orders {mirror.execute('SELECT count(*) FROM public.orders').fetchone()[0]}")  # type: ignore[index]
            generator.stopping.set()
            generator.join()
            if generator.failure is not None:
                raise generator.failure
            _raise_failure(outcome)
            end = shop.execute("SELECT pg_current_wal_insert_lsn()").fetchone()[0]  # type: ignore[index]
            out.print("generator stopped; waiting for the pipeline to catch up with the last change")
            _wait(lambda: _confirmed(shop) >= end or "error" in outcome, 300, "the slot to confirm the last change")
            _raise_failure(outcome)
            stop.set()
            runner.join(timeout=120)
            _raise_failure(outcome)
            for table in TABLES:
                source_rows, source_sum = _checksum(shop, table)
                mirror_rows, mirror_sum = _checksum(mirror, table)
                result.rows[table] = (source_rows, mirror_rows)
                if (source_rows, source_sum) != (mirror_rows, mirror_sum):
                    result.mismatched.append(table)
        summary = outcome.get("summary")
        applied = getattr(summary, "applied", None) or {}
        for tables in applied.values():
            result.applied.update(tables)
        result.generated = generator.counts
    result.seconds = time.monotonic() - started
    _report(out, result)
    return result


def _mirrored(mirror: psycopg.Connection[Any]) -> bool:
    row = mirror.execute("SELECT to_regclass('public.orders') IS NOT NULL AND to_regclass('public.customers') IS NOT NULL"
                         " AND to_regclass('public.products') IS NOT NULL").fetchone()
    return bool(row and row[0])


def _lag(shop: psycopg.Connection[Any]) -> int:
    row = shop.execute("SELECT pg_current_wal_insert_lsn() - confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = 'sparkcdc_demo'"
                       ).fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def _confirmed(shop: psycopg.Connection[Any]) -> Any:
    row = shop.execute("SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = 'sparkcdc_demo'").fetchone()
    return row[0] if row and row[0] is not None else "0/0"


def _raise_failure(outcome: dict[str, Any]) -> None:
    if "error" in outcome:
        raise outcome["error"]


def _report(out: Console, result: DemoResult) -> None:
    changes = Table(title="changes made by the generator")
    changes.add_column("table / operation")
    changes.add_column("changes", justify="right")
    for name, count in sorted(result.generated.items()):
        changes.add_row(name, f"{count:,}")
    out.print(changes)
    check = Table(title="mirror check (row count and md5 of every row, source vs mirror)")
    for column in ("table", "events applied", "source rows", "mirror rows", "equal"):
        check.add_column(column)
    for table, (source_rows, mirror_rows) in result.rows.items():
        equal = table not in result.mismatched
        check.add_row(table, f"{result.applied.get(table, 0):,}", f"{source_rows:,}", f"{mirror_rows:,}",
                      "[green]yes[/green]" if equal else "[red]NO[/red]")
    out.print(check)
    verdict = "[bold green]mirror check PASSED[/bold green]" if result.mirror_equal else "[bold red]mirror check FAILED[/bold red]"
    out.print(f"{verdict} in {result.seconds:.1f} s")
