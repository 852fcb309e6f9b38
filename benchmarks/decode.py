"""Drain rate of one logical slot: pg_recvlogical (the physical limit) vs sparkcdc's reader + decoder.

Both read identical pgoutput slots created before the same insert workload, in the same run, on a
throwaway cluster. pg_recvlogical writes to /dev/null, so its rate is what the walsender can produce
for one slot; sparkcdc must keep up with that while decoding every message into typed objects.

    python benchmarks/decode.py [--rows 1000000] [--rows-per-transaction 1000] [--record]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import drain_pg_recvlogical, machine_summary, record_result  # noqa: E402

import sparkcdc  # noqa: E402
from sparkcdc.embedded_postgres import ThrowawayCluster  # noqa: E402
from sparkcdc.lsn import format_lsn  # noqa: E402
from sparkcdc.pgoutput import Commit, Insert  # noqa: E402
from sparkcdc.postgres import (  # noqa: E402
    LogicalReplicationReader,
    ReplicationOptions,
    WalMessage,
    create_logical_slot,
    current_wal_lsn,
)

TABLE_DDL = """CREATE TABLE bench (
    id bigint PRIMARY KEY, qty int, label text, price double precision, created timestamptz, active boolean)"""


def load(conn: psycopg.Connection, rows: int, per_tx: int) -> int:
    """Insert ``rows`` rows in transactions of ``per_tx``; returns the number of transactions."""
    transactions = 0
    for start in range(1, rows + 1, per_tx):
        end = min(start + per_tx - 1, rows)
        conn.execute(
            "INSERT INTO bench SELECT g, g %% 1000, 'label-' || g, g * 1.5, now(), g %% 2 = 0 "
            "FROM generate_series(%s::bigint, %s::bigint) g",
            (start, end),
        )
        transactions += 1
    return transactions


def drain_sparkcdc(cluster: ThrowawayCluster, slot: str, transactions: int) -> tuple[float, int, float]:
    """Returns (seconds, inserts decoded, CPU seconds of this process)."""
    options = ReplicationOptions(slot, ("bench",))
    inserts = commits = 0
    cpu_before = time.process_time()
    started = time.perf_counter()
    with LogicalReplicationReader(cluster.conninfo(), options) as reader:
        while commits < transactions:
            item = reader.read(timeout=60)
            if item is None:
                raise RuntimeError("no data for 60 s")
            if isinstance(item, WalMessage):
                message = item.message
                if isinstance(message, Insert):
                    inserts += 1
                elif isinstance(message, Commit):
                    commits += 1
                    reader.confirm(message.end_lsn)
    return time.perf_counter() - started, inserts, time.process_time() - cpu_before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rows-per-transaction", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=2, help="drains of each kind, alternating which goes first")
    parser.add_argument("--record", action="store_true", help="append the figures to benchmarks/RESULTS.md")
    args = parser.parse_args()

    with ThrowawayCluster() as cluster, psycopg.connect(cluster.conninfo(), autocommit=True) as conn:
        conn.execute(TABLE_DDL)
        conn.execute("CREATE PUBLICATION bench FOR TABLE bench")
        for run in range(args.repeat):
            create_logical_slot(conn, f"bench_pg_recvlogical_{run}")
            create_logical_slot(conn, f"bench_sparkcdc_{run}")
        started = time.perf_counter()
        transactions = load(conn, args.rows, args.rows_per_transaction)
        load_seconds = time.perf_counter() - started
        end_lsn = current_wal_lsn(conn)
        print(f"loaded {args.rows:,} rows in {transactions:,} transactions in {load_seconds:.1f} s; WAL end {format_lsn(end_lsn)}")

        baselines: list[float] = []
        runs: list[tuple[float, int, float]] = []
        for run in range(args.repeat):
            # Alternate the order so that neither side always reads WAL the other just pulled into cache.
            order = ("baseline", "sparkcdc") if run % 2 == 0 else ("sparkcdc", "baseline")
            for side in order:
                if side == "baseline":
                    baselines.append(drain_pg_recvlogical(cluster, f"bench_pg_recvlogical_{run}", end_lsn))
                    print(f"  run {run}: pg_recvlogical {args.rows / baselines[-1]:,.0f} rows/s")
                else:
                    runs.append(drain_sparkcdc(cluster, f"bench_sparkcdc_{run}", transactions))
                    print(f"  run {run}: sparkcdc       {args.rows / runs[-1][0]:,.0f} rows/s")
                    if runs[-1][1] != args.rows:
                        raise SystemExit(f"sparkcdc decoded {runs[-1][1]} inserts, expected {args.rows}")
        # Median of the runs (the lower middle one for an even count).
        baseline = sorted(baselines)[(len(baselines) - 1) // 2]
        ours, _, cpu = sorted(runs)[(len(runs) - 1) // 2]

    baseline_rate = args.rows / baseline
    our_rate = args.rows / ours
    ratio = our_rate / baseline_rate
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"median of {args.repeat} runs each:")
    print(f"pg_recvlogical          : {baseline:6.2f} s  {baseline_rate:>10,.0f} rows/s")
    print(f"sparkcdc reader+decoder : {ours:6.2f} s  {our_rate:>10,.0f} rows/s  (CPU {cpu:.2f} s, peak RSS {peak_mb:.0f} MB)")
    print(f"ratio sparkcdc / pg_recvlogical = {ratio:.2f}  (target >= 0.70)")
    if args.record:
        record_result(
            "decode",
            f"{args.rows:,} inserts in {transactions:,} transactions of {args.rows_per_transaction:,} rows, 6-column table; "
            f"median of {args.repeat} drains each, alternating order; sparkcdc "
            f"{'compiled (mypyc)' if sparkcdc.compiled else 'pure Python'}",
            [
                ("pg_recvlogical drain", f"{baseline_rate:,.0f} rows/s", f"{baseline:.2f} s"),
                ("sparkcdc reader + decoder", f"{our_rate:,.0f} rows/s", f"{ours:.2f} s, CPU {cpu:.2f} s, peak RSS {peak_mb:.0f} MB"),
                ("ratio", f"{ratio:.2f}", "target >= 0.70"),
            ],
        )
    print(machine_summary())


if __name__ == "__main__":
    main()
