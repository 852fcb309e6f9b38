"""Helpers for Spark tests: connector properties for the session cluster, reading topic output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sparkcdc.embedded_postgres import ThrowawayCluster
from sparkcdc.spark.runner import run_pipeline


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


def output_lines(output: Path) -> list[dict[str, Any]]:
    """Every line under the topic directories, in commit order."""
    lines = []
    for path in sorted(output.glob("*/part-*.jsonl")):
        for raw in path.read_text(encoding="utf-8").split("\n")[:-1]:  # each line ends with \n
            line = json.loads(raw)
            line["topic"] = path.parent.name
            lines.append(line)
    lines.sort(key=lambda line: (line["commit_lsn"], line["lsn"], line["ordinal"]))
    return lines


def payload(line: dict[str, Any]) -> dict[str, Any] | None:
    return None if line["value"] is None else json.loads(line["value"])["payload"]


def run_once(props: dict[str, str], output: Path, checkpoint: Path) -> object:
    return run_pipeline(props, output=output, checkpoint=checkpoint, once=True, master="local[2]")
