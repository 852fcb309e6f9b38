"""Applying changes to mirrors: PostgreSQL's own logical replication vs ``sparkcdc run --apply-to``.

The same backlog is applied three ways, each from its own slot created before the workload:
events.py's ``--changes`` changes (5/6 inserts, 1/6 updates, 1,000 rows per transaction) to the
6-column ``bench`` table, plus ``--deletes`` deletes.

The PostgreSQL mirrors live on a second throwaway server, as a mirror would in production: what they
write must not become WAL of the source that the runs after them (each from its own slot) decode.

* Baseline: native logical replication. A subscription in a mirror database (``copy_data=false``,
  its slot made before the workload, created disabled) is enabled after the workload; its time runs
  from ``ENABLE`` until its slot has confirmed the last change's LSN (the apply worker commits each
  transaction as it goes).
* sparkcdc into PostgreSQL: ``python -m sparkcdc.cli run CONFIG --apply-to postgresql://…/mirror
  --checkpoint DIR --once --summary FILE`` (a subprocess with its own Spark JVM; processing time is
  the sum of Spark's ``triggerExecution`` of its micro-batches, wall time the whole command).
* sparkcdc into Delta Lake: the same with ``--apply-to DIR``.
* sparkcdc into Apache Iceberg: the same with ``--apply-to iceberg+file:DIR`` (a local SQLite catalog).

Each mirror is then compared with the source (row count and md5 of every row for PostgreSQL; every
row for Delta). Reported: changes/s of each, the driver's seconds per apply phase (where the time
goes: census, plan, stage, commit, and the executors' read, fold and stage), the start-up's
milestones, and the ratios of sparkcdc's PostgreSQL rate to the baseline's, over processing time and
over the whole command (issue 31's target: the whole command at 0.3x native or better).

With ``--tables N`` the changes are spread over N tables of the same shape row by row, as an
application writing an order and its lines does: each transaction inserts (then updates) row ``g``
of every table in turn, so that no two consecutive changes are of one table.

With ``--set NAME=VALUE`` (repeatable) a second PostgreSQL mirror is applied with those properties
set, from its own slot, right after the default's: a speed setting's A/B (``apply.changes.per.task``).

    python benchmarks/apply.py [--changes 1000000] [--deletes 50000] [--tables N] [--set NAME=VALUE ...] [--record]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _common import (  # noqa: E402
    SparkcdcRun,
    apply_phases,
    load_average,
    machine_summary,
    record_result,
    run_sparkcdc,
    settings_argument,
    settings_label,
    sparkcdc_properties,
    startup_rows,
    write_properties,
)
from events import bench_tables, load, table_ddl  # noqa: E402

from sparkcdc.embedded_postgres import ThrowawayCluster  # noqa: E402


def load_in_turn(conn: psycopg.Connection, tables: list[str], changes: int, per_tx: int) -> None:
    """events.py's workload spread over ``tables`` row by row, as an application that writes an
    order and its lines does: each transaction inserts (then updates) row ``g`` of every table in
    turn, so that consecutive changes are never of one table. Each table gets the same rows."""
    inserts = changes * 5 // 6 // len(tables)
    updates = (changes - changes * 5 // 6) // len(tables)
    rows_per_tx = max(1, per_tx // len(tables))
    insert = " ".join(f"INSERT INTO {t} VALUES (g, g % 1000, 'label-' || g, g * 1.5, now(), g % 2 = 0);" for t in tables)
    update = " ".join(f"UPDATE {t} SET qty = qty + 1, label = label || '!' WHERE id = g;" for t in tables)
    for count, statements in ((inserts, insert), (updates, update)):
        for start in range(1, count + 1, rows_per_tx):
            end = min(start + rows_per_tx - 1, count)
            conn.execute(f"DO $$BEGIN FOR g IN {start}..{end} LOOP {statements} END LOOP; END$$")


def checksum(conn: psycopg.Connection, tables: list[str]) -> tuple:
    sums = []
    for table in tables:
        row = conn.execute(f"SELECT count(*), md5(string_agg(t::text, '|' ORDER BY id)) FROM public.{table} t").fetchone()
        assert row is not None
        sums.append(tuple(row))
    return tuple(sums)


def delta_equal(conn: psycopg.Connection, path: Path, tables: list[str]) -> bool:
    from deltalake import DeltaTable

    return all(_arrow_equal(conn, table, DeltaTable(str(path / "public" / table)).to_pyarrow_table()) for table in tables)


def iceberg_equal(conn: psycopg.Connection, location: str, tables: list[str]) -> bool:
    from sparkcdc.apply.targets.iceberg import IcebergTarget

    target = IcebergTarget(location)
    try:
        return all(_arrow_equal(conn, table, target.catalog().load_table(f"public.{table}").scan().to_arrow()) for table in tables)
    finally:
        target.close()


def _arrow_equal(conn: psycopg.Connection, table: str, stored: Any) -> bool:
    stored = stored.sort_by("id")
    source = conn.execute(f"SELECT id, qty, label, price, created, active FROM {table} ORDER BY id").fetchall()
    columns = [stored.column(name).to_pylist() for name in ("id", "qty", "label", "price", "created", "active")]
    return list(zip(*columns, strict=True)) == source


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=1_000_000)
    parser.add_argument("--deletes", type=int, default=50_000)
    parser.add_argument("--rows-per-transaction", type=int, default=1000)
    parser.add_argument("--tables", type=int, default=1,
                        help="spread the changes over this many tables, row by row in each transaction (default: one table)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="also apply to a second PostgreSQL mirror with this property set (repeatable): an A/B")
    parser.add_argument("--record", action="store_true", help="append the figures to benchmarks/RESULTS.md")
    args = parser.parse_args()
    settings = settings_argument(args.set)
    tables = bench_tables(args.tables)
    load_before = load_average()
    # The mirrors live on a server of their own, as they would in production: what they write must
    # not become WAL of the source that a later run (another slot) has to decode.
    with (ThrowawayCluster() as cluster, ThrowawayCluster() as mirrors, psycopg.connect(cluster.conninfo(), autocommit=True) as conn,
          tempfile.TemporaryDirectory(prefix="sparkcdc-bench-apply-") as tmp):
        work = Path(tmp)
        for table in tables:
            conn.execute(table_ddl(table))
        with psycopg.connect(mirrors.conninfo(), autocommit=True) as admin:
            for name in ("native_mirror", "pg_mirror", *(["pg_mirror_set"] if settings else [])):
                admin.execute(f"CREATE DATABASE {name}")
        with psycopg.connect(mirrors.conninfo("native_mirror"), autocommit=True) as native:
            for table in tables:
                native.execute(table_ddl(table))
            conn.execute(f"CREATE PUBLICATION bench_native FOR TABLE {', '.join(tables)}")
            conn.execute("SELECT pg_create_logical_replication_slot('bench_native', 'pgoutput')")
            native.execute(f"CREATE SUBSCRIPTION bench_native CONNECTION '{cluster.conninfo()}' PUBLICATION bench_native "
                           "WITH (create_slot = false, slot_name = 'bench_native', copy_data = false, enabled = false)")
        runs = {}
        mirror_base = f"postgresql://{mirrors.user}@{mirrors.host}:{mirrors.port}"
        targets = [("postgresql", f"{mirror_base}/pg_mirror"), *([("postgresql_set", f"{mirror_base}/pg_mirror_set")] if settings else []),
                   ("delta", str(work / "delta")), ("iceberg", f"iceberg+file://{work / 'iceberg'}")]
        for name, target in targets:
            props = sparkcdc_properties(cluster, f"apply_{name}", "no_data") | (settings if name == "postgresql_set" else {})
            props["table.include.list"] = ",".join(f"public.{table}" for table in tables)
            config = write_properties(work / f"{name}.properties", props)
            runs[name] = (config, work / f"{name}-checkpoint", target)
            run_sparkcdc(config, None, work / f"{name}-checkpoint", apply_to=target)  # publication, slot, checkpoint; nothing to apply
        began = time.perf_counter()
        if len(tables) == 1:
            load(conn, args.changes, args.rows_per_transaction)
        else:
            load_in_turn(conn, tables, args.changes, args.rows_per_transaction)
        inserted = args.changes * 5 // 6 // len(tables) * len(tables)
        changes = inserted + (args.changes - args.changes * 5 // 6) // len(tables) * len(tables)
        for table in tables:
            conn.execute(f"DELETE FROM {table} WHERE id %% 17 = 0 AND id <= %s", (args.deletes * 17 // len(tables),))
        remaining = sum(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in tables)  # type: ignore[index]
        deleted = inserted - remaining
        total = changes + int(deleted)
        end_lsn = conn.execute("SELECT pg_current_wal_insert_lsn()").fetchone()[0]  # type: ignore[index]
        print(f"workload: {total:,} changes ({deleted:,} deletes) in {time.perf_counter() - began:.1f} s")

        with psycopg.connect(mirrors.conninfo("native_mirror"), autocommit=True) as native:
            began = time.perf_counter()
            native.execute("ALTER SUBSCRIPTION bench_native ENABLE")
            while True:
                row = conn.execute("SELECT confirmed_flush_lsn >= %s FROM pg_replication_slots WHERE slot_name = 'bench_native'",
                                   (end_lsn,)).fetchone()
                if row and row[0]:
                    break
                time.sleep(0.05)
            native_seconds = time.perf_counter() - began
            native_ok = checksum(native, tables) == checksum(conn, tables)
            native.execute("ALTER SUBSCRIPTION bench_native DISABLE")
        print(f"native logical replication: {total / native_seconds:,.0f} changes/s ({native_seconds:.1f} s), equal: {native_ok}")

        results: dict[str, tuple[float, float, int, bool]] = {}
        applied: dict[str, SparkcdcRun] = {}
        for name, (config, checkpoint, target) in runs.items():
            run = applied[name] = run_sparkcdc(config, None, checkpoint, apply_to=target)
            wall, processing, records = run.wall_seconds, run.processing_seconds, run.records
            if name.startswith("postgresql"):
                with psycopg.connect(mirrors.conninfo(target.rsplit("/", 1)[1]), autocommit=True) as mirror:
                    equal = checksum(mirror, tables) == checksum(conn, tables)
            elif name == "delta":
                equal = delta_equal(conn, Path(target), tables)
            else:
                equal = iceberg_equal(conn, target, tables)
            results[name] = (wall, processing, records, equal)
            print(f"sparkcdc → {name}: {total / processing:,.0f} changes/s processing ({processing:.1f} s), "
                  f"{total / wall:,.0f} on wall time ({wall:.1f} s); {records:,} records; mirror equal: {equal}")
            print(f"  driver seconds per phase: {apply_phases(run)}")
        if not native_ok or not all(r[3] for r in results.values()):
            raise SystemExit("a mirror differs from the source")
    load_after = load_average()
    rows = [("PostgreSQL logical replication (subscription)", f"{total / native_seconds:,.0f} changes/s",
             f"{native_seconds:.1f} s from ENABLE to the last change confirmed")]
    for name, (wall, processing, _records, _equal) in results.items():
        label = {"postgresql": "PostgreSQL (COPY + MERGE)", "postgresql_set": f"PostgreSQL with {settings_label(settings)}",
                 "delta": "Delta Lake (deltalake merge)", "iceberg": "Iceberg (pyiceberg, copy-on-write)"}[name]
        rows.append((f"sparkcdc → {label} processing", f"{total / processing:,.0f} changes/s",
                     f"{processing:.1f} s of micro-batches; driver seconds per phase: {apply_phases(applied[name])}; mirror equals the source"))
        rows.append((f"sparkcdc → {name} wall", f"{total / wall:,.0f} changes/s", f"{wall:.1f} s for the whole command, Spark's start-up included"))
    postgresql = results["postgresql"]
    rows.append(("ratio sparkcdc → PostgreSQL processing / native", f"{native_seconds / postgresql[1]:.2f}", ""))
    rows.append(("ratio sparkcdc → PostgreSQL whole command / native", f"{native_seconds / postgresql[0]:.2f}",
                 f"target >= 0.3 (issue 31): {'met' if native_seconds / postgresql[0] >= 0.3 else 'NOT MET'}"))
    if settings:
        varied = results["postgresql_set"]
        rows.append((f"A/B: {settings_label(settings)} / default, PostgreSQL", f"{postgresql[1] / varied[1]:.2f}x processing rate",
                     f"{postgresql[0] / varied[0]:.2f}x wall rate; one run each, the set one right after the default"))
    rows += startup_rows(applied["postgresql"])
    print("\n".join(f"{a}: {b} ({c})" for a, b, c in rows))
    if args.record:
        spread = ("to a 6-column table" if len(tables) == 1 else
                  f"spread over {len(tables)} 6-column tables row by row (each transaction writes row g of every table in turn)")
        record_result("apply" if len(tables) == 1 else f"apply-{len(tables)}-tables",
                      f"{total:,} changes ({inserted:,} inserts, {changes - inserted:,} updates, "
                      f"{deleted:,} deletes; {args.rows_per_transaction:,} rows per transaction) {spread}, applied as an SCD1 "
                      f"mirror; load average {load_before} before, {load_after} after", rows)
    print(machine_summary())


if __name__ == "__main__":
    main()
