"""A pipeline whose every staging task fails once after it staged (run by test_apply_executors in a
process of its own: Spark retries a failed task only with ``local[N,F]``, F > 1 attempts).

The first attempt of each task stages its partition, records its tag in a marker file and dies; the
retry stages again under a new tag and its summary is what the driver collects. Importable by the
Python workers (the class is pickled by reference)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from sparkcdc.spark.apply import ChangeApplier, StageTask

MARKERS = "SPARKCDC_TEST_FAILED_ATTEMPTS"


class FailFirstAttempt(StageTask):
    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        summaries = list(super().__call__(batches))
        context = TaskContext.get()
        if summaries and context is not None and context.attemptNumber() == 0:
            tag = summaries[0].column("tag")[0].as_py()
            Path(os.environ[MARKERS], f"{self.resolved.target}-{tag}").write_text(str(context.partitionId()))
            raise RuntimeError(f"attempt 0 of task {context.partitionId()} fails after staging {tag} (the test's doing)")
        yield from summaries


class RetriedApplier(ChangeApplier):
    stage_task = FailFirstAttempt


def run(spec: dict[str, Any]) -> None:
    os.environ[MARKERS] = spec["markers"]  # before the JVM starts: the workers inherit it
    from sparkcdc.spark import launch
    from sparkcdc.spark.source import options_for, register

    spark = launch.session("local[2,2]", app_name="sparkcdc-apply-retry")
    register(spark)
    appliers = [RetriedApplier(target, spec["properties"], pipeline_id=spec["checkpoint"], all_tables=True,
                               defaults={"stored_as_scd_type": scd}, events_per_partition=spec["events_per_partition"])
                for target, scd in spec["targets"]]

    def apply_all(batch: Any, batch_id: int) -> None:
        for applier in appliers:
            applier(batch, batch_id)

    options = options_for({**spec["properties"], "sparkcdc.state.location": spec["checkpoint"] + "/sparkcdc-state"})
    query = (spark.readStream.format("postgres-cdc").options(**options).load().writeStream.foreachBatch(apply_all)
             .option("checkpointLocation", spec["checkpoint"]).trigger(availableNow=True).start())
    try:
        query.awaitTermination(600)
        if query.exception() is not None:
            raise SystemExit(f"the query failed: {query.exception()}")
        print(json.dumps({applier.target.description: applier.stats.events for applier in appliers}))
    finally:
        for applier in appliers:
            applier.close()
        spark.stop()


if __name__ == "__main__":
    run(json.loads(Path(sys.argv[1]).read_text()))
