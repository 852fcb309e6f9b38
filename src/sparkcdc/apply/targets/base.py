"""What every apply target does (the protocol) and the rule that makes applying exactly once.

This module knows no target: :mod:`.registry` finds one by its location; what targets share is in
modules named for it (:mod:`.table_names`, :mod:`.prepared_tables`, and for the lake formats
:mod:`.lake_target`, :mod:`.lake_evolution`, ...). A target's column is :mod:`sparkcdc.apply.target_column`'s.

Exactly once rests on one rule: a target records, atomically with a table's changes, the id of the
micro-batch they came from (per pipeline: a pipeline is one Spark checkpoint). A batch whose id is
not above the recorded one has been applied and changes nothing when replayed.

A batch is applied in two steps, so that the data never passes through one process's Python
memory: ``stage`` (in the executors: each partition's folded rows put where the target's commit
finds them, under a tag of its own) and ``commit`` (in the driver: the staged rows of the tags the
driver collected from a successful job, applied atomically with the batch's position; staged rows of
any other tag, a failed or duplicate task attempt's, are ignored and removed with the batch's
staging). ``apply`` is the two steps in one process, for a fold made there.

One exception: the initial snapshot's batch, when Spark executes it again, may hold a *newer*
image than the one applied (the exported snapshot died with the driver, so the source snapshots
again at a new consistent point and streams from there). An image batch is therefore applied again
at its own recorded id; an image replaces the table, so the second application of the same image
changes nothing and that of a newer one leaves exactly the newer one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa

from ..fold import Key, TableChanges
from ..spec import ResolvedSpec
from ..staged import Folded, StagedBatch, StagedPart
from ..target_column import TargetColumn

if TYPE_CHECKING:
    from ..evolution import Evolution, EvolutionPolicy

__all__ = ["ApplyTarget", "Keys", "already_applied", "key_tuples"]

#: Keys to read the target's state of: tuples of the key columns' values, or an Arrow table of
#: the key columns (what an executor has; a target may read it without a Python object per key).
Keys = Iterable[Key] | pa.Table


class ApplyTarget(Protocol):
    """One target store (a PostgreSQL database, a Delta Lake root, an Iceberg catalog)."""

    description: str
    #: Where the target is, as :func:`~sparkcdc.apply.targets.target_for` opens it again (in an executor).
    location: str

    def open_options(self) -> dict[str, Any]:
        """The keyword options :func:`~sparkcdc.apply.targets.target_for` needs besides the location."""

    def prepare(self, spec: ResolvedSpec, columns: Sequence[TargetColumn], sequence: Sequence[TargetColumn],
                policy: EvolutionPolicy | None = None, *, relation_id: int = 0) -> Evolution:
        """Create the target table (and its staging) when missing, or bring it to the source's shape
        under ``policy`` (:mod:`sparkcdc.apply.evolution`; ``relation_id``: the source table's
        ``pg_class.oid``, 0 when not known); the evolution carried out, whose ``columns`` are those
        the batch stages."""

    def attach(self, spec: ResolvedSpec, columns: Sequence[TargetColumn], sequence: Sequence[TargetColumn]) -> None:
        """Know a table the driver prepared, without touching the store: an executor's copy of the target."""

    def applied_batch(self, spec: ResolvedSpec, pipeline_id: str) -> int | None:
        """The last batch id of ``pipeline_id`` applied to this table, or None."""

    def tombstones(self, spec: ResolvedSpec, keys: Keys) -> dict[Key, tuple[Any, ...]]:
        """The recorded deletes (sequence) of those keys that are still retained."""

    def open_versions(self, spec: ResolvedSpec, keys: Keys) -> dict[Key, tuple[list[Any], tuple[Any, ...]]]:
        """SCD2: the open version (values of ``spec.columns``, start sequence) of those keys."""

    def stored_rows(self, spec: ResolvedSpec, keys: Keys) -> dict[Key, list[Any]]:
        """SCD1: the stored row (values of ``spec.columns``) of those keys: the old rows of the batch's
        primary-key changes, whose unchanged-TOAST columns the new rows take."""

    def stage(self, folded: Folded, *, pipeline_id: str, batch_id: int, tag: str) -> StagedPart:
        """Put a fold's rows and tombstones where :meth:`commit` finds them under ``tag``; nothing
        of the table changes. Called in executors, once per partition and task attempt."""

    def commit(self, staged: StagedBatch, *, pipeline_id: str, batch_id: int) -> bool:
        """Apply the staged parts atomically with the batch position (False, and nothing applied,
        when the batch was already applied), then remove the batch's staging, every tag's."""

    def apply(self, changes: TableChanges, *, pipeline_id: str, batch_id: int) -> bool:
        """:meth:`stage` and :meth:`commit` of a fold made in this process."""

    def close(self) -> None: ...


def already_applied(recorded: int | None, batch_id: int, *, image: bool = False) -> bool:
    """Whether a batch is to be skipped given the recorded position; an ``image`` batch (see the
    module doc) is applied again at its own recorded id."""
    if recorded is None or recorded < batch_id:
        return False
    return recorded > batch_id or not image


def key_tuples(keys: Keys) -> list[Key]:
    """``keys`` as tuples (an Arrow table of key columns, row by row)."""
    if isinstance(keys, pa.Table):
        return list(zip(*(column.to_pylist() for column in keys.columns), strict=True))
    return list(keys)
