"""The Apache Iceberg apply target against a real local catalog (pyiceberg's SQL catalog on SQLite),
driven the way the Spark layer drives it: fold a batch with the target's tombstones and open
versions, then apply it. Pure Python."""

from __future__ import annotations

import itertools
import random
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.types import StringType

from sparkcdc.apply import ApplySpec, TargetError
from sparkcdc.apply.fold import fold_changes
from sparkcdc.apply.spec import DEFAULT_SEQUENCE, ResolvedSpec
from sparkcdc.apply.targets import TargetColumn, target_for
from sparkcdc.apply.targets.iceberg import IcebergTarget, batch_property, pipeline_property

COLUMNS = [
    TargetColumn("id", pa.int64(), nullable=False),
    TargetColumn("name", pa.string()),
    TargetColumn("body", pa.string()),
    TargetColumn("qty", pa.int64()),
]
SEQ_COLUMNS = [TargetColumn(name, pa.int64(), nullable=False) for name in DEFAULT_SEQUENCE]


class Feed:
    """Typed change events as the Spark view hands them over, with increasing sequences."""

    def __init__(self, columns: list[TargetColumn] = COLUMNS) -> None:
        self.columns = columns
        self.lsn = itertools.count(1000, 10)

    def event(self, op: str = "u", *, lsn: int | None = None, unchanged: tuple[str, ...] = (), **values: Any) -> dict[str, Any]:
        lsn = next(self.lsn) if lsn is None else lsn
        row = {c.name: values.get(c.name) for c in self.columns}
        row.update(__is_delete=op == "d", __is_truncate=op == "t", __unchanged=list(unchanged),
                   __commit_lsn=lsn, __lsn=lsn + 1, __ordinal=0)
        return row

    def table(self, events: list[dict[str, Any]]) -> pa.Table:
        fields = [pa.field(c.name, c.arrow_type) for c in self.columns] + [
            pa.field("__is_delete", pa.bool_()), pa.field("__is_truncate", pa.bool_()),
            pa.field("__unchanged", pa.list_(pa.string())),
            pa.field("__commit_lsn", pa.int64()), pa.field("__lsn", pa.int64()), pa.field("__ordinal", pa.int64()),
        ]
        schema = pa.schema(fields)
        return pa.table({f.name: pa.array([e[f.name] for e in events], type=f.type) for f in schema}, schema=schema)


def location(root: Path) -> str:
    return f"iceberg+file://{root}"


class Harness:
    def __init__(self, root: Path, spec: ApplySpec, columns: list[TargetColumn] = COLUMNS,
                 sequence: list[TargetColumn] = SEQ_COLUMNS, target: IcebergTarget | None = None) -> None:
        self.target = target or IcebergTarget(location(root))
        self.columns = columns
        self.resolved: ResolvedSpec = spec.resolve([c.name for c in columns], [columns[0].name])
        self.feed = Feed(columns)
        self.target.prepare(self.resolved, columns, sequence)
        self.batch = itertools.count(0)
        schema, _, name = self.resolved.target.rpartition(".")
        self.identifier = (schema or "public", name)
        self.last_changes = None

    def run(self, events: list[dict[str, Any]], *, batch_id: int | None = None, pipeline: str = "pipe",
            replace_at: tuple[Any, ...] | None = None) -> bool:
        table = self.feed.table(events)
        index = [self.resolved.columns.index(k) for k in self.resolved.keys]
        keys = {tuple(e[self.resolved.columns[i]] for i in index) for e in events if not e["__is_truncate"]}
        changes = fold_changes(
            self.resolved, table,
            tombstones=self.target.tombstones(self.resolved, keys),
            open_versions=self.target.open_versions(self.resolved, keys) if self.resolved.scd_type == 2 else None,
            replace_at=replace_at,
        )
        self.last_changes = changes
        return self.target.apply(changes, pipeline_id=pipeline, batch_id=next(self.batch) if batch_id is None else batch_id)

    def table(self, suffix: str = "") -> Any:
        return self.target.catalog().load_table((self.identifier[0], self.identifier[1] + suffix))

    def rows(self) -> list[dict[str, Any]]:
        rows = self.table().scan().to_arrow().to_pylist()
        return sorted(rows, key=lambda r: (r["id"], _start(r)))

    def state(self) -> dict[int, dict[str, Any]]:
        return {r["id"]: r for r in self.rows()}

    def snapshots(self, suffix: str = "") -> int:
        return len(self.table(suffix).snapshots())

    def metadata(self) -> str:
        return self.table().metadata_location


def _start(row: dict[str, Any]) -> tuple[Any, ...]:
    start = row.get("__START_AT")
    return () if start is None else tuple(start.values()) if isinstance(start, dict) else (start,)


def seq(lsn: int) -> dict[str, int]:
    return {"__commit_lsn": lsn, "__lsn": lsn + 1, "__ordinal": 0}


def data(rows: list[dict[str, Any]], *names: str) -> list[tuple[Any, ...]]:
    return [tuple(r[n] for n in names) for r in rows]


def _open_counts(rows: list[dict[str, Any]]) -> dict[int, int]:
    counts: dict[int, int] = {}
    for r in rows:
        counts[r["id"]] = counts.get(r["id"], 0) + (r["__END_AT"] is None)
    return counts


# -- locations and set-up --------------------------------------------------------------------------


def test_target_for_an_iceberg_file_location_makes_a_local_catalog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    warehouse = tmp_path / "wh"
    target = target_for(f"iceberg+file://{warehouse}")
    assert isinstance(target, IcebergTarget)
    h = Harness(tmp_path, ApplySpec("public.items"), target=target)
    assert h.run([h.feed.event("c", id=1, name="a", body="x", qty=1)])
    assert (warehouse / "sparkcdc-catalog.db").is_file()
    table = h.table()
    assert table.location().startswith(f"file://{warehouse}")
    assert [f.name for f in table.schema().fields] == ["id", "name", "body", "qty"]
    assert [table.schema().find_column_name(i) for i in table.schema().identifier_field_ids] == ["id"]
    # a relative warehouse resolves against the working directory; a remote host is refused
    monkeypatch.chdir(tmp_path)
    relative = target_for("iceberg+file:rel/wh")
    assert isinstance(relative, IcebergTarget) and relative.description == f"Iceberg warehouse {tmp_path / 'rel' / 'wh'}"
    with pytest.raises(TargetError, match="not the host"):
        target_for("iceberg+file://somehost/wh")
    with pytest.raises(TargetError, match="iceberg:<catalog name>"):
        target_for("iceberg:")


def test_target_for_a_named_catalog_reads_pyiceberg_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    warehouse = tmp_path / "named"
    warehouse.mkdir()
    monkeypatch.setenv("PYICEBERG_CATALOG__LAKE__TYPE", "sql")
    monkeypatch.setenv("PYICEBERG_CATALOG__LAKE__URI", f"sqlite:///{warehouse}/catalog.db")
    monkeypatch.setenv("PYICEBERG_CATALOG__LAKE__WAREHOUSE", f"file://{warehouse}")
    target = target_for("iceberg:lake")
    assert isinstance(target, IcebergTarget) and target.description == "Iceberg catalog lake"
    h = Harness(tmp_path, ApplySpec("shop.items"), target=target)
    assert h.run([h.feed.event("c", id=1, name="a", body="x", qty=1)], batch_id=3)
    assert (warehouse / "catalog.db").is_file()
    assert h.target.applied_batch(h.resolved, "pipe") == 3
    assert data(h.rows(), "id", "name") == [(1, "a")]
    assert h.table().location().startswith(f"file://{warehouse}/shop")
    # an unknown catalog: a TargetError naming the location
    with pytest.raises(TargetError, match="iceberg:nowhere"):
        target_for("iceberg:nowhere").prepare(h.resolved, COLUMNS, SEQ_COLUMNS)


def test_an_existing_table_without_the_expected_columns_is_refused(tmp_path: Path) -> None:
    catalog = IcebergTarget(location(tmp_path)).catalog()
    catalog.create_namespace("public")
    catalog.create_table("public.items", schema=pa.schema([("id", pa.int64()), ("name", pa.string())]))
    with pytest.raises(TargetError, match=r"public\.items .*without column\(s\) body, qty"):
        Harness(tmp_path, ApplySpec("public.items"))
    catalog.create_table("public.hist", schema=pa.schema([(c.name, c.arrow_type) for c in COLUMNS]))
    with pytest.raises(TargetError, match=r"without column\(s\) __START_AT, __END_AT \(stored_as_scd_type=2\)"):
        Harness(tmp_path, ApplySpec("public.hist", stored_as_scd_type=2))


def test_an_existing_table_with_more_columns_keeps_them(tmp_path: Path) -> None:
    catalog = IcebergTarget(location(tmp_path)).catalog()
    catalog.create_namespace("public")
    schema = pa.schema([(c.name, c.arrow_type) for c in COLUMNS] + [("note", pa.string())])
    catalog.create_table("public.items", schema=schema).append(
        pa.table({"id": [1], "name": ["a"], "body": ["x"], "qty": [1], "note": ["mine"]}, schema=schema))
    h = Harness(tmp_path, ApplySpec("public.items"))
    h.run([h.feed.event("u", id=1, name="b", body="x", qty=2), h.feed.event("c", id=2, name="c", body="y", qty=3)])
    assert data(h.rows(), "id", "name", "qty", "note") == [(1, "b", 2, "mine"), (2, "c", 3, None)]


def test_scd2_an_existing_table_with_more_columns_keeps_them(tmp_path: Path) -> None:
    h = Harness(tmp_path, ApplySpec("public.items", stored_as_scd_type=2))
    h.run([h.feed.event("c", id=1, name="a", body="x", qty=1, lsn=100)])
    with h.table().update_schema() as update:
        update.add_column("note", StringType())
    table = h.table()
    rows = table.scan().to_arrow()
    note = table.schema().as_arrow().field("note")
    table.overwrite(rows.set_column(rows.schema.get_field_index("note"), note, pa.array(["mine"], type=note.type)))
    # an untracked-in-place rewrite and a new version: the rewritten row keeps its note, the new version has none
    h.run([h.feed.event("u", id=1, name="a", body="y", qty=1, lsn=200), h.feed.event("c", id=2, name="b", body="z", qty=2, lsn=200)])
    h.run([h.feed.event("t", lsn=300)])
    assert data(h.rows(), "id", "body", "note", "__END_AT") == [
        (1, "x", "mine", seq(200)), (1, "y", None, seq(300)), (2, "z", None, seq(300))]


def test_unprepared_and_unsupported(tmp_path: Path) -> None:
    target = IcebergTarget(location(tmp_path))
    resolved = ApplySpec("public.items").resolve(["id"], ["id"])
    assert target.applied_batch(resolved, "pipe") is None  # no table: nothing applied
    with pytest.raises(TargetError, match="not prepared"):
        target.tombstones(resolved, [(1,)])
    with pytest.raises(TargetError, match="column t: Iceberg has no type for Arrow duration"):
        target.prepare(ApplySpec("public.times").resolve(["id", "t"], ["id"]),
                       [TargetColumn("id", pa.int64()), TargetColumn("t", pa.duration("us"))], SEQ_COLUMNS)
    with pytest.raises(TargetError, match="column n: Iceberg stores decimals of at most 38 digits"):
        target.prepare(ApplySpec("public.wide").resolve(["id", "n"], ["id"]),
                       [TargetColumn("id", pa.int64()), TargetColumn("n", pa.decimal256(50, 2))], SEQ_COLUMNS)
    with pytest.raises(TargetError, match=r"preparing target table public\.floaty at iceberg\+file://"):
        # Iceberg refuses a float identifier field
        target.prepare(ApplySpec("public.floaty").resolve(["f"], ["f"]), [TargetColumn("f", pa.float64())], SEQ_COLUMNS)


def test_an_existing_table_is_used_by_a_new_target(tmp_path: Path) -> None:
    h = Harness(tmp_path, ApplySpec("public.items"))
    h.run([h.feed.event("c", id=1, name="a", body="x", qty=1)], batch_id=0)
    h.target.close()
    again = Harness(tmp_path, ApplySpec("public.items"))  # a new process
    assert again.target.applied_batch(again.resolved, "pipe") == 0
    again.run([again.feed.event("u", id=1, name="b", qty=2, unchanged=("body",))], batch_id=1)
    assert data(again.rows(), "id", "name", "body", "qty") == [(1, "b", "x", 2)]


# -- SCD1 -----------------------------------------------------------------------------------------


def test_scd1_insert_update_delete(tmp_path: Path) -> None:
    h = Harness(tmp_path, ApplySpec("public.items"))
    f = h.feed
    assert h.run([f.event("c", id=1, name="a", body="x", qty=1), f.event("c", id=2, name="b", body="y", qty=2),
                  f.event("c", id=3, name="c", body="z", qty=3)])
    assert data(h.rows(), "id", "name", "body", "qty") == [(1, "a", "x", 1), (2, "b", "y", 2), (3, "c", "z", 3)]
    assert h.run([f.event("u", id=1, name="A", body="x", qty=10), f.event("d", id=2, name=None, body=None, qty=None),
                  f.event("u", id=3, name="c", body="z", qty=30), f.event("u", id=3, name="C", body="z", qty=31)])
    assert data(h.rows(), "id", "name", "body", "qty") == [(1, "A", "x", 10), (3, "C", "z", 31)]
    # insert then delete in one batch leaves nothing; delete then re-insert leaves the new row
    assert h.run([f.event("c", id=4, name="d", body="w", qty=4), f.event("d", id=4),
                  f.event("d", id=1), f.event("c", id=1, name="new", body="n", qty=0)])
    assert data(h.rows(), "id", "name", "body", "qty") == [(1, "new", "n", 0), (3, "C", "z", 31)]


def test_scd1_unchanged_toast_keeps_stored_value_across_batches(tmp_path: Path) -> None:
    h = Harness(tmp_path, ApplySpec("public.docs"))
    f = h.feed
    h.run([f.event("c", id=1, name="a", body="big-1", qty=1), f.event("c", id=2, name="b", body="big-2", qty=2)])
    # body not carried (unchanged TOAST): the stored value stays; the other row's body changes
    h.run([f.event("u", id=1, name="a2", qty=5, unchanged=("body",)), f.event("u", id=2, name="b2", body="BIG-2", qty=6)])
    assert data(h.rows(), "id", "name", "body", "qty") == [(1, "a2", "big-1", 5), (2, "b2", "BIG-2", 6)]
    # two placeholders in one batch: still the stored value; a later full image in the batch wins
    h.run([f.event("u", id=1, name="a3", qty=7, unchanged=("body",)), f.event("u", id=1, name="a4", qty=8, unchanged=("body",)),
           f.event("u", id=2, name="b3", qty=9, unchanged=("body",)), f.event("u", id=2, name="b4", body="new-2", qty=9)])
    assert data(h.rows(), "id", "name", "body", "qty") == [(1, "a4", "big-1", 8), (2, "b4", "new-2", 9)]
    # a placeholder for a key the target does not have: inserted with null
    h.run([f.event("u", id=9, name="z", qty=1, unchanged=("body",))])
    assert h.state()[9]["body"] is None
    assert h.state()[1]["body"] == "big-1"


def test_scd1_truncate_then_inserts_in_one_batch(tmp_path: Path) -> None:
    h = Harness(tmp_path, ApplySpec("public.items"))
    f = h.feed
    h.run([f.event("c", id=i, name=f"n{i}", body="b", qty=i) for i in range(1, 6)])
    assert h.run([f.event("u", id=1, name="lost", body="b", qty=0), f.event("t"),
                  f.event("c", id=2, name="two", body="b2", qty=2), f.event("c", id=7, name="seven", body=None, qty=7),
                  f.event("u", id=3, name="three", qty=3, unchanged=("body",))])
    assert data(h.rows(), "id", "name", "body", "qty") == [(2, "two", "b2", 2), (3, "three", None, 3), (7, "seven", None, 7)]
    # a truncate alone empties the table
    h.run([f.event("t")])
    assert h.rows() == []


def test_replaying_a_batch_changes_nothing(tmp_path: Path) -> None:
    h = Harness(tmp_path, ApplySpec("public.items"))
    f = h.feed
    first = [f.event("c", id=1, name="a", body="x", qty=1), f.event("c", id=2, name="b", body="y", qty=2)]
    second = [f.event("u", id=1, name="A", body="x", qty=1), f.event("d", id=2)]
    assert h.run(first, batch_id=0)
    assert h.run(second, batch_id=1)
    metadata, snapshots, rows = h.metadata(), h.snapshots(), h.rows()
    tomb_snapshots = h.snapshots("__sparkcdc_tombstones")
    assert not h.run(second, batch_id=1)
    assert not h.run(first, batch_id=0)
    assert h.metadata() == metadata and h.snapshots() == snapshots and h.rows() == rows
    assert h.snapshots("__sparkcdc_tombstones") == tomb_snapshots
    assert h.target.applied_batch(h.resolved, "pipe") == 1
    # another pipeline has its own position
    assert h.target.applied_batch(h.resolved, "other") is None
    assert h.run([f.event("u", id=1, name="other", body="x", qty=1)], batch_id=0, pipeline="other")
    assert h.target.applied_batch(h.resolved, "other") == 0 and h.target.applied_batch(h.resolved, "pipe") == 1
    properties = h.table().properties
    assert properties[batch_property("pipe")] == "1" and properties[pipeline_property("other")] == "other"


def test_each_batch_is_one_commit_with_its_position(tmp_path: Path) -> None:
    h = Harness(tmp_path, ApplySpec("public.items"))
    f = h.feed
    h.run([f.event("c", id=1, name="a", body="x", qty=1)], batch_id=5)
    history = len(h.table().metadata.metadata_log)
    h.run([f.event("d", id=1), f.event("c", id=2, name="b", body="y", qty=2)], batch_id=6)
    assert len(h.table().metadata.metadata_log) == history + 1  # one commit: the deletes, the append, the position
    # the batch's snapshots carry it in their summaries
    current = h.table().current_snapshot()
    assert current is not None and current.summary is not None
    assert (current.summary["sparkcdc.pipeline_id"], current.summary["sparkcdc.batch_id"]) == ("pipe", "6")
    # a batch that changes no row (deleting a key the table does not have) is still recorded, without a snapshot
    snapshots = h.snapshots()
    assert h.run([f.event("d", id=99)], batch_id=7)
    assert h.target.applied_batch(h.resolved, "pipe") == 7
    assert h.snapshots() == snapshots
    assert len(h.table().metadata.metadata_log) == history + 2


def test_an_image_replaces_the_table_and_is_applied_again_at_its_own_batch(tmp_path: Path) -> None:
    h = Harness(tmp_path, ApplySpec("public.items"))
    f = h.feed
    first = [f.event("r", id=i, name=f"n{i}", body="b", qty=i, lsn=100) for i in (1, 2, 3)]
    assert h.run(first, batch_id=0, replace_at=(100, 101, 0))
    assert h.run(first, batch_id=0, replace_at=(100, 101, 0))
    assert data(h.rows(), "id", "name") == [(1, "n1"), (2, "n2"), (3, "n3")]
    newer = [f.event("r", id=2, name="two", body="b", qty=2, lsn=500), f.event("r", id=3, name="n3", body="b", qty=3, lsn=500),
             f.event("r", id=4, name="n4", body="b", qty=4, lsn=500)]
    assert h.run(newer, batch_id=0, replace_at=(500, 501, 0))
    assert data(h.rows(), "id", "name") == [(2, "two"), (3, "n3"), (4, "n4")]
    assert h.run([f.event("c", id=5, name="n5", body="b", qty=5)], batch_id=1)
    assert not h.run(newer, batch_id=0, replace_at=(500, 501, 0))  # an old replay once batch 1 is recorded
    assert data(h.rows(), "id", "name") == [(2, "two"), (3, "n3"), (4, "n4"), (5, "n5")]
    assert h.run([], batch_id=2, replace_at=(900, 901, 0))  # an empty image empties the table
    assert h.rows() == []


def test_a_late_event_older_than_a_recorded_delete_is_dropped(tmp_path: Path) -> None:
    h = Harness(tmp_path, ApplySpec("public.items"))
    f = h.feed
    h.run([f.event("c", id=1, name="a", body="x", qty=1, lsn=100), f.event("c", id=2, name="b", body="y", qty=2, lsn=110)])
    h.run([f.event("d", id=1, lsn=200)])
    assert h.target.tombstones(h.resolved, [(1,), (2,), (3,)]) == {(1,): (200, 201, 0)}
    # an update of id 1 older than its delete arrives late: dropped; a newer insert comes back
    h.run([f.event("u", id=1, name="zombie", body="x", qty=1, lsn=150), f.event("u", id=2, name="B", body="y", qty=2, lsn=300)])
    assert h.last_changes is not None and h.last_changes.dropped_late == 1
    assert data(h.rows(), "id", "name") == [(2, "B")]
    h.run([f.event("c", id=1, name="reborn", body="x", qty=1, lsn=400)])
    assert data(h.rows(), "id", "name") == [(1, "reborn"), (2, "B")]
    # a later delete raises the recorded sequence; an older one does not lower it
    h.run([f.event("d", id=1, lsn=500)])
    h.run([f.event("d", id=1, lsn=450)])
    assert h.target.tombstones(h.resolved, [(1,)]) == {(1,): (500, 501, 0)}


def test_tombstones_expire_after_the_retention(tmp_path: Path) -> None:
    h = Harness(tmp_path, ApplySpec("public.items", tombstone_retention=timedelta(milliseconds=300)))
    f = h.feed
    assert h.target.tombstones(h.resolved, [(1,)]) == {}  # no tombstone table yet
    assert not h.target.catalog().table_exists(("public", "items__sparkcdc_tombstones"))
    h.run([f.event("c", id=1, name="a", body="x", qty=1, lsn=100), f.event("d", id=1, lsn=200)])
    assert h.target.tombstones(h.resolved, [(1,)]) == {(1,): (200, 201, 0)}
    time.sleep(0.4)
    assert h.target.tombstones(h.resolved, [(1,)]) == {}  # read: no longer retained
    h.run([f.event("d", id=2, lsn=300)])  # the next recording removes the expired ones
    tombs = h.table("__sparkcdc_tombstones")
    rows = tombs.scan().to_arrow().to_pylist()
    assert [(r["id"], r["__SEQUENCE"]) for r in rows] == [(2, seq(300))]
    schema = tombs.schema().as_arrow()
    assert schema.names == ["id", "__SEQUENCE", "__DELETED_AT"]
    assert schema.field("__DELETED_AT").type == pa.timestamp("us", tz="UTC")


@pytest.mark.parametrize("scd", [1, 2])
def test_a_crash_between_the_tombstones_and_the_commit_is_replayed_whole(tmp_path: Path, scd: int,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Tombstones are committed before the table: a replay must not take its own deletes for old ones."""
    h = Harness(tmp_path, ApplySpec("public.items", stored_as_scd_type=scd))
    f = h.feed
    h.run([f.event("c", id=1, name="a", body="x", qty=1, lsn=100), f.event("c", id=2, name="b", body="y", qty=2, lsn=100)],
          batch_id=0)
    batch = [f.event("u", id=1, name="a2", body="x", qty=1, lsn=200), f.event("d", id=1, lsn=210),
             f.event("d", id=2, lsn=220)]
    method = "_write_scd1" if scd == 1 else "_write_scd2"

    def crash(*args: Any, **kwargs: Any) -> None:
        raise OSError("the process died")

    with monkeypatch.context() as patched:
        patched.setattr(IcebergTarget, method, crash)
        with pytest.raises(TargetError, match=r"applying batch 1 to public\.items .* at iceberg\+file://.*the process died"):
            h.run(batch, batch_id=1)
    assert h.table("__sparkcdc_tombstones").scan().to_arrow().num_rows == 2  # the tombstones were written ...
    assert h.target.tombstones(h.resolved, [(1,), (2,)]) == {}  # ... but are not trusted yet
    assert h.target.applied_batch(h.resolved, "pipe") == 0
    tomb_snapshots = h.snapshots("__sparkcdc_tombstones")
    assert h.run(batch, batch_id=1)
    assert h.last_changes is not None and h.last_changes.dropped_late == 0
    assert h.snapshots("__sparkcdc_tombstones") == tomb_snapshots  # the replay found its tombstones written
    if scd == 1:
        assert h.rows() == []
    else:
        assert data(h.rows(), "id", "name", "__START_AT", "__END_AT") == [
            (1, "a", seq(100), seq(200)), (1, "a2", seq(200), seq(210)), (2, "b", seq(100), seq(220))]
    assert h.target.tombstones(h.resolved, [(1,), (2,)]) == {(1,): (210, 211, 0), (2,): (220, 221, 0)}


def test_scd1_composite_key(tmp_path: Path) -> None:
    columns = [TargetColumn("tenant", pa.string()), TargetColumn("id", pa.int64()), TargetColumn("v", pa.string())]
    h = Harness(tmp_path, ApplySpec("public.multi", keys=["tenant", "id"]), columns=columns)
    f = h.feed
    h.run([f.event("c", tenant="a", id=1, v="x"), f.event("c", tenant="b", id=1, v="y"), f.event("c", tenant="a", id=2, v="z"),
           f.event("c", tenant="b", id=2, v="w")])
    # (a, 1) and (b, 2) change: (a, 2) and (b, 1) share their values column by column, and must stay
    h.run([f.event("u", tenant="a", id=1, v="x2"), f.event("d", tenant="b", id=2)])
    rows = sorted((r["tenant"], r["id"], r["v"]) for r in h.table().scan().to_arrow().to_pylist())
    assert rows == [("a", 1, "x2"), ("a", 2, "z"), ("b", 1, "y")]
    assert h.target.tombstones(h.resolved, [("b", 2), ("a", 2), ("b", 1)]) == {("b", 2): (1050, 1051, 0)}
    table = h.table()
    assert sorted(table.schema().find_column_name(i) for i in table.schema().identifier_field_ids) == ["id", "tenant"]


@pytest.mark.parametrize("scd", [1, 2])
def test_many_composite_keys_in_one_batch_on_a_small_thread_stack(tmp_path: Path, scd: int) -> None:
    """Tens of thousands of composite keys (SCD2: keys plus __START_AT) in one batch, applied on a
    thread with a small stack: an exact Or-per-key filter crashed pyarrow's expression
    canonicalisation (a segfault in the end-to-end test, in Spark's foreachBatch thread)."""
    KEYS = 20_000  # noqa: N806
    columns = [TargetColumn("a", pa.int64()), TargetColumn("b", pa.int64()), TargetColumn("v", pa.string())]
    h = Harness(tmp_path, ApplySpec("public.many", keys=["a", "b"], stored_as_scd_type=scd), columns=columns)
    f = h.feed
    errors: list[BaseException] = []

    def work() -> None:
        try:
            h.run([f.event("c", a=i, b=i * 7, v="x") for i in range(KEYS)])
            h.run([f.event("u", a=i, b=i * 7, v="y") for i in range(0, KEYS, 2)]
                  + [f.event("d", a=i, b=i * 7) for i in range(1, KEYS, 4)])
        except BaseException as exc:  # noqa: BLE001 - reported to the test's thread
            errors.append(exc)

    previous = threading.stack_size(512 << 10)
    try:
        worker = threading.Thread(target=work)
        worker.start()
    finally:
        threading.stack_size(previous)
    worker.join(120)
    assert not worker.is_alive() and errors == []
    stored = h.table().scan().to_arrow().to_pylist()
    rows = {(r["a"], r["b"]): r["v"] for r in stored if scd == 1 or r["__END_AT"] is None}
    assert len(rows) == KEYS - KEYS // 4
    assert rows[(0, 0)] == "y" and rows[(3, 21)] == "x" and (1, 7) not in rows
    if scd == 2:
        assert len(stored) == KEYS + KEYS // 2  # every updated key has its closed version too


def test_weird_names(tmp_path: Path) -> None:
    columns = [TargetColumn("Key Col", pa.int64()), TargetColumn('say "hi"', pa.string()), TargetColumn("it's", pa.string())]
    h = Harness(tmp_path, ApplySpec("My Schema.Odd-Table"), columns=columns)
    f = h.feed
    h.run([f.event("c", **{"Key Col": 1, 'say "hi"': "a", "it's": "keep"})], pipeline="a/b c:\"d\"")
    h.run([f.event("u", unchanged=("it's",), **{"Key Col": 1, 'say "hi"': "b"})], pipeline="a/b c:\"d\"")
    assert h.table().scan().to_arrow().to_pylist() == [{"Key Col": 1, 'say "hi"': "b", "it's": "keep"}]
    assert h.target.applied_batch(h.resolved, "a/b c:\"d\"") == 1
    h.run([f.event("d", **{"Key Col": 1})], pipeline="a/b c:\"d\"")
    assert h.table().scan().to_arrow().num_rows == 0


def test_types_are_stored_as_iceberg_can(tmp_path: Path) -> None:
    from datetime import UTC, date, datetime
    from datetime import time as time_of_day
    from decimal import Decimal

    columns = [
        TargetColumn("id", pa.int32()), TargetColumn("big", pa.large_string()), TargetColumn("ts", pa.timestamp("ns", tz="+02:00")),
        TargetColumn("local", pa.timestamp("us")), TargetColumn("d", pa.date32()), TargetColumn("n", pa.decimal128(12, 3)),
        TargetColumn("tags", pa.list_(pa.string())), TargetColumn("u", pa.uint32()), TargetColumn("u64", pa.uint64()),
        TargetColumn("raw", pa.large_binary()), TargetColumn("ok", pa.bool_()), TargetColumn("f", pa.float32()),
        TargetColumn("g", pa.float64()), TargetColumn("small", pa.int16()), TargetColumn("at", pa.time64("ns")),
    ]
    h = Harness(tmp_path, ApplySpec("public.typed", stored_as_scd_type=2), columns=columns)
    f = h.feed
    instant = datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    row = {"id": 1, "big": "x" * 10, "ts": instant, "local": datetime(2024, 1, 1, 12), "d": date(2024, 2, 29),
           "n": Decimal("12.345"), "tags": ["a", "b"], "u": 4_000_000_000, "u64": 18_000_000_000_000_000_000,
           "raw": b"\x00\xff", "ok": True, "f": 1.5, "g": -2.25, "small": -3, "at": time_of_day(1, 2, 3, 4)}
    h.run([f.event("c", **row)])
    h.run([f.event("u", **row)])  # no change: no new version
    stored = h.rows()
    assert len(stored) == 1
    got = {k: stored[0][k] for k in row}
    assert got == {**row, "u64": Decimal(18_000_000_000_000_000_000)}
    schema = h.table().schema()
    types = {f.name: str(f.field_type) for f in schema.fields}
    assert types["ts"] == "timestamptz" and types["local"] == "timestamp" and types["u"] == "long"
    assert types["u64"] == "decimal(20, 0)" and types["n"] == "decimal(12, 3)" and types["at"] == "time"
    assert types["raw"] == "binary" and types["small"] == "int" and types["__START_AT"].startswith("struct<")
    assert sorted(schema.find_column_name(i) for i in schema.identifier_field_ids) == [
        "__START_AT.__commit_lsn", "__START_AT.__lsn", "__START_AT.__ordinal", "id"]
    # a change opens a new version; reads of the typed key find it
    h.run([f.event("u", **{**row, "n": Decimal("1.000")})])
    assert [r["n"] for r in h.rows()] == [Decimal("12.345"), Decimal("1.000")]
    assert h.target.open_versions(h.resolved, [(1,)])[(1,)][0][columns.index(TargetColumn("n", pa.decimal128(12, 3)))] == Decimal("1.000")


def test_timestamp_and_string_keys(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    columns = [TargetColumn("at", pa.timestamp("us", tz="UTC")), TargetColumn("code", pa.string()), TargetColumn("v", pa.int64())]
    h = Harness(tmp_path, ApplySpec("public.events", keys=["at", "code"]), columns=columns)
    f = h.feed
    t1, t2 = datetime(2024, 1, 1, tzinfo=UTC), datetime(2024, 1, 2, tzinfo=UTC)
    h.run([f.event("c", at=t1, code="x", v=1), f.event("c", at=t2, code="x", v=2), f.event("c", at=t1, code="y", v=3)])
    h.run([f.event("u", at=t1, code="x", v=10), f.event("d", at=t1, code="y")])
    rows = sorted((r["at"], r["code"], r["v"]) for r in h.table().scan().to_arrow().to_pylist())
    assert rows == [(t1, "x", 10), (t2, "x", 2)]
    assert h.target.tombstones(h.resolved, [(t1, "y"), (t1, "x")]) == {(t1, "y"): (1040, 1041, 0)}


# -- SCD2 -----------------------------------------------------------------------------------------


def test_scd2_version_chains(tmp_path: Path) -> None:
    h = Harness(tmp_path, ApplySpec("public.items", stored_as_scd_type=2, track_history_except_column_list=["qty"]))
    f = h.feed
    h.run([f.event("c", id=1, name="a", body="x", qty=1, lsn=100), f.event("c", id=2, name="b", body="y", qty=2, lsn=100)])
    # tracked change (name) closes the version and opens another; untracked (qty) rewrites in place
    h.run([f.event("u", id=1, name="a2", body="x", qty=1, lsn=200), f.event("u", id=2, name="b", body="y", qty=20, lsn=200)])
    assert data(h.rows(), "id", "name", "qty", "__START_AT", "__END_AT") == [
        (1, "a", 1, seq(100), seq(200)), (1, "a2", 1, seq(200), None), (2, "b", 20, seq(100), None)]
    # several changes of one key in one batch; an unchanged-TOAST body is carried from the open version
    h.run([f.event("u", id=1, name="a3", qty=1, unchanged=("body",), lsn=300), f.event("u", id=1, name="a3", body="x", qty=5, lsn=310),
           f.event("u", id=1, name="a4", body="x", qty=5, lsn=320)])
    assert data(h.rows(), "id", "name", "body", "qty", "__START_AT", "__END_AT")[:4] == [
        (1, "a", "x", 1, seq(100), seq(200)), (1, "a2", "x", 1, seq(200), seq(300)),
        (1, "a3", "x", 5, seq(300), seq(320)), (1, "a4", "x", 5, seq(320), None)]
    # a delete closes the open version; a re-insert opens a new one
    h.run([f.event("d", id=2, lsn=400)])
    assert data(h.rows(), "id", "__START_AT", "__END_AT")[-1] == (2, seq(100), seq(400))
    h.run([f.event("c", id=2, name="b2", body="y", qty=1, lsn=500)])
    assert _open_counts(h.rows()) == {1: 1, 2: 1}
    assert h.target.open_versions(h.resolved, [(1,), (2,), (3,)]) == {
        (1,): ([1, "a4", "x", 5], (320, 321, 0)), (2,): ([2, "b2", "y", 1], (500, 501, 0))}


def test_scd2_truncate_closes_every_open_version(tmp_path: Path) -> None:
    h = Harness(tmp_path, ApplySpec("public.items", stored_as_scd_type=2))
    f = h.feed
    h.run([f.event("c", id=i, name=f"n{i}", body="b", qty=i, lsn=100) for i in range(1, 5)])
    h.run([f.event("u", id=1, name="closed-earlier", body="b", qty=1, lsn=150), f.event("d", id=4, lsn=160)])
    # 2 is touched before the truncate, 3 untouched, 5 inserted after; a second truncate closes 5's first version
    h.run([f.event("u", id=2, name="n2b", body="b", qty=2, lsn=200), f.event("t", lsn=300),
           f.event("c", id=5, name="five", body="b", qty=5, lsn=400), f.event("c", id=1, name="one", body="b", qty=1, lsn=410),
           f.event("t", lsn=500), f.event("c", id=5, name="five-again", body="b", qty=5, lsn=600)])
    rows = h.rows()
    assert data(rows, "id", "name", "__START_AT", "__END_AT") == [
        (1, "n1", seq(100), seq(150)), (1, "closed-earlier", seq(150), seq(300)), (1, "one", seq(410), seq(500)),
        (2, "n2", seq(100), seq(200)), (2, "n2b", seq(200), seq(300)),
        (3, "n3", seq(100), seq(300)),
        (4, "n4", seq(100), seq(160)),
        (5, "five", seq(400), seq(500)), (5, "five-again", seq(600), None),
    ]
    # a truncate alone
    h.run([f.event("t", lsn=700)])
    assert _open_counts(h.rows()) == {1: 0, 2: 0, 3: 0, 4: 0, 5: 0}
    assert data(h.rows(), "id", "__END_AT")[-1] == (5, seq(700))


def test_scd2_an_image_closes_the_versions_it_lacks_and_keeps_the_unchanged_ones(tmp_path: Path) -> None:
    h = Harness(tmp_path, ApplySpec("public.items", stored_as_scd_type=2))
    f = h.feed
    first = [f.event("r", id=i, name=f"n{i}", body="b", qty=i, lsn=100) for i in (1, 2, 3)]
    assert h.run(first, batch_id=0, replace_at=(100, 101, 0))
    before = h.rows()
    assert h.run(first, batch_id=0, replace_at=(100, 101, 0))
    assert h.rows() == before
    newer = [f.event("r", id=2, name="two", body="b", qty=2, lsn=500), f.event("r", id=3, name="n3", body="b", qty=3, lsn=500),
             f.event("r", id=4, name="n4", body="b", qty=4, lsn=500)]
    assert h.run(newer, batch_id=0, replace_at=(500, 501, 0))
    assert data(h.rows(), "id", "name", "__START_AT", "__END_AT") == [
        (1, "n1", seq(100), seq(500)), (2, "n2", seq(100), seq(500)), (2, "two", seq(500), None),
        (3, "n3", seq(100), None), (4, "n4", seq(500), None)]
    assert h.run([], batch_id=1, replace_at=(900, 901, 0))
    assert _open_counts(h.rows()) == {1: 0, 2: 0, 3: 0, 4: 0}
    assert len(h.rows()) == 5


def test_scd2_single_sequence_column_keeps_its_type(tmp_path: Path) -> None:
    h = Harness(tmp_path, ApplySpec("public.items", stored_as_scd_type=2, sequence_by="__commit_lsn"),
                sequence=[TargetColumn("__commit_lsn", pa.int64())])
    f = h.feed
    h.run([f.event("c", id=1, name="a", body="x", qty=1, lsn=100), f.event("c", id=2, name="b", body="y", qty=2, lsn=110)])
    h.run([f.event("u", id=1, name="a2", body="x", qty=1, lsn=200), f.event("t", lsn=300)])
    schema = h.table().schema().as_arrow()
    assert schema.field("__START_AT").type == pa.int64() and schema.field("__END_AT").type == pa.int64()
    assert data(h.rows(), "id", "name", "__START_AT", "__END_AT") == [
        (1, "a", 100, 200), (1, "a2", 200, 300), (2, "b", 110, 300)]
    h.run([f.event("d", id=2, lsn=400)])
    assert h.target.tombstones(h.resolved, [(2,)]) == {(2,): (400,)}


def test_scd2_late_event_after_delete_is_dropped(tmp_path: Path) -> None:
    h = Harness(tmp_path, ApplySpec("public.items", stored_as_scd_type=2))
    f = h.feed
    h.run([f.event("c", id=1, name="a", body="x", qty=1, lsn=100)])
    h.run([f.event("d", id=1, lsn=200)])
    h.run([f.event("u", id=1, name="zombie", body="x", qty=1, lsn=150)])
    assert data(h.rows(), "id", "name", "__START_AT", "__END_AT") == [(1, "a", seq(100), seq(200))]


def test_scd2_composite_key(tmp_path: Path) -> None:
    columns = [TargetColumn("tenant", pa.string()), TargetColumn("id", pa.int64()), TargetColumn("v", pa.string())]
    h = Harness(tmp_path, ApplySpec("public.multi", stored_as_scd_type=2, keys=["tenant", "id"]), columns=columns)
    f = h.feed
    h.run([f.event("c", tenant="a", id=1, v="x"), f.event("c", tenant="b", id=1, v="y"), f.event("c", tenant="a", id=2, v="z")])
    h.run([f.event("u", tenant="a", id=1, v="x2")])
    assert h.target.open_versions(h.resolved, [("a", 1), ("b", 2)]) == {("a", 1): (["a", 1, "x2"], (1030, 1031, 0))}
    rows = sorted((r["tenant"], r["id"], r["v"], r["__END_AT"] is None) for r in h.table().scan().to_arrow().to_pylist())
    assert rows == [("a", 1, "x", False), ("a", 1, "x2", True), ("a", 2, "z", True), ("b", 1, "y", True)]


# -- against a model ------------------------------------------------------------------------------


class Model:
    """SCD1 as the events say, one at a time in sequence order."""

    def __init__(self, ignore_nulls: bool) -> None:
        self.rows: dict[int, dict[str, Any]] = {}
        self.deleted: dict[int, int] = {}
        self.ignore_nulls = ignore_nulls

    def apply(self, events: list[dict[str, Any]]) -> None:
        for e in sorted(events, key=lambda e: (e["__commit_lsn"], e["__lsn"], e["__ordinal"])):
            if e["__is_truncate"]:
                self.rows.clear()
                continue
            key, lsn = e["id"], e["__commit_lsn"]
            if key in self.deleted and lsn <= self.deleted[key]:
                continue
            if e["__is_delete"]:
                self.rows.pop(key, None)
                self.deleted[key] = lsn
                continue
            old = self.rows.get(key)
            row = {"id": key}
            for name in ("name", "body", "qty"):
                missing = name in e["__unchanged"] or (self.ignore_nulls and e[name] is None)
                row[name] = (old[name] if old else None) if missing else e[name]
            self.rows[key] = row


@pytest.mark.parametrize("seed,ignore_nulls", [(1, False), (2, True)])
def test_scd1_matches_a_model_over_random_batches(tmp_path: Path, seed: int, ignore_nulls: bool) -> None:
    rng = random.Random(seed)
    h = Harness(tmp_path, ApplySpec("public.items", ignore_null_updates=ignore_nulls))
    model = Model(ignore_nulls)
    lsn = 1000
    for batch_id in range(18):
        events = []
        for _ in range(rng.randint(0, 12)):
            lsn += 10
            roll = rng.random()
            key = rng.randint(1, 8)
            values = {"name": rng.choice(["a", "b", None]), "body": rng.choice(["x" * 5, "y", None]), "qty": rng.choice([1, 2, None])}
            if roll < 0.03:
                events.append(h.feed.event("t", lsn=lsn))
            elif roll < 0.25:
                events.append(h.feed.event("d", id=key, lsn=lsn))
            elif roll < 0.33 and model.deleted:
                # a late event: older than some recorded delete
                late_key = rng.choice(sorted(model.deleted))
                events.append(h.feed.event("u", id=late_key, lsn=model.deleted[late_key] - 5, **values))
            else:
                unchanged = tuple(n for n in ("body", "qty") if rng.random() < 0.3)
                for n in unchanged:
                    values[n] = None
                events.append(h.feed.event("u", id=key, lsn=lsn, unchanged=unchanged, **values))
        rng.shuffle(events)  # the fold orders them
        assert h.run(events, batch_id=batch_id)
        model.apply(events)
        if batch_id % 3 == 2:
            metadata = h.metadata()
            assert not h.run(events, batch_id=batch_id)  # a replay
            assert h.metadata() == metadata
        assert {k: {n: r[n] for n in ("id", "name", "body", "qty")} for k, r in h.state().items()} == model.rows


@pytest.mark.parametrize("seed", [4, 5])
def test_scd2_open_versions_follow_the_model_and_chain(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    h = Harness(tmp_path, ApplySpec("public.items", stored_as_scd_type=2, track_history_except_column_list=["qty"]))
    model = Model(ignore_nulls=False)
    lsn = 1000
    for batch_id in range(16):
        events = []
        for _ in range(rng.randint(0, 10)):
            lsn += 10
            roll, key = rng.random(), rng.randint(1, 6)
            values = {"name": rng.choice(["a", "b"]), "body": rng.choice(["x", "y"]), "qty": rng.choice([1, 2, 3])}
            if roll < 0.04:
                events.append(h.feed.event("t", lsn=lsn))
            elif roll < 0.25:
                events.append(h.feed.event("d", id=key, lsn=lsn))
            else:
                unchanged = ("body",) if rng.random() < 0.2 else ()
                if unchanged:
                    values["body"] = None
                events.append(h.feed.event("u", id=key, lsn=lsn, unchanged=unchanged, **values))
        rng.shuffle(events)
        assert h.run(events, batch_id=batch_id)
        model.apply(events)
        if batch_id % 3 == 2:
            metadata = h.metadata()
            assert not h.run(events, batch_id=batch_id)  # a replay
            assert h.metadata() == metadata
        rows = h.rows()
        open_rows = {r["id"]: {n: r[n] for n in ("id", "name", "body", "qty")} for r in rows if r["__END_AT"] is None}
        assert open_rows == model.rows
        assert all(count <= 1 for count in _open_counts(rows).values())
        for older, newer in zip(rows, rows[1:], strict=False):
            assert older["__END_AT"] is None or _start(older) < tuple(older["__END_AT"].values())
            if older["id"] == newer["id"]:
                assert older["__END_AT"] is not None and tuple(older["__END_AT"].values()) <= _start(newer)
