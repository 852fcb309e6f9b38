"""What to apply and how: the parameter surface of Databricks' AUTO CDC (``apply_changes``).

Column names refer to the typed per-table view (``sparkcdc.spark.views.table_changes``): the
table's columns plus ``__op``, ``__commit_lsn``, ``__lsn``, ``__ordinal``, ``__source_ts`` and the
other metadata columns. ``apply_as_deletes`` and ``apply_as_truncates`` are Spark SQL expressions
over those columns, as in Databricks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from .errors import ApplySpecError

__all__ = ["DEFAULT_DELETES", "DEFAULT_SEQUENCE", "DEFAULT_TRUNCATES", "ApplySpec", "ResolvedSpec"]

#: Commit order, then the change's place in its transaction: the order the source committed them.
#: A row's own LSN alone is not an order: concurrent transactions interleave their row LSNs.
DEFAULT_SEQUENCE = ("__commit_lsn", "__lsn", "__ordinal")
DEFAULT_DELETES = "__op = 'd'"
DEFAULT_TRUNCATES = "__op = 't'"
DEFAULT_TOMBSTONE_RETENTION = timedelta(days=7)


def _names(value: str | Sequence[str] | None, parameter: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    names = (value,) if isinstance(value, str) else tuple(value)
    if not names or not all(isinstance(n, str) and n for n in names):
        raise ApplySpecError(f"expected one or more column names, got {value!r}", prop=parameter)
    if len(set(names)) != len(names):
        raise ApplySpecError(f"a column is named twice in {list(names)}", prop=parameter)
    return names


@dataclass(frozen=True)
class ApplySpec:
    """One source table applied to one target table.

    ``keys`` defaults to the event key's columns; ``target`` to the source's ``schema.table``.
    ``tombstone_retention``: how long a delete is remembered so that an older event of the same key
    arriving later cannot bring the row back.
    """

    table: str
    target: str | None = None
    keys: Sequence[str] | None = None
    sequence_by: str | Sequence[str] = DEFAULT_SEQUENCE
    apply_as_deletes: str | None = DEFAULT_DELETES
    apply_as_truncates: str | None = DEFAULT_TRUNCATES
    column_list: Sequence[str] | None = None
    except_column_list: Sequence[str] | None = None
    stored_as_scd_type: int = 1
    track_history_column_list: Sequence[str] | None = None
    track_history_except_column_list: Sequence[str] | None = None
    ignore_null_updates: bool = False
    tombstone_retention: timedelta = DEFAULT_TOMBSTONE_RETENTION

    def __post_init__(self) -> None:
        if not isinstance(self.table, str) or not self.table.strip():
            raise ApplySpecError("a source table name is required", prop="table")
        if self.stored_as_scd_type not in (1, 2, "1", "2"):
            raise ApplySpecError(f"must be 1 or 2, got {self.stored_as_scd_type!r}", prop="stored_as_scd_type")
        if self.column_list is not None and self.except_column_list is not None:
            raise ApplySpecError("give column_list or except_column_list, not both", prop="column_list")
        if self.track_history_column_list is not None and self.track_history_except_column_list is not None:
            raise ApplySpecError("give track_history_column_list or track_history_except_column_list, not both", prop="track_history_column_list")
        if int(self.stored_as_scd_type) == 1 and (self.track_history_column_list or self.track_history_except_column_list):
            raise ApplySpecError("history is tracked only with stored_as_scd_type=2", prop="track_history_column_list")
        if not isinstance(self.tombstone_retention, timedelta) or self.tombstone_retention <= timedelta(0):
            raise ApplySpecError(f"must be a positive timedelta, got {self.tombstone_retention!r}", prop="tombstone_retention")
        for parameter in ("keys", "sequence_by", "column_list", "except_column_list",
                          "track_history_column_list", "track_history_except_column_list"):
            _names(getattr(self, parameter), parameter)

    @property
    def scd_type(self) -> int:
        return int(self.stored_as_scd_type)

    @property
    def qualified_table(self) -> str:
        return self.table if "." in self.table else f"public.{self.table}"

    def resolve(self, columns: Sequence[str], event_keys: Sequence[str]) -> ResolvedSpec:
        """Check the names against the table's columns (in view order) and settle the defaults."""
        available = tuple(columns)
        known = set(available)
        keys = _names(self.keys, "keys") or tuple(event_keys)
        if not keys:
            raise ApplySpecError(f"table {self.qualified_table} has no primary key: name the key columns", prop="keys")
        self._known(keys, known, "keys")
        if self.column_list is not None:
            listed = _names(self.column_list, "column_list") or ()
            self._known(listed, known, "column_list")
            selected = tuple(c for c in available if c in set(listed) or c in set(keys))
        elif self.except_column_list is not None:
            excluded = set(_names(self.except_column_list, "except_column_list") or ())
            self._known(tuple(excluded), known, "except_column_list")
            if excluded & set(keys):
                raise ApplySpecError(f"key column(s) {sorted(excluded & set(keys))} cannot be excluded", prop="except_column_list")
            selected = tuple(c for c in available if c not in excluded)
        else:
            selected = available
        sequence = _names(self.sequence_by, "sequence_by") or DEFAULT_SEQUENCE
        if self.track_history_column_list is not None:
            tracked = _names(self.track_history_column_list, "track_history_column_list") or ()
            self._known(tracked, set(selected), "track_history_column_list")
        elif self.track_history_except_column_list is not None:
            untracked = set(_names(self.track_history_except_column_list, "track_history_except_column_list") or ())
            self._known(tuple(untracked), set(selected), "track_history_except_column_list")
            tracked = tuple(c for c in selected if c not in untracked)
        else:
            tracked = selected
        return ResolvedSpec(
            spec=self, target=self.target or self.qualified_table, keys=keys, columns=selected, sequence=sequence,
            tracked=tuple(c for c in tracked if c not in set(keys)),
        )

    def _known(self, names: Sequence[str], known: set[str], parameter: str) -> None:
        missing = [n for n in names if n not in known]
        if missing:
            raise ApplySpecError(f"table {self.qualified_table} has no column(s) {', '.join(missing)}", prop=parameter)


@dataclass(frozen=True)
class ResolvedSpec:
    """An :class:`ApplySpec` checked against one version of its table."""

    spec: ApplySpec
    target: str
    keys: tuple[str, ...]
    columns: tuple[str, ...]  # the data columns the target holds, in the table's order (keys included)
    sequence: tuple[str, ...]
    tracked: tuple[str, ...]  # SCD2: non-key columns whose change opens a new version

    @property
    def scd_type(self) -> int:
        return self.spec.scd_type
