"""The Apache Iceberg apply target against a real local catalog (pyiceberg's SQL catalog on SQLite),
driven the way the Spark layer drives it: fold a batch with the target's tombstones and open
versions, then apply it. Pure Python."""

from __future__ import annotations

import threading
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.types import StringType

from sparkcdc.apply import ApplySpec, TargetError
from sparkcdc.apply.targets import TargetColumn, target_for
from sparkcdc.apply.targets.iceberg import IcebergTarget

from .targets import COLUMNS, SEQ_COLUMNS, data, location, seq
from .targets import IcebergHarness as Harness

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


# -- against a model ------------------------------------------------------------------------------


