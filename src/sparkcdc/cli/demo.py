"""``sparkcdc demo`` (``make demo``): the whole pipeline on a throwaway PostgreSQL and local Spark.

A small shop schema (customers, products, orders) is created and filled; the pipeline snapshots
it and streams while a generator keeps changing it (inserts, updates, deletes, a primary-key
change); Debezium topics go to a directory and every table is mirrored, SCD type 1, into a second
database of the same cluster. When the generator stops and the slot has caught up with the last
change, the demo compares every mirror table with its source row for row and says so.
"""

from __future__ import annotations

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
from ..postgres.demo_shop import TABLES, ChangeGenerator, create_shop, row_count, table_checksum, tables_exist
from ..postgres.server_facts import slot_lag
from ..postgres.slots import current_wal_lsn, get_slot

__all__ = ["DemoResult", "run_demo"]

SLOT = "sparkcdc_demo"


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
        "slot.name": SLOT,
        "publication.name": "sparkcdc_demo",
        "publication.autocreate.mode": "filtered",
        "table.include.list": ",".join(TABLES),
        "snapshot.mode": "initial",
    }


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
        create_shop(cluster.conninfo(), cluster.conninfo("shop"))
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
            _wait(lambda: tables_exist(mirror) or "error" in outcome, 300, "the snapshot to reach the mirror")
            _raise_failure(outcome)
            out.print(f"snapshot applied after {time.monotonic() - started:.1f} s; streaming while the generator changes the shop")
            generator.start()
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline and "error" not in outcome:
                time.sleep(2)  # progress display cadence
                out.print(f"  {sum(generator.counts.values()):>6} changes made · slot lag {_lag(shop)} bytes · "
                          f"mirror orders {row_count(mirror, 'public.orders')}")
            generator.stopping.set()
            generator.join()
            if generator.failure is not None:
                raise generator.failure
            _raise_failure(outcome)
            end = current_wal_lsn(shop)
            out.print("generator stopped; waiting for the pipeline to catch up with the last change")
            _wait(lambda: _confirmed(shop) >= end or "error" in outcome, 300, "the slot to confirm the last change")
            _raise_failure(outcome)
            stop.set()
            runner.join(timeout=120)
            _raise_failure(outcome)
            for table in TABLES:
                source_rows, source_sum = table_checksum(shop, table)
                mirror_rows, mirror_sum = table_checksum(mirror, table)
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


def _lag(shop: psycopg.Connection[Any]) -> int:
    lag = slot_lag(shop, SLOT)
    return (lag.confirmed_lag_bytes or 0) if lag is not None else 0


def _confirmed(shop: psycopg.Connection[Any]) -> int:
    state = get_slot(shop, SLOT)
    return (state.confirmed_flush_lsn or 0) if state is not None else 0


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
