"""Memory under one huge transaction: ``sparkcdc run --once`` draining a single transaction of
``--rows`` inserts, beside one ten times smaller, with the peak memory of every process it runs.

pgoutput sends a transaction's changes after its COMMIT, all at once (the server spills to disk
what exceeds ``logical_decoding_work_mem``); sparkcdc turns them into records and hands them to
Spark in batches of at most 8 MiB as they arrive, and Spark's text writer streams them to files, so
nothing should grow with the transaction. The figure is the peak resident memory (VmRSS sampled
every 0.2 s) of the Spark JVM, of the Python processes (the driver and Spark's Python workers), and
of all of them together, for both sizes; the output is checked to hold exactly one line per row.

    python benchmarks/big_transaction.py [--rows 5000000] [--record]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _common import machine_summary, record_result, write_properties  # noqa: E402
from _memory import process_tree  # noqa: E402

from sparkcdc.embedded_postgres import ThrowawayCluster  # noqa: E402


@dataclass
class Peaks:
    jvm_mb: float = 0.0
    python_mb: float = 0.0
    total_mb: float = 0.0


def _rss_mb(pid: int) -> tuple[str, float]:
    try:
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return comm, int(line.split()[1]) / 1024
    except OSError:
        pass
    return "", 0.0


@contextmanager
def sampled(root: int) -> Iterator[Peaks]:
    """Peak RSS of ``root``'s descendants (PostgreSQL's processes aside) while the block runs."""
    peaks, stop = Peaks(), threading.Event()

    def sample() -> None:
        while not stop.is_set():
            jvm = python = 0.0
            for pid in process_tree(root):
                comm, rss = _rss_mb(pid)
                if comm == "java":
                    jvm += rss
                elif comm.startswith("python"):
                    python += rss
            peaks.jvm_mb, peaks.python_mb = max(peaks.jvm_mb, jvm), max(peaks.python_mb, python)
            peaks.total_mb = max(peaks.total_mb, jvm + python)
            stop.wait(0.2)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield peaks
    finally:
        stop.set()
        thread.join()


def run_once(config: Path, output: Path, checkpoint: Path) -> tuple[float, Peaks]:
    argv = [sys.executable, "-m", "sparkcdc.cli", "run", str(config), "--output", str(output), "--checkpoint", str(checkpoint),
            "--once", "--master", "local[2]"]
    log = checkpoint.parent / f"{checkpoint.name}.log"
    with open(log, "wb") as handle:
        started = time.perf_counter()
        process = subprocess.Popen(argv, stdout=handle, stderr=subprocess.STDOUT)
        with sampled(process.pid) as peaks:
            code = process.wait(timeout=3600)
        seconds = time.perf_counter() - started
    if code != 0:
        raise SystemExit(f"sparkcdc run failed ({code}):\n{log.read_text(errors='replace')[-4000:]}")
    return seconds, peaks


def lines_under(output: Path) -> int:
    count = 0
    for path in output.glob("*/part-*.jsonl"):
        with open(path, "rb") as handle:
            while block := handle.read(1 << 24):
                count += block.count(b"\n")
    return count


def measure(cluster: ThrowawayCluster, conn: psycopg.Connection, work: Path, rows: int) -> tuple[float, Peaks]:
    name = f"big_{rows}"
    conn.execute(f"CREATE TABLE {name} (id bigint PRIMARY KEY, v int NOT NULL, t text)")
    config = write_properties(work / f"{name}.properties", {
        "name": name, "database.hostname": cluster.host, "database.port": str(cluster.port), "database.user": cluster.user,
        "database.password": "", "database.dbname": "postgres", "topic.prefix": "big", "slot.name": name,
        "publication.name": name, "publication.autocreate.mode": "filtered", "table.include.list": f"public.{name}",
        "snapshot.mode": "no_data", "key.converter.schemas.enable": "false", "value.converter.schemas.enable": "false",
    })
    output, checkpoint = work / f"{name}-out", work / f"{name}-ck"
    run_once(config, output, checkpoint)  # publication, slot, checkpoint
    began = time.perf_counter()
    conn.execute(f"INSERT INTO {name} SELECT g, g %% 1000, 'row ' || g FROM generate_series(1, %s) g", (rows,))  # one transaction
    wal = conn.execute("SELECT pg_size_pretty(pg_current_wal_lsn() - confirmed_flush_lsn) FROM pg_replication_slots "
                       "WHERE slot_name = %s", (name,)).fetchone()[0]
    print(f"  {rows:,} rows inserted in one transaction in {time.perf_counter() - began:.1f} s; {wal} of WAL behind the slot")
    seconds, peaks = run_once(config, output, checkpoint)
    found = lines_under(output)
    if found != rows:
        raise SystemExit(f"{found:,} lines under {output}, expected {rows:,}")
    conn.execute(f"SELECT pg_drop_replication_slot('{name}')")
    conn.execute(f"DROP TABLE {name}")
    subprocess.run(["rm", "-rf", str(output), str(checkpoint)], check=True)
    print(f"  {rows:,}: {seconds:.1f} s; peak RSS JVM {peaks.jvm_mb:,.0f} MB, Python {peaks.python_mb:,.0f} MB, "
          f"together {peaks.total_mb:,.0f} MB")
    return seconds, peaks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args()
    small = max(1, args.rows // 10)
    with (ThrowawayCluster(settings={"max_wal_size": "4GB"}) as cluster,
          psycopg.connect(cluster.conninfo(), autocommit=True) as conn,
          tempfile.TemporaryDirectory(prefix="sparkcdc-bench-big-") as tmp):
        results = {rows: measure(cluster, conn, Path(tmp), rows) for rows in (small, args.rows)}
    (small_s, small_p), (big_s, big_p) = results[small], results[args.rows]
    growth = big_p.total_mb / small_p.total_mb
    print(f"peak memory, {args.rows:,}-row transaction vs {small:,}: {big_p.total_mb:,.0f} MB vs {small_p.total_mb:,.0f} MB "
          f"(x{growth:.2f} for x{args.rows / small:.0f} rows)")
    if args.record:
        record_result(
            "big transaction",
            f"one transaction of {args.rows:,} inserts (and one of {small:,}) into a 3-column table, drained by "
            "`sparkcdc run --once` (local[2], schemas off), output checked line by line; peak VmRSS sampled every 0.2 s",
            [
                (f"{small:,} rows", f"{small_p.total_mb:,.0f} MB", f"JVM {small_p.jvm_mb:,.0f} MB, Python {small_p.python_mb:,.0f} MB; "
                 f"{small_s:.1f} s"),
                (f"{args.rows:,} rows", f"{big_p.total_mb:,.0f} MB", f"JVM {big_p.jvm_mb:,.0f} MB, Python {big_p.python_mb:,.0f} MB; "
                 f"{big_s:.1f} s"),
                ("growth", f"x{growth:.2f}", f"for x{args.rows / small:.0f} rows: memory does not follow the transaction's size"),
            ],
        )
    print(machine_summary())


if __name__ == "__main__":
    main()
