"""The batch position a lake commit carries (Delta commit info, Iceberg snapshot summary), and the
settled-tombstone rule (:func:`settled`): tombstones cannot commit with the table's changes (they
are another table), so a tombstone write whose batch has not reached the main table is not
trusted; readers take the tombstone table as of its newest write whose batch did commit."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

__all__ = ["BATCH_KEY", "PIPELINE_KEY", "commit_tags", "settled", "tags_of"]

C = TypeVar("C")
V = TypeVar("V")

#: The batch's position as a lake commit carries it (Delta commit info, Iceberg snapshot summary).
PIPELINE_KEY = "sparkcdc.pipeline_id"
BATCH_KEY = "sparkcdc.batch_id"


def commit_tags(pipeline_id: str, batch_id: V) -> dict[str, str | V]:
    """A commit's batch position, as the lake commit carries it (commit info, snapshot summary)."""
    return {PIPELINE_KEY: pipeline_id, BATCH_KEY: batch_id}


def tags_of(properties: Mapping[str, Any] | None) -> tuple[Any, Any]:
    """A commit's (pipeline id, batch id) from its :func:`commit_tags`, None where it has none."""
    if properties is None:
        return None, None
    return properties.get(PIPELINE_KEY), properties.get(BATCH_KEY)


def settled(
    commits: Iterable[C], tags: Callable[[C], tuple[Any, Any]], applied: Callable[[str], int | None],
) -> C | None:
    """The newest of a tombstone table's ``commits`` (newest first) that is not a write of a batch
    still missing from the main table: such a write is redone when the batch is replayed, and
    trusting it would make the replay drop its own deletes as "older than a recorded delete".
    ``tags``: a commit's (pipeline id, batch id), None where untagged; ``applied``: the main
    table's newest batch of a pipeline (asked once per pipeline)."""
    done: dict[str, int | None] = {}
    for commit in commits:
        pipeline, batch = tags(commit)
        if pipeline is not None and batch is not None:
            if pipeline not in done:
                done[pipeline] = applied(pipeline)
            newest = done[pipeline]
            if newest is None or newest < int(batch):
                continue
        return commit
    return None
