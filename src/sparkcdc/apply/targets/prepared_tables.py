"""What a target knows of the tables it prepared (:class:`PreparedTables`), and ``apply`` as the
target's own stage and commit of a fold made in this process: shared by the PostgreSQL target and
the lake targets."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Generic, TypeVar

import pyarrow as pa

from ..errors import TargetError
from ..fold import TableChanges, staged_form
from ..spec import ResolvedSpec
from ..staged import Folded, StagedBatch, StagedPart
from ..target_column import TargetColumn
from .base import already_applied

__all__ = ["PreparedTables"]

P = TypeVar("P")


class PreparedTables(Generic[P]):
    """What a target knows of the tables it prepared (``P``), by target table name, and the
    in-process :meth:`apply`: the target's own stage and commit of a fold made here."""

    def __init__(self) -> None:
        self._tables: dict[str, P] = {}
        self._event_schemas: dict[str, pa.Schema] = {}

    def _register(self, spec: ResolvedSpec, table: P, columns: Sequence[TargetColumn], sequence: Sequence[TargetColumn]) -> None:
        self._tables[spec.target] = table
        names = dict.fromkeys([c.name for c in columns])
        self._event_schemas[spec.target] = pa.schema(
            [pa.field(c.name, c.arrow_type) for c in columns] + [pa.field(c.name, c.arrow_type) for c in sequence if c.name not in names])

    def _table(self, spec: ResolvedSpec) -> P:
        try:
            return self._tables[spec.target]
        except KeyError:
            raise TargetError(f"target table {spec.target} was not prepared") from None

    def stage(self, folded: Folded, *, pipeline_id: str, batch_id: int, tag: str) -> StagedPart:
        raise NotImplementedError

    def commit(self, staged: StagedBatch, *, pipeline_id: str, batch_id: int) -> bool:
        raise NotImplementedError

    def applied_batch(self, spec: ResolvedSpec, pipeline_id: str) -> int | None:
        raise NotImplementedError

    def apply(self, changes: TableChanges, *, pipeline_id: str, batch_id: int) -> bool:
        """Stage the fold under a tag of its own and commit it; a batch already applied is not even staged."""
        spec = changes.spec
        self._table(spec)
        if already_applied(self.applied_batch(spec, pipeline_id), batch_id, image=changes.is_image):
            return False
        folded = staged_form(changes, self._event_schemas[spec.target])
        part = self.stage(folded, pipeline_id=pipeline_id, batch_id=batch_id, tag=uuid.uuid4().hex)
        return self.commit(StagedBatch(spec, (part,)), pipeline_id=pipeline_id, batch_id=batch_id)
