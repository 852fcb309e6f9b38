"""The driver's side of the ``kafka`` output: the ``foreachBatch`` function that runs a batch's
reader tasks (which produce, :mod:`.task_producer`) and collects what they committed.

Why a driver side at all: a task that might be replaying its batch must read the pipeline's fence
before producing, and reading it costs a round trip to the brokers per task. The driver reads the
fence once per session and marks each batch it knows no task has committed
(:data:`~.task_producer.FENCE_PROPERTY`), so that the tasks of a new batch skip that read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .link import KafkaLink
from .task_producer import FENCE_CLEAR, FENCE_PROPERTY, parse_fence

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["ReaderKafkaBatchWriter"]


class ReaderKafkaBatchWriter:
    """The ``foreachBatch`` function of the ``kafka`` layout: it runs the batch's tasks (which produce)
    and collects their rows, one per task and topic; it never sees a record.

    It reads the fence once per session to tell the tasks, through :data:`FENCE_PROPERTY`, whether the
    batch may be a replay (see the module docstring). ``records_by_batch`` counts what each batch
    produced or found already produced.
    """

    def __init__(self, link: KafkaLink) -> None:
        self.link = link
        self.records_by_batch: dict[int, int] = {}
        self._committed: dict[int, tuple[str | None, int]] | None = None  # task index -> (query, batch) last committed

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_committed"] = None
        return state

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        from .batch_writer import query_id

        query = query_id(batch)
        if self._committed is None:
            self._committed = self._read_fence(batch_id)
        new = query is not None and not any(q == query and b >= batch_id for q, b in self._committed.values())
        context = _spark_context(batch)
        if context is not None:
            context.setLocalProperty(FENCE_PROPERTY, FENCE_CLEAR if new else None)
        try:
            rows = batch.collect()
        except BaseException:
            self._committed = None  # the tasks that committed are unknown: read the fence again
            raise
        finally:
            if context is not None:
                context.setLocalProperty(FENCE_PROPERTY, None)
        for index in {row["index"] for row in rows}:
            self._committed[index] = (query, batch_id)
        self.records_by_batch[batch_id] = sum(row["records"] for row in rows)

    def _read_fence(self, batch_id: int) -> dict[int, tuple[str | None, int]]:
        from confluent_kafka.admin import AdminClient

        link = self.link
        admin = AdminClient(link.client())
        link.ensure_fence_topic(admin, link.existing_topics(admin, batch_id), batch_id)
        prefix = f"{link.pipeline_id}#".encode()
        committed: dict[int, tuple[str | None, int]] = {}
        for key, value in link.read_fence(batch_id).items():
            if key.startswith(prefix) and value is not None and key[len(prefix):].isdigit():
                fence = parse_fence(link, value, batch_id)
                committed[int(key[len(prefix):])] = (fence.get("query_id"), fence["batch_id"])
        return committed


def _spark_context(batch: DataFrame) -> Any:
    try:
        return batch.sparkSession.sparkContext
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext: every task then reads the fence
        return None
