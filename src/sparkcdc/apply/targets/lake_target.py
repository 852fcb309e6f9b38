"""A lake format's target (:class:`LakeTarget`, for Delta Lake and Iceberg): its reads, its staging
(Parquet files, :mod:`.lake_staging`) and its commit, each turning a library's error into a
:class:`TargetError` that names the table and where it is, and the commit doing the exactly-once
protocol (skip an applied batch, tombstones first, then the table with the batch's position)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

from ..errors import TargetError
from ..fold import START_AT, Key
from ..spec import ResolvedSpec
from ..staged import Folded, StagedBatch, StagedPart
from ..target_column import TargetColumn
from .base import Keys, already_applied, key_tuples
from .lake_staging import remove_staging, write_staged
from .library_errors import failing_as
from .prepared_tables import PreparedTables
from .table_layout import TableLayout
from .table_names import SEQUENCE

__all__ = ["LakeTarget", "newest_open_versions", "rows_by_key"]

V = TypeVar("V")


def rows_by_key(
    rows: Iterable[Mapping[str, Any]], keys: Sequence[str], wanted: set[Key], value: Callable[[Mapping[str, Any]], V],
) -> dict[Key, V]:
    """``value`` of each row whose key is among ``wanted`` (the stores' key filters are coarse:
    they may let other rows through); the last row of a key wins."""
    found: dict[Key, V] = {}
    for row in rows:
        key = tuple(row[k] for k in keys)
        if key in wanted:
            found[key] = value(row)
    return found


def newest_open_versions(
    rows: Iterable[Mapping[str, Any]], keys: Sequence[str], columns: Sequence[str], wanted: set[Key],
    start_of: Callable[[Any], tuple[Any, ...]],
) -> dict[Key, tuple[list[Any], tuple[Any, ...]]]:
    """``open_versions``' answer from stored open rows (a key filter may let others through): per
    wanted key, the values of ``columns`` and the start of its newest open version."""
    found: dict[Key, tuple[list[Any], tuple[Any, ...]]] = {}
    for row in rows:
        key = tuple(row[k] for k in keys)
        if key not in wanted:
            continue
        start = start_of(row[START_AT])
        if key not in found or found[key][1] < start:
            found[key] = ([row[c] for c in columns], start)
    return found


T = TypeVar("T", bound=TableLayout)


class LakeTarget(PreparedTables[T]):
    """A lake format's target (Delta Lake, Iceberg): the reads, the staging and the commit every
    lake target does the same way; the format says how it reads, writes and where a table is (the
    hooks).

    Executors stage a batch's folded rows as Parquet files under the target's root (storage every
    node sees, as the target itself); the commit reads them back as Arrow and hands them to the
    format's library, so the final merge runs in the driver process inside that library's engine
    (deltalake's Rust, pyiceberg's pyarrow): neither library can commit one transaction from the
    files many processes wrote. The rows stay Arrow buffers on the way, never a Python object each.
    Staging files on object storage are read and written through pyarrow's filesystems, which take
    their credentials from the environment (not from a Delta ``storage_options``)."""

    description: str
    location: str

    def close(self) -> None:
        self._tables.clear()

    def open_options(self) -> dict[str, Any]:
        return {}

    def attach(self, spec: ResolvedSpec, columns: Sequence[TargetColumn], sequence: Sequence[TargetColumn]) -> None:
        self._register(spec, self._layout(spec, columns, sequence), columns, sequence)

    # -- hooks ------------------------------------------------------------------------------------------

    def _layout(self, spec: ResolvedSpec, columns: Sequence[TargetColumn], sequence: Sequence[TargetColumn]) -> T:
        """The table's layout in the format (no I/O)."""
        raise NotImplementedError

    def _staging_root(self) -> str:
        """Where staging files go: a directory or URI every executor and the driver see."""
        raise NotImplementedError

    def _where(self, spec: ResolvedSpec, *, tombstones: bool = False) -> str:
        """Where the table (or its tombstones) lives, for errors: ``at <path>``."""
        raise NotImplementedError

    def _main(self, spec: ResolvedSpec) -> Any | None:
        """The main table as of its newest commit, or None when there is none."""
        raise NotImplementedError

    def _applied(self, main: Any, pipeline_id: str) -> int | None:
        """The newest batch of ``pipeline_id`` the main table ``main`` holds."""
        raise NotImplementedError

    def _tombstone_rows(self, table: T, wanted: set[Key], cutoff: datetime) -> Iterable[Mapping[str, Any]]:
        """Settled tombstones recorded after ``cutoff`` (at least those of ``wanted``)."""
        raise NotImplementedError

    def _may_have_tombstones(self, table: T) -> bool:
        """False when the table certainly has no tombstone (a cheap look, no key read)."""
        return True

    def _open_rows(self, table: T, wanted: set[Key]) -> Iterable[Mapping[str, Any]]:
        """Rows with a null ``__END_AT`` (at least those of ``wanted``): data columns and ``__START_AT``."""
        raise NotImplementedError

    def _key_rows(self, table: T, wanted: set[Key]) -> Iterable[Mapping[str, Any]]:
        """Rows of the table (at least those of ``wanted``) with their data columns."""
        raise NotImplementedError

    def _record_tombstones(self, table: T, staged: StagedBatch, pipeline_id: str, batch_id: int) -> None:
        """Record a batch's staged deletes (committed before the table's changes, tagged with the batch)."""
        raise NotImplementedError

    def _write(self, table: T, main: Any, staged: StagedBatch, pipeline_id: str, batch_id: int) -> None:
        """Write the staged changes and the batch's position in one commit of the main table."""
        raise NotImplementedError

    # -- reads ------------------------------------------------------------------------------------------

    def applied_batch(self, spec: ResolvedSpec, pipeline_id: str) -> int | None:
        with failing_as(f"reading the applied batch of {spec.target} {self._where(spec)}"):
            main = self._main(spec)
            return None if main is None else self._applied(main, pipeline_id)

    def tombstones(self, spec: ResolvedSpec, keys: Keys) -> dict[Key, tuple[Any, ...]]:
        """Retained tombstones of ``keys``, as of the tombstone table's newest settled write."""
        def read(table: T, wanted: set[Key]) -> dict[Key, tuple[Any, ...]]:
            rows = self._tombstone_rows(table, wanted, table.tombstone_cutoff())
            return rows_by_key(rows, table.keys, wanted, lambda row: table.sequence_tuple(row[SEQUENCE]))

        if not self._may_have_tombstones(self._table(spec)):
            return {}  # before turning the keys into tuples: an image's task holds a whole chunk's
        return self._of_keys(spec, keys, "the tombstones", read, tombstones=True)

    def open_versions(self, spec: ResolvedSpec, keys: Keys) -> dict[Key, tuple[list[Any], tuple[Any, ...]]]:
        """SCD2: the newest row of each of ``keys`` whose ``__END_AT`` is null."""
        def read(table: T, wanted: set[Key]) -> dict[Key, tuple[list[Any], tuple[Any, ...]]]:
            return newest_open_versions(self._open_rows(table, wanted), table.keys, table.columns, wanted, table.sequence_tuple)

        return self._of_keys(spec, keys, "the open versions", read)

    def stored_rows(self, spec: ResolvedSpec, keys: Keys) -> dict[Key, list[Any]]:
        """SCD1: the stored row of each of ``keys``."""
        def read(table: T, wanted: set[Key]) -> dict[Key, list[Any]]:
            return rows_by_key(self._key_rows(table, wanted), table.keys, wanted, lambda row: [row[c] for c in table.columns])

        return self._of_keys(spec, keys, "stored rows", read)

    def _of_keys(
        self, spec: ResolvedSpec, keys: Keys, what: str, read: Callable[[T, set[Key]], dict[Key, V]],
        *, tombstones: bool = False,
    ) -> dict[Key, V]:
        """``read`` of the prepared table and the wanted keys (nothing when none is), its errors
        as a :class:`TargetError` naming ``what`` it read and where."""
        table = self._table(spec)
        wanted = set(key_tuples(keys))
        if not wanted:
            return {}
        with failing_as(f"reading {what} of {spec.target} {self._where(spec, tombstones=tombstones)}"):
            return read(table, wanted)

    # -- staging and the commit ------------------------------------------------------------------------------

    def stage(self, folded: Folded, *, pipeline_id: str, batch_id: int, tag: str) -> StagedPart:
        self._table(folded.spec)
        return write_staged(self._staging_root(), folded, pipeline_id=pipeline_id, batch_id=batch_id, tag=tag)

    def commit(self, staged: StagedBatch, *, pipeline_id: str, batch_id: int) -> bool:
        """Skip a batch already applied; else its tombstones first, then the table's changes and
        the batch's position in one commit. The batch's staging goes either way."""
        spec = staged.spec
        table = self._table(spec)
        where = self._where(spec)
        try:
            with failing_as(f"applying batch {batch_id} to {spec.target} {where}"):
                main = self._main(spec)
                if main is None:
                    raise TargetError(f"target table {spec.target} {where} is gone (it was prepared)")
                if already_applied(self._applied(main, pipeline_id), batch_id, image=staged.is_image):
                    return False
                if staged.tombstones:
                    with failing_as(f"applying batch {batch_id} to {spec.target} {self._where(spec, tombstones=True)}"):
                        self._record_tombstones(table, staged, pipeline_id, batch_id)
                self._write(table, main, staged, pipeline_id, batch_id)
            return True
        finally:
            remove_staging(self._staging_root(), pipeline_id, spec.target, batch_id)
