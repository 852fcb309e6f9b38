"""Helpers for Spark tests: connector properties for the session cluster, reading topic output."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import psycopg

from sparkcdc.embedded_postgres import ThrowawayCluster
from sparkcdc.spark.outputs.topic_files.staging import open_topic_file, published_files
from sparkcdc.spark.runner import run_pipeline

from ..support.processes import GroupProcess
from ..support.waiting import wait_until


def properties(cluster: ThrowawayCluster, name: str, tables: list[str], **overrides: Any) -> dict[str, str]:
    props = {
        "name": name,
        "database.hostname": cluster.host,
        "database.port": str(cluster.port),
        "database.user": cluster.user,
        "database.dbname": "postgres",
        "topic.prefix": "srv",
        "slot.name": name,
        "publication.name": name,
        "publication.autocreate.mode": "filtered",
        "table.include.list": ",".join(tables),
        # A SIGKILLed run's walsender can hold the slot for a moment after: retry within half a
        # second rather than Debezium's 10 s (the kill tests restart runs twenty times).
        "slot.retry.delay.ms": "500",
    }
    props.update({k: str(v) for k, v in overrides.items()})
    return props


def incremental_properties(cluster: ThrowawayCluster, name: str, *, chunk_size: int, **overrides: Any) -> dict[str, str]:
    """The incremental snapshot tests' connector: ``<name>_a`` and ``<name>_b`` captured without an
    initial snapshot, signals through ``<name>_signal`` (see tests/support/incremental.py)."""
    return properties(cluster, name, [rf"public\.{name}_a", rf"public\.{name}_b"], **{
        "snapshot.mode": "no_data", "signal.data.collection": f"public.{name}_signal",
        "incremental.snapshot.chunk.size": str(chunk_size), **overrides,
    })


def events_of(lines: list[dict[str, Any]], name: str, table: str) -> list[dict[str, Any] | None]:
    """The payloads (None: a tombstone) of the topic of table ``<name>_<table>``, in commit order."""
    return [payload(line) for line in lines if line["topic"] == f"srv.public.{name}_{table}"]


class _ParsedTopicFiles:
    """The parsed lines (and payloads) of published topic files, kept while each file stays as it is
    (its inode, size and mtime): tests poll the output with ``wait_until``, and parsing every line of
    a 200,000-row snapshot again on each poll (twice more for the payload) cost minutes of CPU per
    test once the suite ran in two workers on two cores. A replayed batch that replaces a file is
    parsed again. At most :attr:`LIMIT` lines are kept, the files least recently read dropped first."""

    LIMIT = 400_000

    def __init__(self) -> None:
        self._files: dict[Path, tuple[tuple[int, int, int], list[dict[str, Any]]]] = {}
        self._payloads: dict[int, tuple[dict[str, Any], dict[str, Any] | None]] = {}  # id(line) -> (line, payload)
        self._kept = 0

    def lines(self, path: Path) -> list[dict[str, Any]]:
        status = path.stat()
        identity = (status.st_ino, status.st_size, status.st_mtime_ns)
        cached = self._files.pop(path, None)
        if cached is not None and cached[0] == identity:
            self._files[path] = cached  # the most recently read goes last
            return cached[1]
        if cached is not None:
            self._forget(cached[1])
        with open_topic_file(path) as handle:
            text = handle.read().decode("utf-8")
        lines = []
        for raw in text.split("\n")[:-1]:  # each line ends with \n
            line = json.loads(raw)
            line["topic"] = path.parent.name
            lines.append(line)
        self._files[path] = (identity, lines)
        self._kept += len(lines)
        while self._kept > self.LIMIT and len(self._files) > 1:
            oldest = next(iter(self._files))
            self._forget(self._files.pop(oldest)[1])
        return lines

    def payload(self, line: dict[str, Any]) -> dict[str, Any] | None:
        known = self._payloads.get(id(line))
        if known is not None and known[0] is line:
            return known[1]
        parsed = None if line["value"] is None else json.loads(line["value"])["payload"]
        if known is None and len(self._payloads) < self._kept:  # a line of a kept file (else not remembered)
            self._payloads[id(line)] = (line, parsed)
        return parsed

    def _forget(self, lines: list[dict[str, Any]]) -> None:
        self._kept -= len(lines)
        for line in lines:
            self._payloads.pop(id(line), None)


_PARSED = _ParsedTopicFiles()


def output_lines(output: Path, *, up_to_batch: int | None = None) -> list[dict[str, Any]]:
    """Every line under the topic directories (of batches up to ``up_to_batch``), in commit order.
    The line dicts are shared between calls (see :class:`_ParsedTopicFiles`): read them, do not change them."""
    lines = []
    for path in published_files(output):
        if up_to_batch is not None and int(path.name.split("-")[1]) > up_to_batch:
            continue
        lines.extend(_PARSED.lines(path))
    lines.sort(key=lambda line: (line["commit_lsn"], line["lsn"], line["ordinal"]))
    return lines


def payload(line: dict[str, Any]) -> dict[str, Any] | None:
    return _PARSED.payload(line)


def run_once(props: dict[str, str], output: Path, checkpoint: Path) -> object:
    return run_pipeline(props, output=output, checkpoint=checkpoint, once=True, master="local[2]")


def checkpoint_batches(checkpoint: Path, kind: str) -> list[int]:
    """The batch ids in the checkpoint's ``offsets`` or ``commits`` log, ascending."""
    folder = checkpoint / kind
    return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit()) if folder.is_dir() else []


def checkpoint_offset(checkpoint: Path, batch: int) -> dict[str, Any]:
    """The source offset the checkpoint's offset log holds for ``batch`` (the file's last line)."""
    return json.loads((checkpoint / "offsets" / str(batch)).read_text().splitlines()[-1])


def server_now(db: psycopg.Connection) -> object:
    """The server's clock: compared with ``pg_stat_activity.backend_start``, it tells a run's backends from
    those of a killed run, which can outlive it for a moment."""
    row = db.execute("SELECT clock_timestamp()").fetchone()
    assert row is not None
    return row[0]


def start_run(config: Path, output: Path, checkpoint: Path, log: Path, once: bool = False, summary: Path | None = None) -> GroupProcess:
    """One ``sparkcdc run`` process in its own process group (so that a SIGKILL takes its Spark with it)."""
    argv = [sys.executable, "-m", "sparkcdc.cli", "run", str(config), "--output", str(output),
            "--checkpoint", str(checkpoint), "--master", "local[2]"] + (["--once"] if once else [])
    argv += ["--summary", str(summary)] if summary else []
    return GroupProcess(argv, log)


#: A continuous run_pipeline applying to targets, in a process of its own (see PipelineProcess).
RUNNER = """
import json, logging, sys
logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
logging.getLogger("sparkcdc.apply").setLevel(logging.INFO)
from sparkcdc.spark.runner import run_pipeline
spec = json.load(open(sys.argv[1]))
run_pipeline(spec["properties"], output=None, checkpoint=spec["checkpoint"], master="local[2]", once=spec["once"],
             apply_to=[tuple(t) for t in spec["targets"]], trigger_interval="300 milliseconds")
"""


def _commits(checkpoint: Path) -> int:
    folder = checkpoint / "commits"
    return len([p for p in folder.iterdir() if p.name.isdigit()]) if folder.is_dir() else 0


class PipelineProcess:
    """``run_pipeline`` in a process of its own (killed with its Spark by SIGKILL); as a context
    manager, whatever runs is killed at the end, so a failing test leaves no Spark behind."""

    def __init__(self, tmp_path: Path, props: dict[str, str], targets: list[tuple[str, int]]) -> None:
        self.spec = tmp_path / "run.json"
        self.checkpoint = tmp_path / "checkpoint"
        self.log = tmp_path / "runs.log"
        self.spec.write_text(json.dumps({"properties": props, "checkpoint": str(self.checkpoint), "targets": targets, "once": False}))
        self.process: GroupProcess | None = None

    def context(self) -> str:
        return self.log.read_text(errors="replace")[-4000:] if self.log.exists() else ""

    def start(self) -> None:
        before = _commits(self.checkpoint)
        self.process = GroupProcess([sys.executable, "-c", RUNNER, str(self.spec)], self.log)
        wait_until(lambda: _commits(self.checkpoint) > before or self.process.process.poll() is not None,
                   timeout=300, interval=0.05, what=f"a batch to commit\n{self.context()}")
        self.alive()

    def alive(self) -> None:
        assert self.process is not None and self.process.process.poll() is None, f"the pipeline exited:\n{self.context()}"

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()

    def __enter__(self) -> PipelineProcess:
        return self

    def __exit__(self, *_exc: object) -> None:
        if self.process is not None and self.process.process.poll() is None:
            self.process.kill()


def kills_for(pg_major: str, full: int) -> int:
    """How many SIGKILLs a kill test deals on ``pg_major``: ``full`` on the machine's 15; a third (at
    least 2) on 18, whose own risks (its slots, exported snapshots and decoding) the first kills of
    each phase already meet. Each kill costs a whole process start (a JVM and Spark), and both
    majors run in one `make test` (measured 2026-11-28: the kill modules took 30 of its 77 minutes
    with 7/5/10 kills on 15 and half as many on 18)."""
    return full if pg_major == "15" else max(2, full // 3)
