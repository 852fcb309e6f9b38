"""How a target table follows its source table's shape: the plan of schema changes, without I/O.

A target knows what it holds (its columns, their types and nullability, and the source identity of
each: the source column's ``attnum`` it recorded when it created or last evolved the table); the
batch says what the source table looks like now (:class:`~.target_column.TargetColumn`, each with
its ``attnum``). :func:`plan_evolution` matches the two by identity — by ``attnum`` where both know
it, else by name — and turns the differences into :class:`Operation`\\ s the target carries out
before the batch is staged:

* a column the target lacks is added (with the value PostgreSQL gave the source's older rows:
  :attr:`TargetColumn.fill`; where that value is not known the column is listed in
  :attr:`Evolution.reread`, and the table is read again);
* a column of another name but the same identity is renamed (a rename stays a rename; a column
  dropped and added again under its old name is a new column, the old one is dropped);
* a wider type is widened (:class:`TypeRules` says what is wider for the target); a narrower or
  incompatible one, and any change to the key, stops with :class:`SchemaChangeError`;
* NOT NULL is relaxed at once and tightened after the batch's rows are in (:attr:`Evolution.tighten`);
* a column the source dropped stays, nullable, or is dropped under ``dropped_columns=drop``.

The policy (``sparkcdc.apply.schema.evolution``): ``evolve`` does all of that; ``strict`` stops at
the first difference, naming it and how to go on; ``ignore-new-columns`` does all but adding
columns (their values are left out of the mirror).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .errors import TargetError
from .target_column import TargetColumn

__all__ = [
    "DROPPED_COLUMN_POLICIES",
    "EVOLUTION_POLICIES",
    "AddColumn",
    "DropColumn",
    "DropNotNull",
    "Evolution",
    "EvolutionPolicy",
    "RenameColumn",
    "SchemaChangeError",
    "SetNotNull",
    "StoredColumn",
    "TypeRules",
    "WidenColumn",
    "plan_evolution",
]

log = logging.getLogger(__name__)

EVOLVE, STRICT, IGNORE_NEW_COLUMNS = "evolve", "strict", "ignore-new-columns"
EVOLUTION_POLICIES = (EVOLVE, STRICT, IGNORE_NEW_COLUMNS)
KEEP, DROP = "keep", "drop"
DROPPED_COLUMN_POLICIES = (KEEP, DROP)

#: The verdicts of :meth:`TypeRules.compare`.
SAME, WIDER, UNSAFE = "same", "wider", "unsafe"


class SchemaChangeError(TargetError):
    """A change of the source table's shape the target does not follow: unsafe (a narrower or
    incompatible type, a key change) or refused by the ``strict`` policy. Raised before anything of
    the batch is applied; the message names the table, the column, the change and how to go on."""


@dataclass(frozen=True)
class EvolutionPolicy:
    """``sparkcdc.apply.schema.evolution`` and ``sparkcdc.apply.schema.dropped.columns``."""

    mode: str = EVOLVE
    dropped_columns: str = KEEP

    def __post_init__(self) -> None:
        if self.mode not in EVOLUTION_POLICIES:
            raise ValueError(f"schema evolution policy {self.mode!r} is not one of {', '.join(EVOLUTION_POLICIES)}")
        if self.dropped_columns not in DROPPED_COLUMN_POLICIES:
            raise ValueError(f"dropped columns policy {self.dropped_columns!r} is not one of {', '.join(DROPPED_COLUMN_POLICIES)}")


@dataclass(frozen=True)
class StoredColumn:
    """A column the target table has: its type as the target compares types (PostgreSQL's type
    text, a lake's Arrow type), its nullability, and the source identity the target recorded for it
    (0: none, say a column the table's owner added)."""

    name: str
    type: Any
    nullable: bool
    attnum: int = 0


class TypeRules(Protocol):
    """How one kind of target compares the type it stores with the one the source now has."""

    def compare(self, stored: Any, column: TargetColumn) -> str:
        """:data:`SAME`, :data:`WIDER` (``column``'s type holds every value of ``stored``, and the
        target can change to it) or :data:`UNSAFE`."""
        ...

    def name(self, stored: Any) -> str:
        """A stored type as messages show it."""
        ...

    def wanted(self, column: TargetColumn) -> str:
        """The type the target would store for ``column``, as messages show it."""
        ...


# -- operations ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AddColumn:
    column: TargetColumn  # nullable as added (NOT NULL comes with :class:`SetNotNull` after the batch)


@dataclass(frozen=True)
class RenameColumn:
    old: str
    new: str


@dataclass(frozen=True)
class WidenColumn:
    name: str
    old: Any
    column: TargetColumn


@dataclass(frozen=True)
class DropNotNull:
    name: str


@dataclass(frozen=True)
class SetNotNull:
    name: str


@dataclass(frozen=True)
class DropColumn:
    name: str


Operation = AddColumn | RenameColumn | WidenColumn | DropNotNull | SetNotNull | DropColumn


@dataclass(frozen=True)
class Evolution:
    """What the target does before the batch (``operations``, in order) and after its rows are in
    (``tighten``); the columns the batch then stages; the identity to record; and the added columns
    whose older rows' values are not known (``reread``)."""

    operations: tuple[Operation, ...]
    columns: tuple[TargetColumn, ...]
    identity: Mapping[str, int]
    tighten: tuple[SetNotNull, ...] = ()
    reread: tuple[str, ...] = ()
    changes: tuple[str, ...] = field(default=(), compare=False)  # each operation in words, for the log

    @property
    def changed(self) -> bool:
        return bool(self.operations or self.tighten)

    def report(self, target: str, where: str, source: str) -> None:
        """Log what the target did (nothing when it changed nothing): ``where`` says where the table is."""
        if self.changed:
            log.info("target table %s %s follows its source %s: %s", target, where, source, "; ".join(self.changes))


def plan_evolution(
    target: str,
    source: str,
    stored: Sequence[StoredColumn],
    wanted: Sequence[TargetColumn],
    keys: Sequence[str],
    policy: EvolutionPolicy,
    rules: TypeRules,
    *,
    tighten: bool = True,
    same_relation: bool = True,
    stored_keys: Sequence[str] | None = None,
    continue_hint: Callable[[str], str] | None = None,
) -> Evolution:
    """The plan that brings a target table holding ``stored`` to the source's ``wanted`` columns.

    ``target`` and ``source`` name the tables for messages; ``keys`` are the source's key columns,
    ``stored_keys`` the target's (None: not recorded, taken as unchanged). ``tighten``: the target
    sets NOT NULL where the source has it (an SCD2 history keeps old versions and does not).
    ``same_relation``: the recorded identities are of the source table as it is (False: it was
    dropped and created again, and its ``attnum`` say nothing about the old ones). ``continue_hint``
    turns an unsafe change's column into the target's own words on how to go on."""
    matched, gone = _match(stored, wanted, same_relation)
    problem = _Problems(target, source, policy, continue_hint)
    operations: list[Operation] = []
    after: list[SetNotNull] = []
    reread: list[str] = []
    columns: list[TargetColumn] = []
    identity: dict[str, int] = {}
    wanted_names = {w.name for w in wanted}

    _check_keys(problem, matched, keys, stored_keys, wanted)
    # A gone column whose name a new column takes must go first, whatever the policy.
    for old in gone:
        if old.name in wanted_names:
            operations.append(DropColumn(old.name))
            problem.strict(f"column {old.name} was dropped and added again (a new column of the same name)")
        elif policy.dropped_columns == DROP and old.attnum:
            operations.append(DropColumn(old.name))
            problem.strict(f"column {old.name} was dropped")
        else:
            if old.attnum:
                problem.strict(f"column {old.name} was dropped")
            if not old.nullable:
                operations.append(DropNotNull(old.name))
            identity[old.name] = old.attnum
    operations.extend(_renames(problem, matched))
    for column in wanted:
        old = matched.get(column.name)
        if old is None:
            if column.dropped and policy.dropped_columns == DROP:
                continue
            if policy.mode == IGNORE_NEW_COLUMNS and not column.dropped:
                continue
            problem.strict(f"column {column.name} ({rules.wanted(column)}) was added")
            operations.append(AddColumn(column))
            if not column.fill_known:
                reread.append(column.name)
            if not column.nullable and tighten and not column.dropped:
                after.append(SetNotNull(column.name))
        else:
            if column.dropped and policy.dropped_columns == DROP:
                operations.append(DropColumn(column.name))
                problem.strict(f"column {column.name} was dropped")
                continue
            verdict = rules.compare(old.type, column)
            if verdict == UNSAFE and (not old.attnum or not column.attnum) and column.name not in keys:
                # Matched by name only: it may be another column of the same name (dropped and added
                # again). It replaces the stored one, whose values are read again from the source.
                problem.strict(f"column {column.name} ({rules.wanted(column)}) replaced a column of type {rules.name(old.type)}")
                operations += [DropColumn(old.name), AddColumn(column)]
                reread.append(column.name)
                columns.append(column)
                identity[column.name] = column.attnum
                continue
            if verdict == UNSAFE:
                problem.unsafe(column.name, f"changed type from {rules.name(old.type)} to {rules.wanted(column)}",
                               "a narrower or incompatible type")
            if verdict == WIDER:
                problem.strict(f"column {column.name} changed type from {rules.name(old.type)} to {rules.wanted(column)}")
                operations.append(WidenColumn(column.name, old.type, column))
            nullable = column.nullable or column.dropped
            if nullable and not old.nullable and column.name not in keys:
                problem.strict(f"column {column.name} dropped NOT NULL")
                operations.append(DropNotNull(column.name))
            elif not nullable and old.nullable and tighten and column.name not in keys:
                problem.strict(f"column {column.name} set NOT NULL")
                after.append(SetNotNull(column.name))
        columns.append(column)
        # Matched by name where the source did not tell the column's identity: the recorded one stays.
        identity[column.name] = column.attnum or (old.attnum if old is not None else 0)
    return Evolution(tuple(operations), tuple(columns), identity, tuple(after), tuple(reread),
                     tuple(describe(op) for op in [*operations, *after]))


def describe(operation: Operation) -> str:
    """An operation in words, for logs."""
    if isinstance(operation, AddColumn):
        return f"add column {operation.column.name}"
    if isinstance(operation, RenameColumn):
        return f"rename column {operation.old} to {operation.new}"
    if isinstance(operation, WidenColumn):
        return f"widen column {operation.name}"
    if isinstance(operation, DropNotNull):
        return f"drop NOT NULL of column {operation.name}"
    if isinstance(operation, SetNotNull):
        return f"set NOT NULL on column {operation.name}"
    return f"drop column {operation.name}"


def _match(stored: Sequence[StoredColumn], wanted: Sequence[TargetColumn],
           same_relation: bool) -> tuple[dict[str, StoredColumn], list[StoredColumn]]:
    """Each wanted column's stored column (by name of the wanted one), and the stored columns no
    wanted one is (dropped in the source, or never from it). Identity first: the same ``attnum``
    where both know one; else the same name, where either does not."""
    by_attnum = {c.attnum: c for c in stored if c.attnum} if same_relation else {}
    by_name = {c.name: c for c in stored}
    matched: dict[str, StoredColumn] = {}
    used: set[str] = set()
    for column in wanted:
        found = by_attnum.get(column.attnum) if column.attnum else None
        if found is None:
            candidate = by_name.get(column.name)
            if candidate is not None and (not same_relation or not candidate.attnum or not column.attnum):
                found = candidate
        if found is not None and found.name not in used:
            matched[column.name] = found
            used.add(found.name)
    return matched, [c for c in stored if c.name not in used]


def _renames(problem: _Problems, matched: Mapping[str, StoredColumn]) -> list[Operation]:
    """The renames, through temporary names when one takes a name another gives up (a swap)."""
    pairs = [(old.name, new) for new, old in matched.items() if old.name != new]
    for old, new in pairs:
        problem.strict(f"column {old} was renamed to {new}")
    olds = {old for old, _ in pairs}
    if not any(new in olds for _, new in pairs):
        return [RenameColumn(old, new) for old, new in pairs]
    temporary = [(old, f"__sparkcdc_rename_{index}", new) for index, (old, new) in enumerate(pairs)]
    return [RenameColumn(old, temp) for old, temp, _ in temporary] + [RenameColumn(temp, new) for _, temp, new in temporary]


def _check_keys(problem: _Problems, matched: Mapping[str, StoredColumn], keys: Sequence[str], stored_keys: Sequence[str] | None,
                wanted: Sequence[TargetColumn]) -> None:
    """A key the target cannot follow: other key columns, or a key column renamed (the target's key,
    tombstones and staging are keyed by those names)."""
    if stored_keys is not None:
        now = {matched[k].name if k in matched else k for k in keys}
        if set(stored_keys) != now or any(k not in matched for k in keys):
            problem.unsafe(", ".join(keys), f"became the key (the mirror's key is {', '.join(stored_keys)})", "a key change")
    for name in keys:
        old = matched.get(name)
        if old is not None and old.name != name:
            problem.unsafe(name, f"is a key column renamed from {old.name}", "a key change")


@dataclass(frozen=True)
class _Problems:
    """How the plan stops: the strict policy at any change, every policy at an unsafe one."""

    target: str
    source: str
    policy: EvolutionPolicy
    continue_hint: Callable[[str], str] | None

    def strict(self, change: str) -> None:
        if self.policy.mode != STRICT:
            return
        raise SchemaChangeError(
            f"source table {self.source}: {change}, and sparkcdc.apply.schema.evolution is strict: the mirror "
            f"{self.target} was left as it is and nothing of the batch was applied. To go on, make the same change to "
            f"the mirror yourself and restart the run (it resumes with this batch), or set "
            f"sparkcdc.apply.schema.evolution=evolve to let sparkcdc make it", target=self.target, table=self.source)

    def unsafe(self, column: str, change: str, kind: str) -> None:
        hint = self.continue_hint(column) if self.continue_hint is not None else (
            f"change the mirror's column {column} yourself so that it holds the source's values")
        raise SchemaChangeError(
            f"source table {self.source}: column {column} {change}, {kind} that the mirror {self.target} cannot follow "
            f"safely; nothing of the batch was applied. To go on: {hint}, then restart the run (it resumes with this "
            f"batch); or drop the mirror table and restart, then signal an incremental snapshot of {self.source} "
            f"(sparkcdc signal <config> execute-snapshot --tables {self.source}) to fill it again",
            target=self.target, table=self.source)
