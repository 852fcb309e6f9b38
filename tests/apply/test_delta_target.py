"""The Delta Lake apply target, driven the way the Spark layer drives it: fold a batch of typed
change events with the target's tombstones and open versions, then apply it. Pure Python."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import CommitProperties, DeltaTable

from sparkcdc.apply import ApplySpec, TargetError
from sparkcdc.apply.targets import TargetColumn, target_for
from sparkcdc.apply.targets.delta import DeltaTarget

from .targets import SEQ_COLUMNS, SEQ_TYPE, data
from .targets import DeltaHarness as Harness

# -- SCD1 -----------------------------------------------------------------------------------------


def test_scd1_ignore_null_updates(tmp_path: Path) -> None:
    h = Harness(tmp_path, ApplySpec("public.items", ignore_null_updates=True))
    f = h.feed
    h.run([f.event("c", id=1, name="a", body="x", qty=1)])
    h.run([f.event("u", id=1, name=None, body="y", qty=None)])
    assert data(h.rows(), "id", "name", "body", "qty") == [(1, "a", "y", 1)]
    h.run([f.event("u", id=1, name="b", body=None, qty=None), f.event("u", id=1, name=None, body=None, qty=3)])
    assert data(h.rows(), "id", "name", "body", "qty") == [(1, "b", "y", 3)]
    # a delete still deletes, whatever its nulls
    h.run([f.event("d", id=1)])
    assert h.rows() == []


def test_each_batch_is_one_commit_with_its_position(tmp_path: Path) -> None:
    h = Harness(tmp_path, ApplySpec("public.items"))
    f = h.feed
    start = h.version()
    h.run([f.event("c", id=1, name="a", body="x", qty=1)], batch_id=5)
    h.run([f.event("d", id=1), f.event("c", id=2, name="b", body="y", qty=2)], batch_id=6)
    # a batch whose merge changes no row (deleting a key the table does not have) is still recorded
    h.run([f.event("d", id=99)], batch_id=7)
    dt = DeltaTable(str(h.path))
    assert dt.version() == start + 3
    history = dt.history(3)
    assert [(c["sparkcdc.pipeline_id"], c["sparkcdc.batch_id"]) for c in history] == [("pipe", 7), ("pipe", 6), ("pipe", 5)]
    assert dt.transaction_version("sparkcdc:pipe") == 7
    assert h.target.applied_batch(h.resolved, "pipe") == 7


def test_applied_batch_falls_back_to_the_history(tmp_path: Path) -> None:
    """A table whose commits carry the metadata but no txn (another writer, an expired txn)."""
    h = Harness(tmp_path, ApplySpec("public.items"))
    dt = DeltaTable(str(h.path))
    for batch in (3, 4):
        dt.create_write_transaction([], mode="append", schema=dt.schema(), commit_properties=CommitProperties(
            custom_metadata={"sparkcdc.pipeline_id": "legacy", "sparkcdc.batch_id": batch}))
        dt = DeltaTable(str(h.path))
    for _ in range(20):  # more commits than the first history page
        dt.create_write_transaction([], mode="append", schema=dt.schema(), commit_properties=CommitProperties(
            custom_metadata={"sparkcdc.pipeline_id": "someone-else", "sparkcdc.batch_id": 1}))
        dt = DeltaTable(str(h.path))
    assert h.target.applied_batch(h.resolved, "legacy") == 4
    assert h.target.applied_batch(h.resolved, "nobody") is None
    assert not h.run([h.feed.event("c", id=1, name="a", body="x", qty=1)], batch_id=4, pipeline="legacy")
    assert h.run([h.feed.event("c", id=1, name="a", body="x", qty=1)], batch_id=5, pipeline="legacy")


def test_weird_column_names(tmp_path: Path) -> None:
    columns = [TargetColumn("Key Col", pa.int64()), TargetColumn('say "hi"', pa.string()), TargetColumn("it's", pa.string())]
    h = Harness(tmp_path, ApplySpec("My Schema.Odd-Table"), columns=columns)
    f = h.feed
    h.run([f.event("c", **{"Key Col": 1, 'say "hi"': "a", "it's": "keep"})])
    h.run([f.event("u", unchanged=("it's",), **{"Key Col": 1, 'say "hi"': "b"})])
    rows = DeltaTable(str(tmp_path / "My Schema" / "Odd-Table")).to_pyarrow_table().to_pylist()
    assert rows == [{"Key Col": 1, 'say "hi"': "b", "it's": "keep"}]
    h.run([f.event("d", **{"Key Col": 1})])
    assert DeltaTable(str(tmp_path / "My Schema" / "Odd-Table")).to_pyarrow_table().num_rows == 0


def test_an_existing_table_with_the_columns_is_used(tmp_path: Path) -> None:
    h = Harness(tmp_path, ApplySpec("public.items"))
    h.run([h.feed.event("c", id=1, name="a", body="x", qty=1)], batch_id=0)
    again = Harness(tmp_path, ApplySpec("public.items"))  # a new process
    assert again.target.applied_batch(again.resolved, "pipe") == 0
    again.run([again.feed.event("u", id=1, name="b", qty=2, unchanged=("body",))], batch_id=1)
    assert data(again.rows(), "id", "name", "body", "qty") == [(1, "b", "x", 2)]


def test_unprepared_and_unsupported(tmp_path: Path) -> None:
    target = DeltaTarget(str(tmp_path))
    resolved = ApplySpec("public.items").resolve(["id"], ["id"])
    assert target.applied_batch(resolved, "pipe") is None  # no table: nothing applied
    with pytest.raises(TargetError, match="not prepared"):
        target.tombstones(resolved, [(1,)])
    with pytest.raises(TargetError, match="column t: Delta Lake has no type"):
        target.prepare(ApplySpec("public.times").resolve(["id", "t"], ["id"]),
                       [TargetColumn("id", pa.int64()), TargetColumn("t", pa.time64("us"))], SEQ_COLUMNS)
    assert isinstance(target_for(str(tmp_path)), DeltaTarget)


def test_types_are_stored_as_delta_can(tmp_path: Path) -> None:
    from datetime import UTC, date, datetime
    from decimal import Decimal

    columns = [
        TargetColumn("id", pa.int32()), TargetColumn("big", pa.large_string()), TargetColumn("ts", pa.timestamp("ns", tz="+02:00")),
        TargetColumn("local", pa.timestamp("us")), TargetColumn("d", pa.date32()), TargetColumn("n", pa.decimal128(12, 3)),
        TargetColumn("tags", pa.list_(pa.string())), TargetColumn("u", pa.uint32()),
    ]
    h = Harness(tmp_path, ApplySpec("public.typed", stored_as_scd_type=2), columns=columns)
    f = h.feed
    instant = datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    row = {"id": 1, "big": "x" * 10, "ts": instant, "local": datetime(2024, 1, 1, 12), "d": date(2024, 2, 29),
           "n": Decimal("12.345"), "tags": ["a", "b"], "u": 4_000_000_000}
    h.run([f.event("c", **row)])
    h.run([f.event("u", **row)])  # no change: no new version
    stored = h.rows()
    assert len(stored) == 1 and {k: stored[0][k] for k in row} == row
    schema = pa.schema(DeltaTable(str(h.path)).schema().to_arrow())
    assert schema.field("ts").type == pa.timestamp("us", tz="UTC") and schema.field("u").type == pa.int64()
    assert schema.field("__START_AT").type == SEQ_TYPE and schema.field("__END_AT").type == SEQ_TYPE


# -- SCD2 -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("in_list", [1000, 1])
def test_reads_of_keys_prune_files_and_match_exactly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_list: int) -> None:
    import sparkcdc.apply.targets.delta as delta

    monkeypatch.setattr(delta, "_PRUNE_IN_LIST", in_list)  # 1: every read prunes by the keys' range
    h = Harness(tmp_path, ApplySpec("public.items", stored_as_scd_type=2))
    f = h.feed
    for start in (1, 11, 21):  # three files of ten keys
        h.run([f.event("c", id=i, name=f"n{i}", body="b", qty=i, lsn=100 * start) for i in range(start, start + 10)])
    h.run([f.event("d", id=i, lsn=5000 + i) for i in (3, 5, 24)])
    found = h.target.open_versions(h.resolved, [(2,), (4,), (5,), (12,), (99,)])
    assert sorted(found) == [(2,), (4,), (12,)] and found[(12,)] == ([12, "n12", "b", 12], (1100, 1101, 0))
    assert h.target.tombstones(h.resolved, [(3,), (4,), (24,), (30,)]) == {(3,): (5003, 5004, 0), (24,): (5024, 5025, 0)}


# -- against a model ------------------------------------------------------------------------------


# -- no PostgreSQL ----------------------------------------------------------------------------------


def test_the_delta_target_needs_no_postgresql(tmp_path: Path) -> None:
    """psycopg made unimportable: the Delta target still imports, prepares, folds and applies."""
    script = f"""
import sys
sys.modules["psycopg"] = None
import pyarrow as pa
from sparkcdc.apply import ApplySpec
from sparkcdc.apply.fold import fold_changes
from sparkcdc.apply.targets import TargetColumn, target_for
target = target_for({str(tmp_path)!r})
spec = ApplySpec("public.t").resolve(["id", "v"], ["id"])
seq = [TargetColumn(n, pa.int64()) for n in ("__commit_lsn", "__lsn", "__ordinal")]
target.prepare(spec, [TargetColumn("id", pa.int64()), TargetColumn("v", pa.string())], seq)
events = pa.table({{"id": [1], "v": ["x"], "__is_delete": [False], "__is_truncate": [False],
                   "__unchanged": pa.array([[]], pa.list_(pa.string())), "__commit_lsn": [1], "__lsn": [1], "__ordinal": [0]}})
changes = fold_changes(spec, events, tombstones=target.tombstones(spec, [(1,)]))
assert target.apply(changes, pipeline_id="p", batch_id=0)
assert "sparkcdc.apply.targets.postgres" not in sys.modules
print(type(target).__name__)
"""
    env = dict(os.environ)
    src = str(Path(__file__).resolve().parents[2] / "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "DeltaTarget"
    assert DeltaTable(str(tmp_path / "public" / "t")).to_pyarrow_table().to_pylist() == [{"id": 1, "v": "x"}]
