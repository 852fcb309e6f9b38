"""Where a run's micro-batches go besides the reader's own outputs: one applier per apply target, and
the fan-out that hands each batch to the topic files and every applier, reading the source once.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..debezium.config import ConnectorConfig

__all__ = ["BatchFanOut", "appliers_for"]


def appliers_for(config: ConnectorConfig, checkpoint: str, apply_to: Sequence[str | tuple[str, int]], scd_type: int) -> list[Any]:
    """One applier per target, checked before Spark starts (a bad parameter names itself)."""
    if not apply_to:
        return []
    from .apply import ChangeApplier

    # as apply_changes names a pipeline: a local checkpoint by its absolute path, a URI as it is
    pipeline_id = checkpoint if "://" in checkpoint else str(Path(checkpoint).absolute())
    pairs = [(target, scd_type) if isinstance(target, str) else target for target in apply_to]
    return [
        ChangeApplier(target, config.raw, pipeline_id=pipeline_id, all_tables=True, defaults={"stored_as_scd_type": scd})
        for target, scd in pairs
    ]


class BatchFanOut:
    """One micro-batch to the topic files and every apply target, reading the source once. On
    Spark Connect (``channel``) the appliers' counts go back to the client after each batch
    (:mod:`sparkcdc.spark.server_stats`)."""

    def __init__(self, topic_files: Any, appliers: Sequence[Any], channel: Any = None) -> None:
        self.topic_files = topic_files
        self.appliers = list(appliers)
        self.channel = channel

    def __call__(self, batch: Any, batch_id: int) -> None:
        from pyspark import StorageLevel

        batch = batch.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            if self.topic_files is not None:
                self.topic_files(batch, batch_id)
            for applier in self.appliers:
                applier(batch, batch_id)
        finally:
            batch.unpersist()
        if self.channel is not None:
            self.channel.publish(self.appliers)
