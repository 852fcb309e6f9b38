"""A lake mirror (Delta Lake, Iceberg) follows its source table's shape (sparkcdc.apply.evolution):
the lake equivalents of test_postgres_evolution.py, on real deltalake and pyiceberg tables.

Each test prepares a target table, then prepares it again with the columns a later version of the
source table has (with their ``attnum``, as the reader describes them), applies rows, and looks at
the mirror: its columns, types, nullability, values, and the identity it records.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from deltalake import Schema as DeltaSchema

import sparkcdc.apply.targets.delta as delta
import sparkcdc.apply.targets.iceberg as iceberg
from sparkcdc.apply import ApplySpec, TargetError
from sparkcdc.apply.evolution import EvolutionPolicy, SchemaChangeError
from sparkcdc.apply.fold import fold_changes
from sparkcdc.apply.spec import DEFAULT_SEQUENCE, ResolvedSpec
from sparkcdc.apply.targets import TargetColumn
from sparkcdc.apply.targets.lake_evolution import IDENTITY_PROPERTY, lake_type_verdict

from .targets import location

SEQUENCE = [TargetColumn(name, pa.int64(), None, False) for name in DEFAULT_SEQUENCE]


class Lake:
    """One lake target under a temporary root, and the format's own way to look at its table
    ``public.items`` (and its tombstones)."""

    def __init__(self, kind: str, root: Path) -> None:
        self.kind, self.root = kind, root
        self.types = delta.DELTA_TYPES if kind == "delta" else iceberg.ICEBERG_TYPES
        self.target = self.open()

    def open(self) -> Any:
        """The target as a new process opens it."""
        return delta.DeltaTarget(str(self.root)) if self.kind == "delta" else iceberg.IcebergTarget(location(self.root))

    def _iceberg(self, suffix: str = "") -> Any:
        return self.target.catalog().load_table(("public", "items" + suffix))

    def _delta(self, tombstones: bool = False) -> DeltaTable:
        return DeltaTable(str(self.root / ("_sparkcdc/tombstones/public/items" if tombstones else "public/items")))

    def schema(self, tombstones: bool = False) -> pa.Schema:
        if self.kind == "delta":
            return pa.schema(self._delta(tombstones).schema().to_arrow())
        return self._iceberg("__sparkcdc_tombstones" if tombstones else "").schema().as_arrow()

    def shape(self, tombstones: bool = False) -> list[tuple[str, pa.DataType, bool]]:
        """(name, type as the format stores it, nullable) of each column, in order."""
        return [(f.name, self.types.of(f.type, f.name), f.nullable) for f in self.schema(tombstones)]

    def rows(self) -> list[dict[str, Any]]:
        table = self._delta().to_pyarrow_table() if self.kind == "delta" else self._iceberg().scan().to_arrow()
        rows: list[dict[str, Any]] = table.to_pylist()
        return sorted(rows, key=lambda r: (r["id"], tuple((r.get("__START_AT") or {}).values())))

    def identity(self) -> dict[str, Any]:
        properties = self._delta().metadata().configuration if self.kind == "delta" else self._iceberg().properties
        record: dict[str, Any] = json.loads(properties[IDENTITY_PROPERTY])
        return record

    def fingerprint(self) -> Any:
        """Changes with any commit to the table."""
        return self._delta().version() if self.kind == "delta" else self._iceberg().metadata_location

    def add_column_by_hand(self, name: str, arrow_type: pa.DataType) -> None:
        """What the table's owner does to follow a change the strict policy stopped at."""
        if self.kind == "delta":
            self._delta().alter.add_columns(list(DeltaSchema.from_arrow(pa.schema([pa.field(name, arrow_type)])).fields))
        else:
            with self._iceberg().update_schema() as update:
                update.union_by_name(pa.schema([pa.field(name, arrow_type)]))


@pytest.fixture(params=["delta", "iceberg"])
def lake(request: pytest.FixtureRequest, tmp_path: Path) -> Lake:
    return Lake(request.param, tmp_path)


def col(name: str, arrow: pa.DataType, attnum: int, *, nullable: bool = True, **extra: Any) -> TargetColumn:
    return TargetColumn(name, arrow, None, nullable, attnum=attnum, **extra)


BASE = [col("id", pa.int64(), 1, nullable=False), col("name", pa.string(), 2), col("qty", pa.int32(), 3),
        col("price", pa.decimal128(8, 2), 4), col("ratio", pa.float32(), 5)]


def prepare(lake: Lake, columns: list[TargetColumn], *, scd: int = 1, policy: EvolutionPolicy | None = None,
            keys: tuple[str, ...] = ("id",), relation: int = 4242, target: Any | None = None) -> tuple[ResolvedSpec, Any]:
    """Prepare ``public.items`` for ``columns``; the spec the batch then has (the columns the
    evolution stages, as the Spark layer resolves it again) and the evolution."""
    spec = ApplySpec(table="public.items", target="public.items", stored_as_scd_type=scd)
    evolution = (target or lake.target).prepare(spec.resolve([c.name for c in columns], list(keys)), columns, SEQUENCE, policy,
                                                relation_id=relation)
    return spec.resolve([c.name for c in evolution.columns], list(keys)), evolution


def apply(lake: Lake, spec: ResolvedSpec, columns: list[TargetColumn], rows: list[dict[str, Any]], batch_id: int, *,
          pipeline: str = "p", deletes: tuple[int, ...] = ()) -> bool:
    """One batch of upserts of ``rows`` (and deletes of ``deletes``) of the staged ``columns``."""
    staged = [c for c in columns if c.name in spec.columns]
    fields = [pa.field(c.name, c.arrow_type) for c in staged] + [
        pa.field("__is_delete", pa.bool_()), pa.field("__is_truncate", pa.bool_()), pa.field("__unchanged", pa.list_(pa.string())),
        *(pa.field(name, pa.int64()) for name in DEFAULT_SEQUENCE)]
    events = [{**{c.name: row.get(c.name) for c in staged}, "__is_delete": False, "__is_truncate": False, "__unchanged": [],
               "__commit_lsn": 100 * batch_id + i, "__lsn": 100 * batch_id + i, "__ordinal": 0} for i, row in enumerate(rows)]
    events += [{"id": key, "__is_delete": True, "__is_truncate": False, "__unchanged": [], "__commit_lsn": 100 * batch_id + 90,
                "__lsn": 100 * batch_id + 90, "__ordinal": i} for i, key in enumerate(deletes)]
    table = pa.Table.from_pylist(events, schema=pa.schema(fields))
    keys = [(row["id"],) for row in rows] + [(key,) for key in deletes]
    opened = lake.target.open_versions(spec, keys) if spec.scd_type == 2 else None
    changes = fold_changes(spec, table, tombstones=lake.target.tombstones(spec, keys), open_versions=opened)
    applied: bool = lake.target.apply(changes, pipeline_id=pipeline, batch_id=batch_id)
    return applied


def values(rows: list[dict[str, Any]], *names: str) -> list[tuple[Any, ...]]:
    return [tuple(r[n] for n in names) for r in rows]


def kinds(evolution: Any) -> list[str]:
    return [type(op).__name__ for op in evolution.operations]


# -- what a lake mirror follows ---------------------------------------------------------------------


def test_added_renamed_widened_and_dropped_columns(lake: Lake) -> None:
    spec, _ = prepare(lake, BASE)
    assert apply(lake, spec, BASE, [{"id": 1, "name": "a", "qty": 1, "price": Decimal("1.50"), "ratio": 0.5},
                                    {"id": 2, "name": "b", "qty": 2, "price": Decimal("2.50")}], 1)
    # The source: name renamed to title, qty int -> bigint, price numeric(8,2) -> numeric(12,2), ratio
    # real -> double precision, a column added with a constant default (existing rows got 7), one
    # without: nothing but the attnums tells the rename from a drop and an add.
    later = [col("id", pa.int64(), 1, nullable=False), col("title", pa.string(), 2), col("qty", pa.int64(), 3),
             col("price", pa.decimal128(12, 2), 4), col("ratio", pa.float64(), 5), col("flag", pa.int32(), 6, fill=7),
             col("note", pa.string(), 7)]
    spec, evolution = prepare(lake, later)
    assert kinds(evolution) == ["RenameColumn", "WidenColumn", "WidenColumn", "WidenColumn", "AddColumn", "AddColumn"]
    assert lake.shape() == [("id", pa.int64(), False), ("title", pa.string(), True), ("qty", pa.int64(), True),
                            ("price", pa.decimal128(12, 2), True), ("ratio", pa.float64(), True), ("flag", pa.int32(), True),
                            ("note", pa.string(), True)]
    # The rows the table held: renamed and widened values kept, the added column's value in every one.
    assert values(lake.rows(), "id", "title", "qty", "price", "ratio", "flag", "note") == [
        (1, "a", 1, Decimal("1.50"), 0.5, 7, None), (2, "b", 2, Decimal("2.50"), None, 7, None)]
    assert apply(lake, spec, later, [{"id": 3, "title": "c" * 40, "qty": 2**40, "price": Decimal("1234567890.25"),
                                      "ratio": 1e300, "flag": 1}], 2)
    # Then flag is dropped from the source: the mirror keeps it (nullable), new rows leave it null.
    dropped = [c for c in later if c.name != "flag"]
    spec, evolution = prepare(lake, dropped)
    assert evolution.operations == ()  # flag was nullable already: nothing to change
    assert apply(lake, spec, dropped, [{"id": 4, "title": "d", "qty": 4}, {"id": 1, "title": "a2", "qty": 1}], 3)
    assert values(lake.rows(), "id", "title", "qty", "flag") == [(1, "a2", 1, 7), (2, "b", 2, 7), (3, "c" * 40, 2**40, 1),
                                                                  (4, "d", 4, None)]
    # The identity is recorded in the table's own properties, so a restart matches by attnum again.
    assert lake.identity() == {"source": "public.items", "relation": 4242, "keys": ["id"],
                               "columns": {"id": 1, "title": 2, "qty": 3, "price": 4, "ratio": 5, "flag": 6, "note": 7}}
    assert lake.target.applied_batch(spec, "p") == 3


def test_an_added_column_gets_its_value_in_every_row_the_table_holds(lake: Lake) -> None:
    spec, _ = prepare(lake, BASE)
    for batch in range(1, 4):  # several data files
        assert apply(lake, spec, BASE, [{"id": 10 * batch + i, "name": f"n{i}"} for i in range(5)], batch)
    later = [*BASE, col("flag", pa.int32(), 6, fill=7), col("tags", pa.list_(pa.string()), 7, fill=["a", "b"]),
             col("note", pa.string(), 8)]
    spec, evolution = prepare(lake, later)
    assert kinds(evolution) == ["AddColumn", "AddColumn", "AddColumn"]
    rows = lake.rows()
    assert len(rows) == 15 and {(r["flag"], tuple(r["tags"]), r["note"]) for r in rows} == {(7, ("a", "b"), None)}
    # Rows of later batches carry their own values.
    assert apply(lake, spec, later, [{"id": 10, "name": "x", "flag": 1, "tags": []}, {"id": 99, "name": "y"}], 4)
    by_id = {r["id"]: r for r in lake.rows()}
    assert (by_id[10]["flag"], by_id[10]["tags"], by_id[99]["flag"], by_id[11]["flag"]) == (1, [], None, 7)


def test_a_column_added_without_a_value_needs_no_rewrite(lake: Lake, monkeypatch: pytest.MonkeyPatch) -> None:
    spec, _ = prepare(lake, BASE)
    assert apply(lake, spec, BASE, [{"id": 1, "name": "a"}], 1)

    def no_rewrite(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the table was rewritten")

    monkeypatch.setattr(delta, "_rewrite", no_rewrite)
    monkeypatch.setattr(iceberg, "_rewrite_rows", no_rewrite)
    spec, evolution = prepare(lake, [*BASE, col("note", pa.string(), 6)])
    assert kinds(evolution) == ["AddColumn"]
    assert values(lake.rows(), "id", "name", "note") == [(1, "a", None)]


def test_a_column_dropped_and_added_again_is_a_new_column(lake: Lake) -> None:
    spec, _ = prepare(lake, BASE)
    assert apply(lake, spec, BASE, [{"id": 1, "name": "a", "qty": 5}], 1)
    again = [*BASE[:2], *BASE[3:], col("qty", pa.int32(), 6)]  # qty dropped, then added (attnum 6)
    spec, evolution = prepare(lake, again)
    assert kinds(evolution) == ["DropColumn", "AddColumn"]
    assert values(lake.rows(), "id", "name", "qty") == [(1, "a", None)]
    assert sorted(name for name, _, _ in lake.shape()) == ["id", "name", "price", "qty", "ratio"]  # (Delta keeps the order)
    assert lake.identity()["columns"]["qty"] == 6


def test_a_source_table_created_again_is_matched_by_name(lake: Lake) -> None:
    """Another relation: its attnums say nothing about the old ones, so same names are the same columns."""
    spec, _ = prepare(lake, BASE)
    assert apply(lake, spec, BASE, [{"id": 1, "name": "a", "qty": 5}], 1)
    recreated = [col(c.name, c.arrow_type, 10 + i, nullable=c.nullable) for i, c in enumerate(BASE)]
    _, evolution = prepare(lake, recreated, relation=999)
    assert evolution.operations == ()
    assert values(lake.rows(), "id", "name", "qty") == [(1, "a", 5)]
    assert lake.identity()["relation"] == 999 and lake.identity()["columns"]["qty"] == 12


def test_not_null_is_relaxed_and_never_set_again(lake: Lake) -> None:
    required = [BASE[0], col("name", pa.string(), 2, nullable=False), col("qty", pa.int32(), 3, nullable=False), *BASE[3:]]
    spec, _ = prepare(lake, required)
    assert ("name", pa.string(), False) in lake.shape() and ("qty", pa.int32(), False) in lake.shape()
    assert apply(lake, spec, required, [{"id": 1, "name": "a", "qty": 1}], 1)
    # NOT NULL of name dropped in the source: dropped in the mirror, in place
    relaxed = [BASE[0], BASE[1], *required[2:]]
    spec, evolution = prepare(lake, relaxed)
    assert kinds(evolution) == ["DropNotNull"]
    assert ("name", pa.string(), True) in lake.shape()
    assert apply(lake, spec, relaxed, [{"id": 2, "name": None, "qty": 2}], 2)
    # NOT NULL set again in the source: a lake does not tighten (the rows it holds may have nulls)
    _, evolution = prepare(lake, required)
    assert evolution.operations == () and evolution.tighten == ()
    assert ("name", pa.string(), True) in lake.shape()
    # a rename and NOT NULL dropped together (Delta: both in one rewrite)
    renamed = [BASE[0], col("title", pa.string(), 2), col("qty", pa.int32(), 3), *BASE[3:]]
    _, evolution = prepare(lake, renamed)
    assert kinds(evolution) == ["RenameColumn", "DropNotNull"]
    assert lake.shape()[:3] == [("id", pa.int64(), False), ("title", pa.string(), True), ("qty", pa.int32(), True)]
    assert values(lake.rows(), "id", "title", "qty") == [(1, "a", 1), (2, None, 2)]


def test_unsafe_changes_stop_naming_the_column_and_leave_the_mirror_as_it_was(lake: Lake) -> None:
    spec, _ = prepare(lake, BASE)
    assert apply(lake, spec, BASE, [{"id": 1, "name": "a", "qty": 1, "price": Decimal("1.50")}], 1)
    shape, fingerprint = lake.shape(), lake.fingerprint()
    narrowed = [*BASE[:3], col("price", pa.decimal128(6, 2), 4), BASE[4]]
    with pytest.raises(SchemaChangeError, match=r"column price changed type from decimal128\(8, 2\) to decimal128\(6, 2\), "
                                                r"a narrower or incompatible type"):
        prepare(lake, narrowed)
    incompatible = [*BASE[:2], col("qty", pa.string(), 3), *BASE[3:]]
    with pytest.raises(SchemaChangeError, match="column qty changed type from int32 to string"):
        prepare(lake, incompatible)
    shrunk = [BASE[0], BASE[1], BASE[2], BASE[3], col("ratio", pa.int64(), 5)]
    with pytest.raises(SchemaChangeError, match="column ratio changed type from float to int64"):
        prepare(lake, shrunk)
    rekeyed = [col("id", pa.int64(), 1), col("name", pa.string(), 2, nullable=False), *BASE[2:]]
    with pytest.raises(SchemaChangeError, match="a key change"):
        prepare(lake, rekeyed, keys=("name",))
    # a renamed key column: the mirror's key, tombstones and staging go by its name
    with pytest.raises(SchemaChangeError, match=r"column key is a key column renamed from id, a key change"):
        prepare(lake, [col("key", pa.int64(), 1, nullable=False), *BASE[1:]], keys=("key",))
    assert lake.shape() == shape and lake.fingerprint() == fingerprint
    assert values(lake.rows(), "id", "name", "qty", "price") == [(1, "a", 1, Decimal("1.50"))]


def test_the_hint_says_how_to_go_on_in_the_format_s_own_words(lake: Lake) -> None:
    prepare(lake, BASE)
    narrowed = [*BASE[:2], col("qty", pa.int16(), 3), *BASE[3:]]
    rescaled = [*BASE[:3], col("price", pa.decimal128(12, 4), 4), BASE[4]]
    if lake.kind == "delta":
        with pytest.raises(SchemaChangeError, match=r"To go on: rewrite the mirror table at .*public/items yourself with its "
                                                    r"column qty .*write_deltalake"):
            prepare(lake, narrowed)
        _, evolution = prepare(lake, rescaled)  # a rewrite may give a decimal more scale
        assert kinds(evolution) == ["WidenColumn"] and ("price", pa.decimal128(12, 4), True) in lake.shape()
    else:
        _, evolution = prepare(lake, narrowed)  # Iceberg stores a smallint as int: nothing changes
        assert evolution.operations == ()
        with pytest.raises(SchemaChangeError, match=r"column price changed type from decimal128\(8, 2\) to decimal128\(12, 4\).*"
                                                    r"To go on: change the column price .*never a decimal's scale"):
            prepare(lake, rescaled)


def test_strict_stops_at_any_change_and_goes_on_once_the_mirror_has_it(lake: Lake) -> None:
    strict = EvolutionPolicy("strict")
    prepare(lake, BASE, policy=strict)
    added = [*BASE, col("flag", pa.int32(), 6)]
    fingerprint = lake.fingerprint()
    with pytest.raises(SchemaChangeError, match=r"source table public.items: column flag \(int32\) was added, and "
                                                r"sparkcdc.apply.schema.evolution is strict"):
        prepare(lake, added, policy=strict)
    assert lake.fingerprint() == fingerprint
    lake.add_column_by_hand("flag", pa.int32())
    _, evolution = prepare(lake, added, policy=strict)
    assert not evolution.changed
    assert lake.identity()["columns"]["flag"] == 6  # the owner's column is the source's from now on
    renamed = [BASE[0], col("title", pa.string(), 2), *BASE[2:], added[-1]]
    with pytest.raises(SchemaChangeError, match="column name was renamed to title, and sparkcdc.apply.schema.evolution is strict"):
        prepare(lake, renamed, policy=strict)


def test_ignore_new_columns_leaves_them_out(lake: Lake) -> None:
    policy = EvolutionPolicy("ignore-new-columns")
    prepare(lake, BASE, policy=policy)
    renamed = [BASE[0], col("title", pa.string(), 2), *BASE[2:], col("flag", pa.int32(), 6, fill=3)]
    spec, evolution = prepare(lake, renamed, policy=policy)
    assert [c.name for c in evolution.columns] == ["id", "title", "qty", "price", "ratio"]
    assert [name for name, _, _ in lake.shape()] == ["id", "title", "qty", "price", "ratio"]
    assert apply(lake, spec, renamed, [{"id": 1, "title": "a", "flag": 9}], 1)
    assert values(lake.rows(), "id", "title") == [(1, "a")]


def test_dropped_columns_are_dropped_when_asked(lake: Lake) -> None:
    policy = EvolutionPolicy(dropped_columns="drop")
    spec, _ = prepare(lake, BASE, policy=policy)
    assert apply(lake, spec, BASE, [{"id": 1, "name": "a", "qty": 1, "ratio": 0.5}], 1)
    spec, evolution = prepare(lake, BASE[:3], policy=policy)
    assert kinds(evolution) == ["DropColumn", "DropColumn"]
    assert [name for name, _, _ in lake.shape()] == ["id", "name", "qty"]
    assert lake.rows() == [{"id": 1, "name": "a", "qty": 1}]
    # A column the source drops in the batch being applied: kept (nullable) until the next shape,
    # or dropped at once under dropped_columns=drop.
    qty_dropped = [BASE[0], BASE[1], col("qty", pa.int32(), 3, nullable=False, dropped=True)]
    _, evolution = prepare(lake, qty_dropped)
    assert evolution.operations == () and [c.name for c in evolution.columns] == ["id", "name", "qty"]
    _, evolution = prepare(lake, qty_dropped, policy=policy)
    assert kinds(evolution) == ["DropColumn"] and [c.name for c in evolution.columns] == ["id", "name"]
    assert lake.rows() == [{"id": 1, "name": "a"}]


def test_scd2_history_follows_too(lake: Lake) -> None:
    spec, _ = prepare(lake, BASE, scd=2)
    assert apply(lake, spec, BASE, [{"id": 1, "name": "a", "qty": 1}], 1)
    later = [BASE[0], col("title", pa.string(), 2), col("qty", pa.int64(), 3), *BASE[3:],
             col("flag", pa.int32(), 6, fill=3, nullable=False)]
    spec, evolution = prepare(lake, later, scd=2)
    assert kinds(evolution) == ["RenameColumn", "WidenColumn", "AddColumn"] and evolution.tighten == ()
    assert [name for name, _, _ in lake.shape()] == ["id", "title", "qty", "price", "ratio", "__START_AT", "__END_AT", "flag"]
    assert apply(lake, spec, later, [{"id": 1, "title": "b", "qty": 2**40, "flag": 4}], 2)
    assert values(lake.rows(), "id", "title", "qty", "flag") == [(1, "a", 1, 3), (1, "b", 2**40, 4)]
    assert [r["__END_AT"] is None for r in lake.rows()] == [False, True]
    assert lake.target.open_versions(spec, [(1,)])[(1,)][0] == [1, "b", 2**40, None, None, 4]


def test_a_replay_after_the_evolution_changes_nothing(lake: Lake) -> None:
    spec, _ = prepare(lake, BASE)
    assert apply(lake, spec, BASE, [{"id": 1, "name": "a"}], 1)
    later = [BASE[0], col("title", pa.string(), 2), *BASE[2:], col("flag", pa.int32(), 6, fill=7)]
    spec, evolution = prepare(lake, later)
    assert evolution.changed
    fingerprint, rows = lake.fingerprint(), lake.rows()
    _, again = prepare(lake, later)  # the same shape, as a restarted run prepares it
    assert again.operations == () and again.columns == evolution.columns
    _, in_new_process = prepare(lake, later, target=lake.open())
    assert in_new_process.operations == ()
    assert lake.fingerprint() == fingerprint and lake.rows() == rows  # not even the identity written again


def test_the_batch_position_survives_a_rewrite(lake: Lake) -> None:
    spec, _ = prepare(lake, BASE)
    assert apply(lake, spec, BASE, [{"id": 1, "name": "a"}], 5)
    assert apply(lake, spec, BASE, [{"id": 2, "name": "b"}], 2, pipeline="q", deletes=(1,))
    later = [BASE[0], col("title", pa.string(), 2), col("qty", pa.int64(), 3), *BASE[3:], col("flag", pa.int32(), 6, fill=7)]
    spec, evolution = prepare(lake, later)
    assert kinds(evolution) == ["RenameColumn", "WidenColumn", "AddColumn"]  # a rewrite in both formats
    assert lake.target.applied_batch(spec, "p") == 5 and lake.target.applied_batch(spec, "q") == 2
    assert lake.open().applied_batch(spec, "p") == 5  # read the format's own way by a new process
    if lake.kind == "delta":
        assert lake._delta().transaction_version("sparkcdc:p") == 5
    assert not apply(lake, spec, later, [{"id": 1, "title": "replayed"}], 5)  # a replay of an applied batch
    assert lake.target.tombstones(spec, [(1,)]) == {(1,): (290, 290, 0)}
    assert values(lake.rows(), "id", "title", "flag") == [(2, "b", 7)]
    assert apply(lake, spec, later, [{"id": 3, "title": "c", "qty": 2**40}], 6)
    assert lake.target.applied_batch(spec, "p") == 6


def test_a_widened_key_widens_the_tombstones_too(lake: Lake) -> None:
    narrow = [col("id", pa.int32(), 1, nullable=False), *BASE[1:]]
    spec, _ = prepare(lake, narrow)
    assert apply(lake, spec, narrow, [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}], 1)
    assert apply(lake, spec, narrow, [], 2, deletes=(2,))
    assert ("id", pa.int32(), False) in lake.shape(tombstones=True)
    spec, evolution = prepare(lake, BASE)
    assert kinds(evolution) == ["WidenColumn"]
    assert ("id", pa.int64(), False) in lake.shape() and ("id", pa.int64(), False) in lake.shape(tombstones=True)
    big = 2**40
    assert apply(lake, spec, BASE, [{"id": big, "name": "big"}], 3)
    assert apply(lake, spec, BASE, [], 4, deletes=(big,))
    assert lake.target.tombstones(spec, [(2,), (big,)]) == {(2,): (290, 290, 0), (big,): (490, 490, 0)}
    assert values(lake.rows(), "id", "name") == [(1, "a")]


# -- crashes -------------------------------------------------------------------------------------------


def test_delta_a_crash_before_the_identity_is_recorded_does_not_leave_a_stale_one(tmp_path: Path,
                                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A swap of two columns' names is a rewrite, then the identity in a commit of its own: a
    crash between them must not let the next prepare match the swapped columns by the old identity
    (it would swap them back)."""
    lake = Lake("delta", tmp_path)
    spec, _ = prepare(lake, BASE)
    assert apply(lake, spec, BASE, [{"id": 1, "name": "n", "qty": 1}], 1)
    swapped = [BASE[0], col("qty", pa.string(), 2), col("name", pa.int32(), 3), *BASE[3:]]
    recorded = delta._record_identity
    calls: list[dict[str, Any]] = []

    def dies_after_the_rewrite(handle: DeltaTable, record: dict[str, Any]) -> None:
        calls.append(dict(record))
        if "pending" not in record:
            raise OSError("the process died")
        recorded(handle, record)

    with monkeypatch.context() as patched:
        patched.setattr(delta, "_record_identity", dies_after_the_rewrite)
        with pytest.raises(TargetError, match="the process died"):
            prepare(lake, swapped)
    assert [name for name, _, _ in lake.shape()] == ["id", "qty", "name", "price", "ratio"]  # the rewrite went in
    assert lake.identity()["columns"] == {"id": 1, "name": 2, "qty": 3, "price": 4, "ratio": 5}  # the identity did not
    spec, evolution = prepare(lake, swapped, target=lake.open())
    assert evolution.operations == ()
    assert values(lake.rows(), "id", "qty", "name") == [(1, "n", 1)]
    assert lake.identity()["columns"] == {"id": 1, "qty": 2, "name": 3, "price": 4, "ratio": 5}
    assert "pending" not in lake.identity()


def test_delta_a_crash_before_the_rewrite_leaves_the_evolution_to_the_next_prepare(tmp_path: Path,
                                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    lake = Lake("delta", tmp_path)
    spec, _ = prepare(lake, BASE)
    assert apply(lake, spec, BASE, [{"id": 1, "name": "n", "qty": 1}], 1)
    swapped = [BASE[0], col("qty", pa.string(), 2), col("name", pa.int32(), 3), *BASE[3:]]

    def dies(*args: Any, **kwargs: Any) -> None:
        raise OSError("the process died")

    with monkeypatch.context() as patched:
        patched.setattr(delta, "write_deltalake", dies)
        with pytest.raises(TargetError, match="the process died"):
            prepare(lake, swapped)
    assert [name for name, _, _ in lake.shape()] == ["id", "name", "qty", "price", "ratio"]
    assert "pending" in lake.identity()
    _, evolution = prepare(lake, swapped, target=lake.open())
    assert kinds(evolution) == ["RenameColumn"] * 4  # through temporary names
    assert values(lake.rows(), "id", "qty", "name") == [(1, "n", 1)]
    assert "pending" not in lake.identity()


def test_delta_a_rewrite_is_one_commit_and_streams_the_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lake = Lake("delta", tmp_path)
    spec, _ = prepare(lake, BASE)
    for batch in range(1, 4):
        assert apply(lake, spec, BASE, [{"id": 10 * batch + i, "name": f"n{i}"} for i in range(3)], batch)
    written: list[Any] = []

    def watching(table: Any, data: Any, **kwargs: Any) -> None:
        assert isinstance(data, pa.RecordBatchReader)  # a stream, never the table as one
        written.append(kwargs)
        write_deltalake(table, data, **kwargs)

    monkeypatch.setattr(delta, "write_deltalake", watching)
    version = lake.fingerprint()
    prepare(lake, [BASE[0], col("title", pa.string(), 2), *BASE[2:], col("flag", pa.int32(), 6, fill=1)])
    assert [(w["mode"], w["schema_mode"]) for w in written] == [("overwrite", "overwrite")]
    # the pending identity, the rewrite, the identity
    assert lake.fingerprint() == version + 3
    history = lake._delta().history(3)
    assert [h["operation"] for h in history] == ["SET TBLPROPERTIES", "WRITE", "SET TBLPROPERTIES"]
    assert history[1]["sparkcdc.evolution"] == lake_token(history[2])


def lake_token(commit: dict[str, Any]) -> str:
    """The token of the pending identity a SET TBLPROPERTIES commit recorded."""
    properties = json.loads(commit["operationParameters"]["properties"])
    token: str = json.loads(properties[IDENTITY_PROPERTY])["pending"]["token"]
    return token


def test_iceberg_the_schema_change_the_rewrite_and_the_identity_are_one_commit(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    lake = Lake("iceberg", tmp_path)
    spec, _ = prepare(lake, BASE)
    assert apply(lake, spec, BASE, [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}], 1)
    later = [BASE[0], col("title", pa.string(), 2), col("qty", pa.int64(), 3), *BASE[3:], col("flag", pa.int32(), 6, fill=7)]
    commits = len(lake._iceberg().metadata.metadata_log)
    shape = lake.shape()

    def dies(self: Any) -> None:
        raise OSError("the process died")

    from pyiceberg.table import Transaction

    with monkeypatch.context() as patched:
        patched.setattr(Transaction, "commit_transaction", dies)
        with pytest.raises(TargetError, match="the process died"):
            prepare(lake, later)
    assert lake.shape() == shape and len(lake._iceberg().metadata.metadata_log) == commits  # nothing of it went in
    spec, evolution = prepare(lake, later, target=lake.open())
    assert kinds(evolution) == ["RenameColumn", "WidenColumn", "AddColumn"]
    assert len(lake._iceberg().metadata.metadata_log) == commits + 1
    assert values(lake.rows(), "id", "title", "flag") == [(1, "a", 7), (2, "b", 7)]
    assert lake.identity()["columns"]["title"] == 2


# -- what is wider ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("old", "new", "verdict", "iceberg_verdict"), [
    (pa.int32(), pa.int64(), "wider", "wider"), (pa.int64(), pa.int32(), "unsafe", "unsafe"),
    (pa.int8(), pa.int16(), "wider", "wider"), (pa.float32(), pa.float64(), "wider", "wider"),
    (pa.float64(), pa.float32(), "unsafe", "unsafe"), (pa.int32(), pa.float64(), "unsafe", "unsafe"),
    (pa.decimal128(8, 2), pa.decimal128(12, 2), "wider", "wider"), (pa.decimal128(8, 2), pa.decimal128(12, 4), "wider", "unsafe"),
    (pa.decimal128(8, 2), pa.decimal128(8, 3), "unsafe", "unsafe"), (pa.decimal128(8, 2), pa.decimal128(7, 1), "unsafe", "unsafe"),
    (pa.string(), pa.string(), "same", "same"), (pa.int32(), pa.string(), "unsafe", "unsafe"),
    (pa.timestamp("us", tz="UTC"), pa.timestamp("us"), "unsafe", "unsafe"),
    (pa.list_(pa.field("element", pa.string(), nullable=False)), pa.list_(pa.string()), "same", "same"),
    (pa.list_(pa.int32()), pa.list_(pa.int64()), "unsafe", "unsafe"),
])
def test_what_a_lake_mirror_widens(old: pa.DataType, new: pa.DataType, verdict: str, iceberg_verdict: str) -> None:
    assert lake_type_verdict(old, new) == verdict
    assert lake_type_verdict(old, new, rescale_decimals=False) == iceberg_verdict


def test_the_rules_compare_types_as_the_format_stores_them() -> None:
    assert iceberg.ICEBERG_RULES.compare(pa.large_string(), TargetColumn("s", pa.string())) == "same"
    assert iceberg.ICEBERG_RULES.compare(pa.int32(), TargetColumn("n", pa.int16())) == "same"  # Iceberg has no smallint
    assert delta.DELTA_RULES.compare(pa.int32(), TargetColumn("n", pa.int16())) == "unsafe"
    assert delta.DELTA_RULES.compare(pa.timestamp("us", tz="UTC"), TargetColumn("t", pa.timestamp("ns", tz="+02:00"))) == "same"
    assert delta.DELTA_RULES.compare(pa.int64(), TargetColumn("u", pa.uint32())) == "same"  # stored as the next signed type
