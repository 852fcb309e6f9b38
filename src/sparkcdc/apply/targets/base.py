"""What every apply target does (the protocol) and the rule that makes applying exactly once.

This module knows no target: :mod:`.registry` finds one by its location, :mod:`.shared` holds what
the targets share.

Exactly once rests on one rule: a target records, atomically with a table's changes, the id of the
micro-batch they came from (per pipeline: a pipeline is one Spark checkpoint). A batch whose id is
not above the recorded one has been applied and changes nothing when replayed.

One exception: the initial snapshot's batch, when Spark executes it again, may hold a *newer*
image than the one applied (the exported snapshot died with the driver, so the source snapshots
again at a new consistent point and streams from there). An image batch is therefore applied again
at its own recorded id; an image replaces the table, so the second application of the same image
changes nothing and that of a newer one leaves exactly the newer one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa

from ..fold import Key, TableChanges
from ..spec import ResolvedSpec

__all__ = ["ApplyTarget", "TargetColumn", "already_applied"]


@dataclass(frozen=True)
class TargetColumn:
    """A column of the target table: its Arrow type, and its PostgreSQL type when the source knows it."""

    name: str
    arrow_type: pa.DataType
    pg_type: str | None = None
    nullable: bool = True


class ApplyTarget(Protocol):
    """One target store (a PostgreSQL database, a Delta Lake root)."""

    description: str

    def prepare(self, spec: ResolvedSpec, columns: Sequence[TargetColumn], sequence: Sequence[TargetColumn]) -> None:
        """Create the target table when it is missing; refuse one whose columns do not fit."""

    def applied_batch(self, spec: ResolvedSpec, pipeline_id: str) -> int | None:
        """The last batch id of ``pipeline_id`` applied to this table, or None."""

    def tombstones(self, spec: ResolvedSpec, keys: Iterable[Key]) -> dict[Key, tuple[Any, ...]]:
        """The recorded deletes (sequence) of those keys that are still retained."""

    def open_versions(self, spec: ResolvedSpec, keys: Iterable[Key]) -> dict[Key, tuple[list[Any], tuple[Any, ...]]]:
        """SCD2: the open version (values of ``spec.columns``, start sequence) of those keys."""

    def stored_rows(self, spec: ResolvedSpec, keys: Iterable[Key]) -> dict[Key, list[Any]]:
        """SCD1: the stored row (values of ``spec.columns``) of those keys: the old rows of the batch's
        primary-key changes, whose unchanged-TOAST columns the new rows take."""

    def apply(self, changes: TableChanges, *, pipeline_id: str, batch_id: int) -> bool:
        """Apply atomically with the batch position; False when the batch was already applied."""

    def close(self) -> None: ...


def already_applied(recorded: int | None, batch_id: int, *, image: bool = False) -> bool:
    """Whether a batch is to be skipped given the recorded position; an ``image`` batch (see the
    module doc) is applied again at its own recorded id."""
    if recorded is None or recorded < batch_id:
        return False
    return recorded > batch_id or not image
