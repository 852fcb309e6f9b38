"""Which executors (and workers) ran which stage, read from Spark's event log.

A driver started with ``spark.eventLog.enabled=true`` writes every listener event as a JSON line
under ``spark.eventLog.dir`` (Spark 4 writes a directory ``eventlog_v2_<app id>`` of rolling files
``events_<n>_<app id>``; ``spark.eventLog.compress`` must be false here). This module joins:

- ``SparkListenerExecutorAdded``: an executor and its log URLs, which a standalone worker serves
  from its own web UI, so they name the worker even when every worker has the same host;
- ``SparkListenerJobStart``: a job's stages and properties (``streaming.sql.batchId``: the
  micro-batch the job belongs to);
- ``SparkListenerStageCompleted``: a stage's name, details (call site) and RDDs, whose scopes name
  the physical operators (``MicroBatchScan``: the streaming source's read; ``MapInArrow``...);
- ``SparkListenerTaskEnd``: the executor of each task.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["AppLog", "StageRun", "read_event_logs"]

SOURCE_OPERATOR = "MicroBatchScan"  # the physical operator of a streaming source's scan (the RDD's scope)


@dataclass(frozen=True)
class StageRun:
    """One stage attempt of one application, with where its tasks ran."""

    app_id: str
    stage_id: int
    attempt: int
    name: str
    details: str
    operators: tuple[str, ...]  # the stage's RDDs: their scope names (physical operators) and RDD names
    batch_id: int | None  # the micro-batch of the job that ran it (None: not a streaming job)
    job_description: str  # spark.job.description of that job (a streaming batch's: query name, ids, batch)
    tasks: int  # task ends seen (retries and speculative copies included)
    executors: frozenset[str]
    workers: frozenset[str]  # of those executors; "?" for an executor no worker is known for

    @property
    def reads_source(self) -> bool:
        """The stage's lineage holds the streaming source's scan (it may still read a persisted copy:
        see :meth:`AppLog.source_stage`)."""
        return SOURCE_OPERATOR in self.operators

    def matches(self, pattern: str) -> bool:
        """Whether the regular expression ``pattern`` (case-insensitive) is found in the stage's name,
        details (its call site), operators or its job's description."""
        text = "\n".join((self.name, self.details, self.job_description, *self.operators))
        return re.search(pattern, text, re.IGNORECASE) is not None

    def describe(self) -> str:
        batch = "" if self.batch_id is None else f" batch {self.batch_id}"
        operators = ", ".join(sorted({o for o in self.operators if not o.endswith("RDD")}))
        return (f"{self.app_id} stage {self.stage_id}.{self.attempt}{batch} ({self.name}; {operators}): "
                f"{self.tasks} task(s) on executors {sorted(self.executors)}, workers {sorted(self.workers)}")


@dataclass(frozen=True)
class AppLog:
    app_id: str
    start_ms: int
    executor_log_urls: dict[str, str]  # executor id -> its stdout log URL
    stages: tuple[StageRun, ...]  # by stage id, then attempt

    def batches(self) -> list[int]:
        return sorted({s.batch_id for s in self.stages if s.batch_id is not None})

    def source_stage(self, batch_id: int) -> StageRun | None:
        """The stage that ran the streaming source for ``batch_id``: the batch's first stage whose lineage
        has the source's scan. The runner persists a batch, so the later stages with that scan in their
        lineage read the persisted copy; the first one is the one that computes it."""
        readers = [s for s in self.stages if s.batch_id == batch_id and s.reads_source]
        return min(readers, key=lambda s: (s.stage_id, s.attempt)) if readers else None

    def workers_by_stage_name(self) -> dict[str, set[str]]:
        """Stage name -> the workers that ran tasks of stages of that name (Spark names a stage after
        its call site, so several stages can share a name)."""
        out: dict[str, set[str]] = defaultdict(set)
        for stage in self.stages:
            out[stage.name] |= stage.workers
        return dict(out)

    def report(self) -> str:
        """One line per stage: what an assertion's message shows."""
        return "\n".join(stage.describe() for stage in self.stages) or f"{self.app_id}: no stages"


def read_event_logs(directory: Path, worker_of: Callable[[str], str | None]) -> list[AppLog]:
    """Every application logged under ``directory``, oldest first. ``worker_of`` maps an executor's
    log URL to the id of its worker (None: unknown)."""
    apps = [_read_app(_events(path), worker_of) for path in sorted(directory.iterdir()) if not path.name.startswith(".")]
    return sorted(apps, key=lambda app: app.start_ms)


def _events(path: Path) -> Iterator[dict[str, Any]]:
    files = sorted(path.glob("events_*"), key=lambda p: int(p.name.split("_")[1])) if path.is_dir() else [path]
    for file in files:
        if file.suffix in (".lz4", ".lzf", ".snappy", ".zstd"):
            raise ValueError(f"{file}: a compressed event log; set spark.eventLog.compress=false")
        with file.open(encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    yield json.loads(line)


def _read_app(events: Iterable[dict[str, Any]], worker_of: Callable[[str], str | None]) -> AppLog:
    app_id, start_ms = "?", 0
    log_urls: dict[str, str] = {}
    batch_of_stage: dict[int, int] = {}
    description_of_stage: dict[int, str] = {}
    completed: dict[tuple[int, int], dict[str, Any]] = {}
    task_executors: dict[tuple[int, int], list[str]] = defaultdict(list)
    for event in events:
        kind = event.get("Event")
        if kind == "SparkListenerApplicationStart":
            app_id, start_ms = str(event.get("App ID")), int(event.get("Timestamp", 0))
        elif kind == "SparkListenerExecutorAdded":
            urls = event.get("Executor Info", {}).get("Log Urls", {})
            log_urls[str(event["Executor ID"])] = str(urls.get("stdout") or urls.get("stderr") or "")
        elif kind == "SparkListenerJobStart":
            job = event.get("Properties") or {}
            for stage_id in event.get("Stage IDs", []):
                description_of_stage[int(stage_id)] = str(job.get("spark.job.description", ""))
                if job.get("streaming.sql.batchId") is not None:
                    batch_of_stage[int(stage_id)] = int(job["streaming.sql.batchId"])
        elif kind == "SparkListenerStageCompleted":
            info = event["Stage Info"]
            completed[(int(info["Stage ID"]), int(info.get("Stage Attempt ID", 0)))] = info
        elif kind == "SparkListenerTaskEnd":
            key = (int(event["Stage ID"]), int(event.get("Stage Attempt ID", 0)))
            task_executors[key].append(str(event["Task Info"]["Executor ID"]))
    stages = []
    for key in sorted(completed.keys() | task_executors.keys()):
        info = completed.get(key, {})
        executors = task_executors.get(key, [])
        operators = []
        for rdd in info.get("RDD Info", []):
            operators.append(str(rdd.get("Name", "")).strip())
            if rdd.get("Scope"):
                operators.append(str(json.loads(rdd["Scope"]).get("name", "")))
        stages.append(StageRun(
            app_id=app_id, stage_id=key[0], attempt=key[1], name=str(info.get("Stage Name", "")),
            details=str(info.get("Details", "")), operators=tuple(operators), batch_id=batch_of_stage.get(key[0]),
            job_description=description_of_stage.get(key[0], ""),
            tasks=len(executors), executors=frozenset(executors),
            workers=frozenset(worker_of(log_urls.get(e, "")) or "?" for e in executors),
        ))
    return AppLog(app_id, start_ms, log_urls, tuple(stages))


def spark_properties(directory: Path) -> list[dict[str, str]]:
    """The Spark properties of every application logged under ``directory`` (its environment
    update event: what the SparkContext ran with), oldest first."""
    found = []
    for path in sorted(directory.iterdir()):
        if path.name.startswith("."):
            continue
        for event in _events(path):
            if event.get("Event") == "SparkListenerEnvironmentUpdate":
                props = event.get("Spark Properties") or {}
                found.append(dict(props) if isinstance(props, dict) else {str(k): str(v) for k, v in props})
                break
    return found
