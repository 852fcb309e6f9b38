"""The apply targets' compliance suite: behaviour every target must have, each test run against
every target it applies to (``any_target``: PostgreSQL, Delta Lake, Apache Iceberg; ``lake``: the
lake formats, for what only they have: commits, tombstones as a table of their own written first).
Format-specific checks stay in test_delta_target.py, test_iceberg_target.py, test_postgres_target.py."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from sparkcdc.apply import ApplySpec, TargetError
from sparkcdc.apply.evolution import EvolutionPolicy, SchemaChangeError
from sparkcdc.apply.targets import TargetColumn

from .targets import COLUMNS, HARNESSES, LakeHarness, data, open_counts, seq, start_of


@pytest.fixture(params=sorted(HARNESSES))
def lake(request: pytest.FixtureRequest) -> type[LakeHarness]:
    """The harness class of one lake format."""
    return HARNESSES[request.param]


# -- SCD1 -----------------------------------------------------------------------------------------


def test_scd1_insert_update_delete(tmp_path: Path, any_target: Callable[..., LakeHarness]) -> None:
    h = any_target(tmp_path, ApplySpec("public.items"))
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
    assert h.schema().names == ["id", "name", "body", "qty"]


def test_scd1_unchanged_toast_keeps_stored_value_across_batches(tmp_path: Path, any_target: Callable[..., LakeHarness]) -> None:
    h = any_target(tmp_path, ApplySpec("public.docs"))
    f = h.feed
    h.run([f.event("c", id=1, name="a", body="big-1", qty=1), f.event("c", id=2, name="b", body="big-2", qty=2)])
    # body not carried (unchanged TOAST): the stored value stays; the other row's body changes
    h.run([f.event("u", id=1, name="a2", qty=5, unchanged=("body",)), f.event("u", id=2, name="b2", body="BIG-2", qty=6)])
    assert data(h.rows(), "id", "name", "body", "qty") == [(1, "a2", "big-1", 5), (2, "b2", "BIG-2", 6)]
    # two placeholders in one batch: still the stored value; a later full image in the batch wins
    h.run([f.event("u", id=1, name="a3", qty=7, unchanged=("body",)), f.event("u", id=1, name="a4", qty=8, unchanged=("body",)),
           f.event("u", id=2, name="b3", qty=9, unchanged=("body",)), f.event("u", id=2, name="b4", body="new-2", qty=9)])
    assert data(h.rows(), "id", "name", "body", "qty") == [(1, "a4", "big-1", 8), (2, "b4", "new-2", 9)]
    # a placeholder for a key the target does not have: inserted with null (the others keep theirs)
    h.run([f.event("u", id=9, name="z", qty=1, unchanged=("body",))])
    assert h.state()[9]["body"] is None
    assert h.state()[1]["body"] == "big-1"
    # a full image earlier in the same batch fills the placeholder of a later event
    h.run([f.event("u", id=1, name="a5", body="mid", qty=1), f.event("u", id=1, name="a6", qty=2, unchanged=("body",))])
    assert data(h.rows(), "id", "name", "body", "qty")[0] == (1, "a6", "mid", 2)


def test_scd1_truncate_then_inserts_in_one_batch(tmp_path: Path, lake: type[LakeHarness]) -> None:
    h = lake(tmp_path, ApplySpec("public.items"))
    f = h.feed
    h.run([f.event("c", id=i, name=f"n{i}", body="b", qty=i) for i in range(1, 6)])
    before = h.commits()
    assert h.run([f.event("u", id=1, name="lost", body="b", qty=0), f.event("t"),
                  f.event("c", id=2, name="two", body="b2", qty=2), f.event("c", id=7, name="seven", body=None, qty=7),
                  f.event("u", id=3, name="three", qty=3, unchanged=("body",))])
    assert h.commits() == before + 1  # one commit
    assert data(h.rows(), "id", "name", "body", "qty") == [(2, "two", "b2", 2), (3, "three", None, 3), (7, "seven", None, 7)]
    # a truncate alone empties the table
    h.run([f.event("t")])
    assert h.rows() == []


def test_replaying_a_batch_changes_nothing(tmp_path: Path, any_target: Callable[..., LakeHarness]) -> None:
    h = any_target(tmp_path, ApplySpec("public.items"))
    f = h.feed
    first = [f.event("c", id=1, name="a", body="x", qty=1), f.event("c", id=2, name="b", body="y", qty=2)]
    second = [f.event("u", id=1, name="A", body="x", qty=1), f.event("d", id=2)]
    assert h.run(first, batch_id=0)
    assert h.run(second, batch_id=1)
    fingerprint, tomb_fingerprint, rows = h.fingerprint(), h.fingerprint(tombstones=True), h.rows()
    assert not h.run(second, batch_id=1)
    assert not h.run(first, batch_id=0)
    assert h.fingerprint() == fingerprint and h.rows() == rows
    assert h.fingerprint(tombstones=True) == tomb_fingerprint
    assert h.target.applied_batch(h.resolved, "pipe") == 1
    # another pipeline has its own position
    assert h.target.applied_batch(h.resolved, "other") is None
    assert h.run([f.event("u", id=1, name="other", body="x", qty=1)], batch_id=0, pipeline="other")
    assert h.target.applied_batch(h.resolved, "other") == 0 and h.target.applied_batch(h.resolved, "pipe") == 1
    assert h.position("pipe") == 1 and h.position("other") == 0  # as the format itself records it


def test_an_image_replaces_the_table_and_is_applied_again_at_its_own_batch(tmp_path: Path, any_target: Callable[..., LakeHarness]) -> None:
    """The initial snapshot's batch re-executed with a newer image (the source snapshotted again)."""
    h = any_target(tmp_path, ApplySpec("public.items"))
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


def test_a_late_event_older_than_a_recorded_delete_is_dropped(tmp_path: Path, any_target: Callable[..., LakeHarness]) -> None:
    h = any_target(tmp_path, ApplySpec("public.items"))
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


def test_tombstones_expire_after_the_retention(tmp_path: Path, lake: type[LakeHarness]) -> None:
    h = lake(tmp_path, ApplySpec("public.items", tombstone_retention=timedelta(milliseconds=300)))
    f = h.feed
    assert h.target.tombstones(h.resolved, [(1,)]) == {}  # no tombstone table yet
    assert not h.has_tombstones()
    h.run([f.event("c", id=1, name="a", body="x", qty=1, lsn=100), f.event("d", id=1, lsn=200)])
    assert h.target.tombstones(h.resolved, [(1,)]) == {(1,): (200, 201, 0)}
    time.sleep(0.4)  # the retention is wall-clock time: nothing to wait on but the clock
    assert h.target.tombstones(h.resolved, [(1,)]) == {}  # read: no longer retained
    h.run([f.event("d", id=2, lsn=300)])  # the next recording removes the expired ones
    rows = h.stored(tombstones=True)
    assert [(r["id"], r["__SEQUENCE"]) for r in rows] == [(2, seq(300))]
    tomb_schema = h.schema(tombstones=True)
    assert tomb_schema.names == ["id", "__SEQUENCE", "__DELETED_AT"]
    assert tomb_schema.field("__SEQUENCE").type == h.seq_type
    assert tomb_schema.field("__DELETED_AT").type == pa.timestamp("us", tz="UTC")


@pytest.mark.parametrize("scd", [1, 2])
def test_a_crash_between_the_tombstones_and_the_commit_is_replayed_whole(tmp_path: Path, scd: int, lake: type[LakeHarness],
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Tombstones are committed before the table: a replay must not take its own deletes for old ones."""
    h = lake(tmp_path, ApplySpec("public.items", stored_as_scd_type=scd))
    f = h.feed
    h.run([f.event("c", id=1, name="a", body="x", qty=1, lsn=100), f.event("c", id=2, name="b", body="y", qty=2, lsn=100)],
          batch_id=0)
    batch = [f.event("u", id=1, name="a2", body="x", qty=1, lsn=200), f.event("d", id=1, lsn=210),
             f.event("d", id=2, lsn=220)]

    def crash(*args: Any, **kwargs: Any) -> None:
        raise OSError("the process died")

    with monkeypatch.context() as patched:
        patched.setattr(h.target_class, h.write_methods[scd], crash)
        with pytest.raises(TargetError, match=rf"applying batch 1 to public\.items {h.failure_where}.*the process died"):
            h.run(batch, batch_id=1)
    assert len(h.stored(tombstones=True)) == 2  # the tombstones were written ...
    assert h.target.tombstones(h.resolved, [(1,), (2,)]) == {}  # ... but are not trusted yet
    assert h.target.applied_batch(h.resolved, "pipe") == 0
    tomb_fingerprint = h.fingerprint(tombstones=True)
    assert h.run(batch, batch_id=1)
    assert h.last_changes is not None and h.last_changes.dropped_late == 0
    assert h.fingerprint(tombstones=True) == tomb_fingerprint  # the replay found its tombstones written
    if scd == 1:
        assert h.rows() == []
    else:
        assert data(h.rows(), "id", "name", "__START_AT", "__END_AT") == [
            (1, "a", seq(100), seq(200)), (1, "a2", seq(200), seq(210)), (2, "b", seq(100), seq(220))]
    assert h.target.tombstones(h.resolved, [(1,), (2,)]) == {(1,): (210, 211, 0), (2,): (220, 221, 0)}


# -- SCD2 -----------------------------------------------------------------------------------------


def test_scd2_an_image_closes_the_versions_it_lacks_and_keeps_the_unchanged_ones(tmp_path: Path, any_target: Callable[..., LakeHarness]) -> None:
    h = any_target(tmp_path, ApplySpec("public.items", stored_as_scd_type=2))
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
    assert open_counts(h.rows()) == {1: 0, 2: 0, 3: 0, 4: 0}
    assert len(h.rows()) == 5


def test_scd2_version_chains(tmp_path: Path, any_target: Callable[..., LakeHarness]) -> None:
    h = any_target(tmp_path, ApplySpec("public.items", stored_as_scd_type=2, track_history_except_column_list=["qty"]))
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
    assert open_counts(h.rows()) == {1: 1, 2: 1}
    assert h.target.open_versions(h.resolved, [(1,), (2,), (3,)]) == {
        (1,): ([1, "a4", "x", 5], (320, 321, 0)), (2,): ([2, "b2", "y", 1], (500, 501, 0))}


def test_scd2_truncate_closes_every_open_version(tmp_path: Path, lake: type[LakeHarness]) -> None:
    h = lake(tmp_path, ApplySpec("public.items", stored_as_scd_type=2))
    f = h.feed
    h.run([f.event("c", id=i, name=f"n{i}", body="b", qty=i, lsn=100) for i in range(1, 5)])
    h.run([f.event("u", id=1, name="closed-earlier", body="b", qty=1, lsn=150), f.event("d", id=4, lsn=160)])
    before = h.commits()
    # 2 is touched before the truncate, 3 untouched, 5 inserted after; a second truncate closes 5's first version
    h.run([f.event("u", id=2, name="n2b", body="b", qty=2, lsn=200), f.event("t", lsn=300),
           f.event("c", id=5, name="five", body="b", qty=5, lsn=400), f.event("c", id=1, name="one", body="b", qty=1, lsn=410),
           f.event("t", lsn=500), f.event("c", id=5, name="five-again", body="b", qty=5, lsn=600)])
    assert h.commits() == before + 1
    rows = h.rows()
    assert data(rows, "id", "name", "__START_AT", "__END_AT") == [
        (1, "n1", seq(100), seq(150)), (1, "closed-earlier", seq(150), seq(300)), (1, "one", seq(410), seq(500)),
        (2, "n2", seq(100), seq(200)), (2, "n2b", seq(200), seq(300)),
        (3, "n3", seq(100), seq(300)),
        (4, "n4", seq(100), seq(160)),
        (5, "five", seq(400), seq(500)), (5, "five-again", seq(600), None),
    ]
    assert open_counts(rows) == {1: 0, 2: 0, 3: 0, 4: 0, 5: 1}
    # a truncate alone
    h.run([f.event("t", lsn=700)])
    assert open_counts(h.rows()) == {1: 0, 2: 0, 3: 0, 4: 0, 5: 0}
    assert data(h.rows(), "id", "__END_AT")[-1] == (5, seq(700))


def test_scd2_single_sequence_column_keeps_its_type(tmp_path: Path, any_target: Callable[..., LakeHarness]) -> None:
    h = any_target(tmp_path, ApplySpec("public.items", stored_as_scd_type=2, sequence_by="__commit_lsn"),
             sequence=[TargetColumn("__commit_lsn", pa.int64())])
    f = h.feed
    h.run([f.event("c", id=1, name="a", body="x", qty=1, lsn=100), f.event("c", id=2, name="b", body="y", qty=2, lsn=110)])
    h.run([f.event("u", id=1, name="a2", body="x", qty=1, lsn=200), f.event("t", lsn=300)])
    schema = h.schema()
    assert schema.field("__START_AT").type == pa.int64() and schema.field("__END_AT").type == pa.int64()
    assert data(h.rows(), "id", "name", "__START_AT", "__END_AT") == [
        (1, "a", 100, 200), (1, "a2", 200, 300), (2, "b", 110, 300)]
    h.run([f.event("d", id=2, lsn=400)])
    assert h.target.tombstones(h.resolved, [(2,)]) == {(2,): (400,)}


def test_scd2_late_event_after_delete_is_dropped(tmp_path: Path, any_target: Callable[..., LakeHarness]) -> None:
    h = any_target(tmp_path, ApplySpec("public.items", stored_as_scd_type=2))
    f = h.feed
    h.run([f.event("c", id=1, name="a", body="x", qty=1, lsn=100)])
    h.run([f.event("d", id=1, lsn=200)])
    h.run([f.event("u", id=1, name="zombie", body="x", qty=1, lsn=150)])
    assert data(h.rows(), "id", "name", "__START_AT", "__END_AT") == [(1, "a", seq(100), seq(200))]


def test_scd2_composite_key(tmp_path: Path, any_target: Callable[..., LakeHarness]) -> None:
    columns = [TargetColumn("tenant", pa.string()), TargetColumn("id", pa.int64()), TargetColumn("v", pa.string())]
    h = any_target(tmp_path, ApplySpec("public.multi", stored_as_scd_type=2, keys=["tenant", "id"]), columns=columns)
    f = h.feed
    h.run([f.event("c", tenant="a", id=1, v="x"), f.event("c", tenant="b", id=1, v="y"), f.event("c", tenant="a", id=2, v="z")])
    h.run([f.event("u", tenant="a", id=1, v="x2")])
    assert h.target.open_versions(h.resolved, [("a", 1), ("b", 2)]) == {("a", 1): (["a", 1, "x2"], (1030, 1031, 0))}
    assert len(h.rows()) == 4
    rows = sorted((r["tenant"], r["id"], r["v"], r["__END_AT"] is None) for r in h.stored())
    assert rows == [("a", 1, "x", False), ("a", 1, "x2", True), ("a", 2, "z", True), ("b", 1, "y", True)]


#: pgvector columns as the typed view hands them over: vector, halfvec, sparsevec.
VECTOR_COLUMNS = [
    TargetColumn("id", pa.int64(), nullable=False), TargetColumn("v", pa.list_(pa.float64())), TargetColumn("h", pa.list_(pa.float32())),
    TargetColumn("s", pa.struct([("dimensions", pa.int16()), ("vector", pa.map_(pa.int16(), pa.float64()))])),
]


def test_scd2_vector_columns_track_history_by_value(tmp_path: Path, lake: type[LakeHarness]) -> None:
    """A version closes when a list or a map's entries change, not on an equal value read back
    from the table (Iceberg: the sparse indices widened to int); NULLs are kept."""
    h = lake(tmp_path, ApplySpec("public.vectors", stored_as_scd_type=2), columns=VECTOR_COLUMNS)
    f = h.feed
    sparse = {"dimensions": 10, "vector": [(7, 0.1), (1, 1.5)]}
    h.run([f.event("c", id=1, v=[1.0, 2.5], h=[0.099975586], s=sparse, lsn=100), f.event("c", id=2, lsn=100)])
    h.run([f.event("u", id=1, v=[1.0, 2.5], h=[0.099975586], s=sparse, lsn=200),  # the same values: no new version
           f.event("u", id=2, s={"dimensions": 5, "vector": []}, lsn=200)])
    h.run([f.event("u", id=1, v=[1.0, 2.5], h=None, s={"dimensions": 10, "vector": [(7, 0.2), (1, 1.5)]}, lsn=300)])
    rows = [(r["id"], r["v"], r["h"], r["s"] and (r["s"]["dimensions"], sorted(r["s"]["vector"])), r["__END_AT"] is None)
            for r in h.rows()]
    assert rows == [(1, [1.0, 2.5], [pytest.approx(0.099975586, rel=1e-7)], (10, [(1, 1.5), (7, 0.1)]), False),
                    (1, [1.0, 2.5], None, (10, [(1, 1.5), (7, 0.2)]), True),
                    (2, None, None, None, False), (2, None, None, (5, []), True)]


# -- existing tables ------------------------------------------------------------------------------


def test_an_existing_table_without_the_expected_columns_gets_them_unless_strict(tmp_path: Path, lake: type[LakeHarness]) -> None:
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    lake.create(tmp_path, "public.items", schema, pa.table({"id": [1], "name": ["a"]}, schema=schema))
    # strict: stops at the first missing column, naming it, and leaves the table as it was
    with pytest.raises(SchemaChangeError, match=r"source table public\.items: column body \(string\) was added, and "
                                                r"sparkcdc\.apply\.schema\.evolution is strict"):
        lake(tmp_path, ApplySpec("public.items"), policy=EvolutionPolicy("strict"))
    # evolve (the default): the missing columns are added (nullable), the rows the table holds kept
    h = lake(tmp_path, ApplySpec("public.items"))
    assert [type(op).__name__ for op in h.evolution.operations] == ["AddColumn", "AddColumn"]
    assert h.schema().names == ["id", "name", "body", "qty"]
    assert data(h.rows(), "id", "name", "body", "qty") == [(1, "a", None, None)]
    h.run([h.feed.event("u", id=1, name="b", body="x", qty=2)])
    assert data(h.rows(), "id", "name", "body", "qty") == [(1, "b", "x", 2)]
    # strict again: the table has every column now, nothing stops
    assert not lake(tmp_path, ApplySpec("public.items"), policy=EvolutionPolicy("strict")).evolution.changed
    # SCD1 table, SCD2 spec: the history columns are missing, which no evolution adds
    lake.create(tmp_path, "public.hist", pa.schema([(c.name, c.arrow_type) for c in COLUMNS]))
    with pytest.raises(TargetError, match=r"without column\(s\) __START_AT, __END_AT \(stored_as_scd_type=2\)"):
        lake(tmp_path, ApplySpec("public.hist", stored_as_scd_type=2))


def test_an_existing_table_with_more_columns_keeps_them(tmp_path: Path, lake: type[LakeHarness]) -> None:
    schema = pa.schema([(c.name, c.arrow_type) for c in COLUMNS] + [("note", pa.string())])
    lake.create(tmp_path, "public.items", schema,
                pa.table({"id": [1], "name": ["a"], "body": ["x"], "qty": [1], "note": ["mine"]}, schema=schema))
    h = lake(tmp_path, ApplySpec("public.items"))
    h.run([h.feed.event("u", id=1, name="b", body="x", qty=2), h.feed.event("c", id=2, name="c", body="y", qty=3)])
    assert data(h.rows(), "id", "name", "qty", "note") == [(1, "b", 2, "mine"), (2, "c", 3, None)]


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


def _replay_changes_nothing(h: LakeHarness, events: list[dict[str, Any]], batch_id: int) -> None:
    fingerprint = h.fingerprint()
    assert not h.run(events, batch_id=batch_id)  # a replay
    assert h.fingerprint() == fingerprint


@pytest.mark.parametrize("seed,ignore_nulls", [(1, False), (2, True), (3, False)])
def test_scd1_matches_a_model_over_random_batches(tmp_path: Path, any_target: Callable[..., LakeHarness], seed: int, ignore_nulls: bool) -> None:
    rng = random.Random(seed)
    h = any_target(tmp_path, ApplySpec("public.items", ignore_null_updates=ignore_nulls))
    model = Model(ignore_nulls)
    lsn = 1000
    for batch_id in range(25):
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
        if rng.random() < 0.2 or batch_id % 3 == 2:
            _replay_changes_nothing(h, events, batch_id)
        assert {k: {n: r[n] for n in ("id", "name", "body", "qty")} for k, r in h.state().items()} == model.rows


@pytest.mark.parametrize("seed", [4, 5])
def test_scd2_open_versions_follow_the_model_and_chain(tmp_path: Path, any_target: Callable[..., LakeHarness], seed: int) -> None:
    rng = random.Random(seed)
    h = any_target(tmp_path, ApplySpec("public.items", stored_as_scd_type=2, track_history_except_column_list=["qty"]))
    model = Model(ignore_nulls=False)
    lsn = 1000
    for batch_id in range(20):
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
            _replay_changes_nothing(h, events, batch_id)
        rows = h.rows()
        open_rows = {r["id"]: {n: r[n] for n in ("id", "name", "body", "qty")} for r in rows if r["__END_AT"] is None}
        assert open_rows == model.rows
        assert all(count <= 1 for count in open_counts(rows).values())
        for older, newer in zip(rows, rows[1:], strict=False):
            assert older["__END_AT"] is None or start_of(older) < tuple(older["__END_AT"].values())
            if older["id"] == newer["id"]:
                assert older["__END_AT"] is not None and tuple(older["__END_AT"].values()) <= start_of(newer)
