"""Shared by the benchmarks: a description of the machine, appending figures to RESULTS.md,
running ``sparkcdc run --once`` as a subprocess and checking what it wrote, and the physical limits
its figures are held against (``pg_recvlogical`` draining a slot, writing the same bytes)."""

from __future__ import annotations

import bisect
import datetime as dt
import io
import json
import multiprocessing
import os
import platform
import shutil
import subprocess
import sys
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn, TypeVar

import psycopg

from sparkcdc.embedded_postgres import ThrowawayCluster
from sparkcdc.lsn import format_lsn
from sparkcdc.spark.outputs.topic_files.staging import open_topic_file, published_files
from sparkcdc.spark.run_summary import spark_timestamp

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def machine_summary() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    try:
        from sparkcdc.embedded_postgres import find_postgres_bindir

        binary = find_postgres_bindir() / "postgres"
        postgres = subprocess.run([str(binary), "--version"], capture_output=True, text=True).stdout.strip()
    except (OSError, RuntimeError):
        postgres = ""
    return (
        f"{os.cpu_count()} cores ({cpu}), {memory_gib:.0f} GiB RAM, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}{', ' + postgres if postgres else ''}"
    )


def record_result(benchmark: str, workload: str, rows: list[tuple[str, str, str]], note: str | None = None) -> None:
    """Append a dated section with a small table (and an optional note under it) to RESULTS.md."""
    lines = [
        "",
        f"### {benchmark} — {dt.date.today().isoformat()}",
        "",
        f"Workload: {workload}. Machine: {machine_summary()}.",
        "",
        "| measure | figure | notes |",
        "|---|---|---|",
        *[f"| {name} | {figure} | {notes} |" for name, figure, notes in rows],
        "",
        *([note, ""] if note else []),
    ]
    with open(RESULTS, "a", encoding="utf-8") as handle:
        handle.write("\n".join(lines))


T = TypeVar("T")


def median(runs: Sequence[T], key: Callable[[T], float]) -> T:
    """The median run by ``key`` (the lower middle one for an even count)."""
    return sorted(runs, key=key)[(len(runs) - 1) // 2]


def load_average() -> str:
    """The 1- and 5-minute load averages: how busy the machine was before (or during) a run."""
    one, five, _ = os.getloadavg()
    return f"{one:.2f} (1 min), {five:.2f} (5 min)"


#: Issue 31's start-up target: from the command to its first micro-batch running.
STARTUP_TARGET = 2.0


def startup_rows(run: SparkcdcRun) -> list[tuple[str, str, str]]:
    """The start-up's row: seconds from the command to its first batch, with each milestone on the way."""
    phases = run.startup_phases
    if "first_batch" not in phases:
        return []
    steps = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in phases.items())
    met = "met" if phases["first_batch"] < STARTUP_TARGET else "NOT MET"
    return [("sparkcdc start-up, command to first batch", f"{phases['first_batch']:.2f} s",
             f"from the process's start: {steps}; target < {STARTUP_TARGET:g} s (issue 31): {met}")]


def apply_phases(run: SparkcdcRun) -> str:
    """The apply's driver seconds per phase, from ``--summary``'s ``apply_seconds`` (census, plan,
    stage, commit, the executors' read, fold and stage): where an apply run's time goes."""
    return "; ".join(", ".join(f"{k} {v:.1f}" for k, v in sorted(seconds.items())) for seconds in run.apply_seconds.values())


# -- sparkcdc run --once, as a user runs it --------------------------------------------------------

@dataclass(frozen=True)
class SparkcdcRun:
    """One ``sparkcdc run --once``: the command's wall time and its ``--summary``."""

    wall_seconds: float  # the whole command: interpreter, JVM and Spark start-up, batches, shutdown
    startup_seconds: float  # until the streaming query started (mostly JVM and Spark start-up)
    batch_ms: tuple[int, ...]  # Spark's triggerExecution time of each micro-batch
    records: int
    apply_seconds: dict[str, dict[str, float]] = field(default_factory=dict)  # target -> phase -> driver seconds
    batch_ids: tuple[int, ...] = ()  # of each micro-batch, from the same progress: its id,
    batch_rows: tuple[int, ...] = ()  # its input rows,
    batch_started: tuple[float, ...] = ()  # and when its trigger began (epoch seconds)
    batch_phases_ms: tuple[dict[str, int], ...] = ()  # and Spark's durationMs (addBatch, queryPlanning …)
    command_window: tuple[float, float] = (0.0, 0.0)  # the whole command's start and end (epoch seconds)
    #: seconds from the command's start to each start-up milestone (runner, session, source, query,
    #: first_batch: the summary's ``startup_phases``)
    startup_phases: dict[str, float] = field(default_factory=dict)
    output_sizes: tuple[int, ...] = ()  # bytes of each topic file under --output when the command ended

    @property
    def processing_seconds(self) -> float:
        return sum(self.batch_ms) / 1000

    def batch(self, batch_id: int) -> int:
        """The index of micro-batch ``batch_id`` in this run's lists."""
        if batch_id not in self.batch_ids:
            raise SystemExit(f"batch {batch_id} is not among this run's batches {list(self.batch_ids)}")
        return self.batch_ids.index(batch_id)

    def batch_window(self, index: int) -> tuple[float, float]:
        """When micro-batch ``index`` ran: its trigger's start and end, in epoch seconds."""
        return self.batch_started[index], self.batch_started[index] + self.batch_ms[index] / 1000


def progress_line(run: int, label: str, events: int, ours: SparkcdcRun) -> str:
    """One sparkcdc drain's or snapshot's line of progress: its rates over processing and wall time."""
    return (f"  run {run}: {label} {events / ours.processing_seconds:,.0f} events/s processing "
            f"({ours.processing_seconds:.1f} s in {len(ours.batch_ms)} batch(es)); {events / ours.wall_seconds:,.0f} events/s "
            f"on wall time ({ours.wall_seconds:.1f} s, {ours.startup_seconds:.1f} s to the query's start)")


def write_properties(path: Path, props: Mapping[str, str]) -> Path:
    """A ``.properties`` connector configuration, as a user would write it."""
    path.write_text("".join(f"{key}={value}\n" for key, value in props.items()), encoding="utf-8")
    return path


def sparkcdc_properties(cluster: ThrowawayCluster, name: str, snapshot_mode: str) -> dict[str, str]:
    """sparkcdc's configuration for the ``bench`` table: its own slot and publication ``name``."""
    return {
        "name": name,
        "database.hostname": cluster.host,
        "database.port": str(cluster.port),
        "database.user": cluster.user,
        "database.password": "",
        "database.dbname": "postgres",
        "topic.prefix": "bench",
        "plugin.name": "pgoutput",
        "slot.name": name,
        "publication.name": name,
        "publication.autocreate.mode": "filtered",
        "table.include.list": "public.bench",
        "snapshot.mode": snapshot_mode,
    }


def run_sparkcdc(config: Path, output: Path | None, checkpoint: Path, *, master: str = "local[2]", timeout: float = 3600,
                 apply_to: str | None = None, kafka: str | None = None,
                 watch: Callable[[int], AbstractContextManager[object]] | None = None,
                 env: Mapping[str, str] | None = None) -> SparkcdcRun:
    """``python -m sparkcdc.cli run CONFIG --once`` (``--output`` and/or ``--apply-to``); its log goes next to the checkpoint.

    ``watch(pid)``, if given, is entered once the command has started (its process id: the driver's
    Python process) and left when it has ended: to sample its memory while it runs, say. ``env``:
    variables added to this process's environment for the command."""
    summary = checkpoint.parent / f"{checkpoint.name}-summary.json"
    log = checkpoint.parent / f"{checkpoint.name}-run.log"
    argv = [sys.executable, "-m", "sparkcdc.cli", "run", str(config), "--checkpoint", str(checkpoint),
            "--once", "--master", master, "--summary", str(summary)]
    argv += ["--output", str(output)] if output is not None else []
    argv += ["--apply-to", apply_to] if apply_to is not None else []
    argv += ["--kafka", kafka] if kafka is not None else []
    summary.unlink(missing_ok=True)
    with open(log, "wb") as handle:
        started, started_epoch = time.perf_counter(), time.time()
        process = subprocess.Popen(argv, stdout=handle, stderr=subprocess.STDOUT, env=None if env is None else {**os.environ, **env})
        try:
            with watch(process.pid) if watch is not None else nullcontext():
                code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise SystemExit(f"sparkcdc run did not finish in {timeout:.0f} s; log: {log}") from None
        finally:
            if process.poll() is None:  # timed out, or the watch failed: no process left behind
                process.kill()
                process.wait()
        wall = time.perf_counter() - started
        ended_epoch = time.time()
    if code != 0 or not summary.exists():
        tail = log.read_text(errors="replace")[-4000:]
        raise SystemExit(f"sparkcdc run failed (exit code {code}):\n{tail}")
    data = json.loads(summary.read_text())
    sizes = () if output is None else tuple(path.stat().st_size for path in published_files(output))
    return SparkcdcRun(wall, float(data["startup_seconds"]), tuple(int(ms) for ms in data["batch_durations_ms"]),
                       int(data["records"]), data.get("apply_seconds") or {},
                       batch_ids=tuple(data["batch_ids"]), batch_rows=tuple(data["batch_input_rows"]),
                       batch_started=tuple(spark_timestamp(stamp) for stamp in data["batch_timestamps"]),
                       batch_phases_ms=tuple(data.get("batch_phases_ms") or ()), command_window=(started_epoch, ended_epoch),
                       output_sizes=sizes, startup_phases=data.get("startup_phases") or {})


@dataclass
class OutputCheck:
    """What the topic directories hold: lines, lines per ``op``, and row ids seen more than once."""

    lines: int = 0
    ops: Counter[str] = field(default_factory=Counter)
    ids: dict[str, bytearray] = field(default_factory=dict)  # op -> one byte per id: times seen
    samples: list[dict] = field(default_factory=list)
    unwrapped: bool = False  # the values are ExtractNewRecordState's rows with add.fields=op

    def ids_exactly(self, op: str, count: int) -> bool:
        """Every id 1..count seen exactly once with ``op``, and no other."""
        seen = self.ids.get(op, bytearray(1))
        return seen[0] == 0 and seen[1:count + 1] == b"\x01" * count and seen.count(0) == len(seen) - count

    def problems(self, expected: Mapping[str, int]) -> list[str]:
        found = []
        if self.lines != sum(expected.values()):
            found.append(f"{self.lines:,} lines, expected {sum(expected.values()):,}")
        if dict(self.ops) != dict(expected):
            found.append(f"ops {dict(self.ops)}, expected {dict(expected)}")
        for op, count in expected.items():
            if not self.ids_exactly(op, count):
                found.append(f"op {op!r}: the ids are not exactly 1..{count:,}, each once")
        for line in self.samples:
            payload = json.loads(line["value"])["payload"]
            if self.unwrapped:  # ExtractNewRecordState with add.fields=op: the row, and its op as __op
                good = payload.get("__op") in expected and set(payload) == {*_BENCH_COLUMNS, "__op"}
            else:
                good = payload["op"] in expected and set(payload["after"]) == _BENCH_COLUMNS
            if not good:
                found.append(f"unexpected sampled event: {json.dumps(payload)[:300]}")
        return found


#: The most common transform line of Debezium configurations: flat rows, with the operation as ``__op``
#: (``--unwrap`` of stream.py and snapshot.py).
UNWRAP = {"transforms": "unwrap", "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
          "transforms.unwrap.add.fields": "op"}

_BENCH_COLUMNS = {"id", "qty", "label", "price", "created", "active"}


_OP = b'\\"op\\":\\"'  # "op":" inside the value's JSON text, as it is escaped in the line
_AFTER_ID = b'\\"after\\":{\\"id\\":'
_RAW_OP, _RAW_AFTER_ID = b'"op":"', b'"after":{"id":'  # the same in a value as Kafka holds it
_UNWRAPPED_OP, _UNWRAPPED_ID = b'\\"__op\\":\\"', b'\\"payload\\":{\\"id\\":'  # the same after unwrap (add.fields=op)


def check_output(output: Path, id_limit: int, sample_every: int = 10_000, *, unwrapped: bool = False) -> OutputCheck:
    """Count the lines of the topic files under ``output`` (plain or zstd) without parsing them all: each line's ``op``
    and ``after.id`` are found by byte search (the last ``op`` of a line is the payload's), and one
    line in ``sample_every`` is parsed in full. ``unwrapped``: the values are ExtractNewRecordState's
    rows with ``add.fields=op`` (``__op`` and the row's ``id`` are searched instead)."""
    check = OutputCheck(unwrapped=unwrapped)
    op_mark, id_mark = (_UNWRAPPED_OP, _UNWRAPPED_ID) if unwrapped else (_OP, _AFTER_ID)
    for path in published_files(output):
        with open_topic_file(path) as handle:
            for raw in io.BufferedReader(handle, 1 << 20):  # type: ignore[arg-type]
                _count(check, raw, id_limit, op_mark, id_mark, last_id=unwrapped)
                if check.lines % sample_every == 1:
                    check.samples.append(json.loads(raw))
    return check


def check_values(values: Iterable[bytes], id_limit: int) -> OutputCheck:
    """:func:`check_output` for Debezium JSON values as Kafka holds them (a record's value, unquoted)."""
    check = OutputCheck()
    for raw in values:
        _count(check, raw, id_limit, _RAW_OP, _RAW_AFTER_ID)
    return check


def _count(check: OutputCheck, raw: bytes, id_limit: int, op_mark: bytes, id_mark: bytes, *, last_id: bool = False) -> None:
    """``last_id``: the id is the last match of ``id_mark`` (an unwrapped value's payload comes after the key's)."""
    check.lines += 1
    at = raw.rfind(op_mark)
    op = raw[at + len(op_mark):at + len(op_mark) + 1].decode() if at >= 0 else "?"
    check.ops[op] += 1
    at = raw.rfind(id_mark) if last_id else raw.find(id_mark)
    if at >= 0:
        start = at + len(id_mark)
        end = raw.find(b",", start)
        row_id = int(raw[start:end])
        seen = check.ids.get(op)
        if seen is None:
            seen = check.ids[op] = bytearray(id_limit + 1)
        if 0 < row_id <= id_limit:
            seen[row_id] = min(seen[row_id] + 1, 255)
        else:
            seen[0] = 1


def drop_slot_when_free(conn: psycopg.Connection, slot: str, timeout: float = 60) -> None:
    """Drop ``slot`` if it exists (its walsender may need a moment to release it), so that it does not
    keep WAL for the rest of the benchmark."""
    from sparkcdc.postgres import drop_slot

    drop_slot(conn, slot, wait=timeout)


# -- the whole machine's CPU --------------------------------------------------------------------

class MachineCpu:
    """Busy CPU seconds of the whole machine (every core: PostgreSQL, the JVMs, Python, the writer,
    and anything else running), sampled from ``/proc/stat`` every ``interval`` seconds while the
    block runs, so that the busy time of a window known only afterwards (a Spark batch's trigger,
    from its progress) can be read off: ``with MachineCpu() as cpu: ...; cpu.busy_between(t0, t1)``.

    Busy is user + nice + system + irq + softirq + steal (guest time is inside user); idle and
    iowait are not. Between two samples the busy time is taken as linear, so a window is exact to
    about ``interval`` at either end."""

    def __init__(self, interval: float = 0.1) -> None:
        self.interval = interval
        self.samples: list[tuple[float, float]] = []  # (epoch seconds, busy CPU seconds since boot)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True, name="machine-cpu")
        self._tick = os.sysconf("SC_CLK_TCK")

    def _busy(self) -> float:
        with open("/proc/stat", "rb") as handle:
            fields = handle.readline().split()  # cpu user nice system idle iowait irq softirq steal guest guest_nice
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[1:9])
        return (user + nice + system + irq + softirq + steal) / self._tick

    def _sample(self) -> None:
        while True:
            self.samples.append((time.time(), self._busy()))
            if self._stop.wait(self.interval):  # a sampling period, not a synchronisation
                self.samples.append((time.time(), self._busy()))
                return

    def __enter__(self) -> MachineCpu:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def busy_between(self, start: float, end: float) -> float:
        """Busy CPU seconds of the machine from ``start`` to ``end`` (epoch seconds, inside the block)."""
        if not self.samples or start < self.samples[0][0] - self.interval or end > self.samples[-1][0] + self.interval:
            raise SystemExit(f"no CPU samples cover {start:.1f} to {end:.1f}")
        return self._busy_at(end) - self._busy_at(start)

    def _busy_at(self, moment: float) -> float:
        times = [t for t, _ in self.samples]
        i = min(max(bisect.bisect_left(times, moment), 1), len(times) - 1)
        (t0, b0), (t1, b1) = self.samples[i - 1], self.samples[i]
        return b0 + (b1 - b0) * min(max((moment - t0) / (t1 - t0), 0.0), 1.0) if t1 > t0 else b1


# -- the physical limits: the same work without sparkcdc --------------------------------------------

def drain_pg_recvlogical(cluster: ThrowawayCluster, slot: str, end_lsn: int, publications: Sequence[str] = ("bench",),
                         *, messages: bool = False) -> float:
    """Seconds for ``pg_recvlogical`` to drain ``slot`` up to ``end_lsn`` into /dev/null: pgoutput,
    ``proto_version=1`` and ``publications``; ``messages``: with logical decoding messages too (as
    sparkcdc's reader asks for them). What the walsender can send for one slot, with nothing done
    with it: the physical limit of reading a slot."""
    argv = [
        str(cluster.bindir / "pg_recvlogical"), "-d", cluster.conninfo(), "--slot", slot, "--start",
        "--endpos", format_lsn(end_lsn), "--no-loop", "-f", "/dev/null",
        "-o", "proto_version=1", "-o", f"publication_names={','.join(publications)}",
        *(["-o", "messages=true"] if messages else []),
    ]
    started = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    return time.perf_counter() - started


def limit_rows(ours: SparkcdcRun, name: str, seconds: float, figure: str, notes: str, short: str) -> list[tuple[str, str, str]]:
    """A physical limit's row (it took ``seconds``), then sparkcdc's processing and wall time over its
    time: how many times the limit's time sparkcdc takes (1 would be at the limit)."""
    return [
        (name, figure, notes),
        (f"time ratio sparkcdc processing / {short}", f"{ours.processing_seconds / seconds:.2f}x",
         f"sparkcdc's processing time ({ours.processing_seconds:.2f} s) over {short}'s ({seconds:.2f} s)"),
        (f"time ratio sparkcdc wall / {short}", f"{ours.wall_seconds / seconds:.2f}x",
         f"sparkcdc's whole command, start-up included ({ours.wall_seconds:.2f} s), over {short}'s"),
    ]


#: Issue 31: sparkcdc's processing time within 1.5x of the write floor's.
WRITE_FLOOR_TARGET = 1.5
_FLOOR_WRITE = 1 << 20  # bytes a write of the floor writes at most (dd's bs=1M)


@dataclass(frozen=True)
class WriteFloor:
    """Writing ``size`` bytes in ``files`` files with ``processes`` writers (:func:`write_floor`)."""

    processes: int
    files: int
    size: int
    seconds: float

    @property
    def gb_per_second(self) -> float:
        return self.size / 1e9 / self.seconds


def write_floor(directory: Path, sizes: Sequence[int], processes: int) -> WriteFloor:
    """What writing files of ``sizes`` bytes of JSON lines costs on this machine by itself, under the
    new ``directory`` (the output's file system): the physical limit of writing a run's topic files.

    The files' bytes, taken in order, are cut into ``processes`` runs of about equal size (a file may
    be written by two), each written by a process of its own in 1 MiB ``pwrite`` calls from one
    buffer of JSON lines, as ``dd bs=1M`` would. Then, as sparkcdc's publisher does with topic files
    (``publish_batch`` in sparkcdc/spark/outputs/topic_files/staging.py, which ``run --output``
    calls with ``fsync=True``), each file is fsynced in turn, and the directory. Timed from the
    moment every process is ready to the directory's fsync; the files are deleted afterwards."""
    directory.mkdir(parents=True)
    paths = [str(directory / f"part-{n:05d}.jsonl") for n in range(len(sizes))]
    shares = _floor_shares(paths, sizes, processes)
    context = multiprocessing.get_context("fork")  # the writers need nothing but this function and their share
    ready, done = context.Barrier(processes + 1), context.Barrier(processes + 1)
    writers = [context.Process(target=_write_share, args=(share, ready, done), daemon=True) for share in shares]
    try:
        for writer in writers:
            writer.start()
        ready.wait(timeout=120)
        began = time.perf_counter()
        done.wait(timeout=3600)
        for path in paths:
            _fsync(path, os.O_RDONLY)
        _fsync(str(directory), os.O_RDONLY | os.O_DIRECTORY)
        seconds = time.perf_counter() - began
        for writer in writers:
            writer.join()
            if writer.exitcode != 0:
                raise SystemExit(f"a write floor process failed (exit code {writer.exitcode})")
    finally:
        for writer in writers:
            if writer.is_alive():
                writer.kill()
                writer.join()
        shutil.rmtree(directory, ignore_errors=True)
    return WriteFloor(processes, len(sizes), sum(sizes), seconds)


def _floor_shares(paths: Sequence[str], sizes: Sequence[int], processes: int) -> list[list[tuple[str, int, int]]]:
    """Each process's ``(path, offset, length)`` pieces: the files' bytes in order, cut at page
    boundaries into ``processes`` runs of about equal size (empty files go to the first)."""
    total = sum(sizes)
    cuts = [total * k // processes // 4096 * 4096 for k in range(processes)] + [total]
    shares: list[list[tuple[str, int, int]]] = [[] for _ in range(processes)]
    start = 0
    for path, size in zip(paths, sizes, strict=True):
        if size == 0:
            shares[0].append((path, 0, 0))
        for k in range(processes):
            low, high = max(start, cuts[k]), min(start + size, cuts[k + 1])
            if high > low:
                shares[k].append((path, low - start, high - low))
        start += size
    return shares


def _write_share(share: Sequence[tuple[str, int, int]], ready: threading.Barrier, done: threading.Barrier) -> None:
    """A write floor process: its pieces written once every process is ready (then it waits for the others)."""
    line = (b'{"key":"{\\"id\\":1}","value":"{\\"payload\\":{\\"id\\":1,\\"op\\":\\"c\\"}}","headers":[],'
            b'"lsn":1,"commit_lsn":1,"ordinal":0}\n')
    block = memoryview((line * (_FLOOR_WRITE // len(line) + 1))[:_FLOOR_WRITE])
    ready.wait()
    try:
        for path, offset, length in share:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                at, end = offset, offset + length
                while at < end:
                    at += os.pwrite(fd, block[:min(len(block), end - at)], at)
            finally:
                os.close(fd)
    except BaseException:
        done.abort()  # the waiting parent fails at once, not at its timeout
        raise
    done.wait()


def _fsync(path: str, flags: int) -> None:
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_floor_rows(directory: Path, ours: SparkcdcRun) -> list[tuple[str, str, str]]:
    """The write floor of ``ours``'s topic files (their sizes, in ``directory`` on the output's file
    system) with one and with two writer processes, and sparkcdc's processing time over the faster."""
    if not ours.output_sizes:
        raise SystemExit("the sparkcdc run wrote no topic files: no write floor to measure")
    floors = [write_floor(directory, ours.output_sizes, processes) for processes in (1, 2)]
    rows = [(f"write floor, {floor.processes} writer process{'es' if floor.processes > 1 else ''}",
             f"{floor.gb_per_second:.2f} GB/s",
             f"{floor.seconds:.2f} s for the {floor.size:,} bytes of JSON lines sparkcdc's topic files held, in "
             f"{floor.files} file(s) of their sizes, same file system, 1 MiB writes, each file fsynced and the "
             "directory (as sparkcdc's publisher does)") for floor in floors]
    best = min(floors, key=lambda floor: floor.seconds)
    ratio = ours.processing_seconds / best.seconds
    met = "met" if ratio <= WRITE_FLOOR_TARGET else "NOT MET"
    return [*rows, ("time ratio sparkcdc processing / write floor", f"{ratio:.2f}x",
                    f"over the faster floor ({best.processes} process(es), {best.seconds:.2f} s); "
                    f"target <= {WRITE_FLOOR_TARGET:g} (issue 31): {met}")]


def physical_limits(source: str, measure_source: Callable[[], list[tuple[str, str, str]]], floor_directory: Path,
                    ours: SparkcdcRun, *, benchmark_began: float) -> list[tuple[str, str, str]]:
    """The rows of the physical limits: the source's (``measure_source``, named ``source``: its
    :func:`limit_rows`), then the write floor of ``ours``'s topic files (:func:`write_floor_rows`).
    What they took is printed, with their share of the benchmark's time since ``benchmark_began``."""
    began = time.perf_counter()
    rows = measure_source()
    measured = time.perf_counter()
    rows += write_floor_rows(floor_directory, ours)
    ended = time.perf_counter()
    print(f"physical limits measured in {ended - began:.1f} s ({source} {measured - began:.1f} s, write floors "
          f"{ended - measured:.1f} s): {(ended - began) / (ended - benchmark_began):.0%} of the benchmark's time")
    return rows


# -- Debezium vs sparkcdc: the figures, printed and recorded ----------------------------------------

@dataclass(frozen=True)
class DebeziumRun:
    to_first_seconds: float  # engine start to the first record
    steady_seconds: float  # first record to the last
    first_epoch: float = 0.0  # when the first and the last record arrived (epoch seconds, 0 if not
    last_epoch: float = 0.0  # taken): the window to read the machine's CPU over (MachineCpu)

    @property
    def total_seconds(self) -> float:
        return self.to_first_seconds + self.steady_seconds


def report_comparison(
    benchmark: str,
    events: int,
    debezium_runs: Sequence[DebeziumRun],
    our_runs: Sequence[SparkcdcRun],
    *,
    target: float,
    jvm_seconds: float,
    workload: str,
    note: str,
    record: bool,
    cpu: MachineCpu | None = None,
    limits: Sequence[tuple[str, str, str]] = (),
) -> None:
    """Print the medians (Debezium by steady time, sparkcdc by processing time) and the ratios; with
    ``record``, append them to RESULTS.md with the per-run rates. With ``cpu`` (sampled over the
    runs), each median run's events per busy CPU-second of the whole machine too: Debezium over its
    first to last record, sparkcdc over its micro-batches and over the whole command. ``limits``:
    more rows of the table (the physical limits, :func:`limit_rows` and :func:`write_floor_rows`)."""
    dbz = median(debezium_runs, key=lambda r: r.steady_seconds)
    ours = median(our_runs, key=lambda r: r.processing_seconds)
    dbz_steady, dbz_total = events / dbz.steady_seconds, events / dbz.total_seconds
    our_processing, our_wall = events / ours.processing_seconds, events / ours.wall_seconds
    ratio, ratio_total = our_processing / dbz_steady, our_wall / dbz_total
    met = "met" if ratio >= target else "NOT MET"
    batches = ", ".join(f"{ms / 1000:.1f}" for ms in ours.batch_ms)
    print(f"median of {len(debezium_runs)} and {len(our_runs)} runs, {events:,} events:")
    print(f"Debezium 3.6.3      : {dbz_steady:>9,.0f} events/s steady  ({dbz.steady_seconds:.1f} s first to last record); "
          f"{dbz_total:,.0f} events/s total ({dbz.total_seconds:.1f} s from the engine's start; JVM start-up "
          f"{jvm_seconds:.1f} s apart)")
    print(f"sparkcdc processing : {our_processing:>9,.0f} events/s  ({ours.processing_seconds:.1f} s in {len(ours.batch_ms)} "
          f"micro-batch(es): {batches} s)")
    print(f"sparkcdc wall       : {our_wall:>9,.0f} events/s  ({ours.wall_seconds:.1f} s incl. {ours.startup_seconds:.1f} s "
          "to the query's start)")
    print(f"ratio sparkcdc / Debezium = {ratio:.2f} processing/steady (target >= {target:g}: {met}), "
          f"{ratio_total:.2f} wall/total")
    cpu_rows: list[tuple[str, str, str]] = []
    if cpu is not None:
        dbz_cpu = cpu.busy_between(dbz.first_epoch, max(dbz.last_epoch, dbz.first_epoch + cpu.interval))
        batch_cpu = sum(cpu.busy_between(*ours.batch_window(i)) for i in range(len(ours.batch_ms)))
        wall_cpu = cpu.busy_between(*ours.command_window)
        cpu_rows = [
            ("Debezium 3.6.3 per machine CPU-second", f"{events / max(dbz_cpu, 1e-3):,.0f} events/CPU-s",
             f"{dbz_cpu:.1f} CPU-s of the whole machine (2 cores) from first to last record"),
            ("sparkcdc per machine CPU-second, processing", f"{events / max(batch_cpu, 1e-3):,.0f} events/CPU-s",
             f"{batch_cpu:.1f} CPU-s of the whole machine over the micro-batches"),
            ("sparkcdc per machine CPU-second, whole command", f"{events / max(wall_cpu, 1e-3):,.0f} events/CPU-s",
             f"{wall_cpu:.1f} CPU-s of the whole machine over the whole command"),
        ]
    startup = startup_rows(ours)
    for name, figure, notes in [*cpu_rows, *startup, *limits]:
        print(f"{name}: {figure} ({notes})")
    if not record:
        return
    per_run = (f"per run: Debezium {' / '.join(f'{events / r.steady_seconds:,.0f}' for r in debezium_runs)} events/s "
               f"steady; sparkcdc {' / '.join(f'{events / r.processing_seconds:,.0f}' for r in our_runs)} processing, "
               f"{' / '.join(f'{events / r.wall_seconds:,.0f}' for r in our_runs)} wall")
    record_result(
        benchmark,
        f"{workload}; medians, alternating order ({per_run})",
        [
            ("Debezium 3.6.3 steady (embedded, JsonConverter, counting consumer)", f"{dbz_steady:,.0f} events/s",
             f"{dbz.steady_seconds:.1f} s first to last record"),
            ("Debezium 3.6.3 total", f"{dbz_total:,.0f} events/s",
             f"{dbz.total_seconds:.1f} s from the engine's start (JVM already running; its start-up took {jvm_seconds:.1f} s)"),
            ("sparkcdc processing (`run --once`, local[2], JSON lines written)", f"{our_processing:,.0f} events/s",
             f"{ours.processing_seconds:.1f} s: Spark's triggerExecution summed over {len(ours.batch_ms)} micro-batch(es) "
             f"({batches} s)"),
            ("sparkcdc wall, incl. start-up", f"{our_wall:,.0f} events/s",
             f"{ours.wall_seconds:.1f} s for the whole command; {ours.startup_seconds:.1f} s to the query's start"),
            ("ratio processing / Debezium steady", f"{ratio:.2f}", f"target >= {target:g}: {met}"),
            ("ratio wall / Debezium total", f"{ratio_total:.2f}", "start-up included on both sides (Debezium's JVM excepted)"),
            *cpu_rows,
            *startup,
            *limits,
        ],
        note,
    )


def settings_argument(values: Sequence[str]) -> dict[str, str]:
    """The ``--set NAME=VALUE`` arguments of a benchmark (repeatable) as properties: the settings of
    its A/B variant, run beside the default configuration in the same run (issue 31: each speed
    setting that stays has its A/B in RESULTS.md)."""
    settings: dict[str, str] = {}
    for value in values:
        name, sep, setting = value.partition("=")
        if not sep or not name.strip():
            raise SystemExit(f"--set {value!r}: expected NAME=VALUE, a property and its value")
        settings[name.strip()] = setting.strip()
    return settings


def settings_label(settings: Mapping[str, str]) -> str:
    """``a=1, b=2``: how the A/B variant's settings are named in the output and RESULTS.md."""
    return ", ".join(f"{name}={value}" for name, value in settings.items())


def report_setting_ab(benchmark: str, events: int, settings: Mapping[str, str], default_runs: Sequence[SparkcdcRun],
                      set_runs: Sequence[SparkcdcRun], debezium_runs: Sequence[DebeziumRun], *, target: float,
                      jvm_seconds: float, record: bool, cpu: MachineCpu | None, what: str) -> None:
    """The A/B of ``settings`` against the default configuration (medians by processing time, same
    changes, alternating drains): printed as ``sparkcdc with <settings> / default = ...``, and
    recorded as ``<benchmark>-set`` beside the default's entry, with the ratio in its workload."""
    default = median(default_runs, key=lambda r: r.processing_seconds)
    varied = median(set_runs, key=lambda r: r.processing_seconds)
    processing = default.processing_seconds / varied.processing_seconds
    wall = default.wall_seconds / varied.wall_seconds
    per_run = " / ".join(f"{events / d.processing_seconds:,.0f} vs {events / s.processing_seconds:,.0f}"
                         for d, s in zip(default_runs, set_runs, strict=True))
    label = settings_label(settings)
    print(f"sparkcdc with {label} / default = {processing:.2f} processing rate, {wall:.2f} wall "
          f"(per run, default vs set: {per_run} events/s processing)")
    report_comparison(
        f"{benchmark}-set", events, debezium_runs, set_runs, target=target, jvm_seconds=jvm_seconds, record=record, cpu=cpu,
        workload=(f"the same {what} and Debezium runs as the `{benchmark}` entry recorded with it; sparkcdc `run --once` with "
                  f"{label}, the default configuration otherwise: {processing:.2f}x the default's processing rate and "
                  f"{wall:.2f}x its wall rate (medians; per run, default vs set: {per_run} events/s processing)"),
        note=f"A/B of {label}: compare with `{benchmark}` (the default configuration) of the same run.",
    )


def exit_after(main: Callable[[], None]) -> NoReturn:
    """Run a benchmark's ``main`` and leave the process with ``os._exit``. The scripts that embed
    Debezium's JVM (JPype, never destroyed: see tests/support/debezium_jvm.py) were seen to abort at
    the interpreter's exit, after every figure was printed and every cluster stopped ("FATAL:
    exception not rethrown", exit status 134: a JVM thread unwound while the process tore down), one
    run in four at 2,000 changes; their tests then fail on the exit status alone. ``main``'s own
    exit status (a ``SystemExit`` naming what is wrong, or an exception's traceback) is kept."""
    code = 0
    try:
        main()
    except SystemExit as exc:
        if isinstance(exc.code, int):
            code = exc.code
        elif exc.code is not None:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException:  # noqa: BLE001 - reported as the interpreter would, then the exit status 1
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
