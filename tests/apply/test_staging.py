"""Stage and commit, as Spark drives them: a table's batch folded in several partitions, each
staged under a tag of its own, and only the tags the driver collected committed.

Every target (PostgreSQL, Delta Lake, Iceberg): a task attempt that staged and then failed (its tag
never collected) changes nothing, and its staging is removed with the batch's; partitions of one
batch commit together, an image across them removes only the keys none of them holds; a replayed
batch commits nothing and leaves no staging behind."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from sparkcdc.apply import ApplySpec
from sparkcdc.apply.fold import fold_arrow
from sparkcdc.apply.staged import StagedBatch, StagedPart

from .targets import DeltaHarness, LakeHarness, PostgresHarness, data, open_counts


def _stage(h: LakeHarness, events: list[dict[str, Any]], tag: str, *, batch_id: int, image: bool = False) -> StagedPart:
    """Fold ``events`` against the target, as one partition does, and stage them under ``tag``."""
    table = h.feed.table(events)
    keys = {(e["id"],) for e in events if not e["__is_truncate"]}
    folded = fold_arrow(h.resolved, table, tombstones=h.target.tombstones(h.resolved, keys),
                        open_versions=h.target.open_versions(h.resolved, keys) if h.resolved.scd_type == 2 else None,
                        image=image)
    return h.target.stage(folded, pipeline_id="pipe", batch_id=batch_id, tag=tag)


def _staged_rows(h: LakeHarness, root: Path) -> int:
    """Rows (PostgreSQL) or files (the lake formats) left in the target's staging."""
    if isinstance(h, PostgresHarness):
        with psycopg.connect(h.url, autocommit=True) as conn:
            names = [r[0] for r in conn.execute(
                "SELECT relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE n.nspname = 'sparkcdc' AND c.relname LIKE %s", (f"{h.name}__stage_%",)).fetchall()]
            assert names, "the target table has a staging table"
            return sum(conn.execute(f'SELECT count(*) FROM sparkcdc."{name}"').fetchone()[0] for name in names)
    return len(list((root / "_sparkcdc_staging").rglob("*.parquet")))


@pytest.mark.parametrize("scd", [1, 2])
def test_a_failed_attempts_staging_is_not_committed_and_is_removed(tmp_path: Path, any_target: Callable[..., LakeHarness],
                                                                   scd: int) -> None:
    h = any_target(tmp_path, ApplySpec("public.items", stored_as_scd_type=scd))
    f = h.feed
    assert h.run([f.event("c", id=i, name=f"n{i}", body="b", qty=i, lsn=100) for i in (1, 2, 3)], batch_id=0)
    batch = [f.event("u", id=1, name="one", body="b", qty=1, lsn=200), f.event("d", id=2, lsn=210),
             f.event("c", id=4, name="four", body="b", qty=4, lsn=220)]
    # The first attempt of the task staged the same partition, then died before the driver heard of it.
    _stage(h, batch, "attempt-0", batch_id=1)
    # A stray attempt with other content (as if the partition were different): never collected either.
    _stage(h, [f.event("u", id=3, name="stray", body="b", qty=3, lsn=230)], "attempt-stray", batch_id=1)
    assert _staged_rows(h, tmp_path) > 0
    retried = _stage(h, batch, "attempt-1", batch_id=1)
    assert h.target.commit(StagedBatch(h.resolved, (retried,)), pipeline_id="pipe", batch_id=1)
    if scd == 1:
        assert data(h.rows(), "id", "name") == [(1, "one"), (3, "n3"), (4, "four")]
    else:
        rows = h.rows()
        assert open_counts(rows) == {1: 1, 2: 0, 3: 1, 4: 1}  # one version per change: attempt 0's are not there too
        assert len(rows) == 5 and data([r for r in rows if r["__END_AT"] is None], "id", "name") == [
            (1, "one"), (3, "n3"), (4, "four")]
    assert h.target.tombstones(h.resolved, [(2,)]) == {(2,): (210, 211, 0)}
    assert _staged_rows(h, tmp_path) == 0  # every attempt's staging of the batch is gone
    # Spark runs the batch again (the driver died before its checkpoint recorded it): nothing changes.
    fingerprint = h.fingerprint()
    again = _stage(h, batch, "replay", batch_id=1)
    assert not h.target.commit(StagedBatch(h.resolved, (again,)), pipeline_id="pipe", batch_id=1)
    assert h.fingerprint() == fingerprint and _staged_rows(h, tmp_path) == 0


@pytest.mark.parametrize("scd", [1, 2])
def test_partitions_of_a_batch_commit_together_and_an_image_spans_them(tmp_path: Path, any_target: Callable[..., LakeHarness],
                                                                      scd: int) -> None:
    h = any_target(tmp_path, ApplySpec("public.items", stored_as_scd_type=scd))
    f = h.feed
    first = [f.event("r", id=i, name=f"n{i}", body="b", qty=i, lsn=100) for i in range(1, 7)]
    assert h.run(first, batch_id=0, replace_at=(100, 101, 0))
    # The snapshot taken again: key 1 and 4 are gone, 2 and 5 changed; two partitions by key.
    low = [f.event("r", id=2, name="two", body="b", qty=2, lsn=500), f.event("r", id=3, name="n3", body="b", qty=3, lsn=500)]
    high = [f.event("r", id=5, name="five", body="b", qty=5, lsn=501), f.event("r", id=6, name="n6", body="b", qty=6, lsn=501),
            f.event("r", id=7, name="n7", body="b", qty=7, lsn=502)]
    parts = (_stage(h, high, "partition-1", batch_id=0, image=True), _stage(h, low, "partition-0", batch_id=0, image=True))
    staged = StagedBatch(h.resolved, parts)
    assert staged.is_image and staged.segments[0].replace_at == (500, 501, 0)  # the earliest partition's
    assert h.target.commit(staged, pipeline_id="pipe", batch_id=0)
    if scd == 1:
        assert data(h.rows(), "id", "name") == [(2, "two"), (3, "n3"), (5, "five"), (6, "n6"), (7, "n7")]
    else:
        rows = h.rows()
        assert data([r for r in rows if r["__END_AT"] is None], "id", "name") == [
            (2, "two"), (3, "n3"), (5, "five"), (6, "n6"), (7, "n7")]
        closed = {r["id"]: r["__END_AT"] for r in rows if r["__END_AT"] is not None}
        assert sorted(closed) == [1, 2, 4, 5]
        assert all(tuple(end.values()) in ((500, 501, 0), (501, 502, 0)) for end in closed.values())
    assert _staged_rows(h, tmp_path) == 0


def test_parts_that_disagree_on_their_segments_are_refused() -> None:
    from sparkcdc.apply.errors import ApplyError
    from sparkcdc.apply.staged import SegmentBounds

    spec = ApplySpec("public.items").resolve(["id"], ["id"])
    whole = StagedPart("a", (SegmentBounds(),), (1,), 0, 1, 0)
    truncated = StagedPart("b", (SegmentBounds(truncate_at=(5,)),), (1,), 0, 1, 0)
    imaged = StagedPart("c", (SegmentBounds(replace_at=(5,)),), (1,), 0, 1, 0)
    with pytest.raises(ApplyError, match="truncate at different sequences"):
        StagedBatch(spec, (whole, truncated))
    with pytest.raises(ApplyError, match="only some staged parts"):
        StagedBatch(spec, (whole, imaged))
    with pytest.raises(ApplyError, match="has no part"):
        StagedBatch(spec, ())


def _fast_path_of(h: LakeHarness, scd: int) -> bool:
    """Whether the target writes an image into an empty table without its merge: PostgreSQL (an
    INSERT of the staged rows), Delta Lake SCD1 (the executors' data files, committed by reference)."""
    return isinstance(h, PostgresHarness) or (isinstance(h, DeltaHarness) and scd == 1)


@pytest.mark.parametrize("scd", [1, 2])
def test_an_image_into_an_empty_table_is_the_image_without_a_merge_and_stays_exactly_once(
        tmp_path: Path, any_target: Callable[..., LakeHarness], scd: int, monkeypatch: pytest.MonkeyPatch) -> None:
    h = any_target(tmp_path, ApplySpec("public.items", stored_as_scd_type=scd))
    f = h.feed
    low = [f.event("r", id=i, name=f"n{i}", body="b", qty=i, lsn=100) for i in (1, 2, 3)]
    high = [f.event("r", id=i, name=f"n{i}", body="b", qty=i, lsn=101) for i in (4, 5)]
    _stage(h, [f.event("r", id=9, name="stray", body="b", qty=9, lsn=100)], "attempt-failed", batch_id=0, image=True)
    parts = (_stage(h, low, "chunk-0", batch_id=0, image=True), _stage(h, high, "chunk-1", batch_id=0, image=True))
    if _fast_path_of(h, scd):  # the merge would fail: the fast path must not take it
        monkeypatch.setattr(h.target_class, h.write_methods[scd], lambda *a, **k: pytest.fail("merged an image into an empty table"))
    assert h.target.commit(StagedBatch(h.resolved, parts), pipeline_id="pipe", batch_id=0)
    monkeypatch.undo()
    expected = [(i, f"n{i}") for i in range(1, 6)]
    assert data(h.rows(), "id", "name") == expected and _staged_rows(h, tmp_path) == 0
    if isinstance(h, DeltaHarness) and scd == 1:  # the table's files are the two chunks' own, the stray attempt's is not
        assert sorted(Path(uri).name for uri in h.table().file_uris()) == sorted(
            name for part in parts for name, _, _ in part.table_files)
    # Spark runs the image's batch again (a restart): applied again, to the same rows.
    again = (_stage(h, low + high, "chunk-again", batch_id=0, image=True),)
    assert h.target.commit(StagedBatch(h.resolved, again), pipeline_id="pipe", batch_id=0)
    assert data(h.rows(), "id", "name") == expected
    # Once a later batch is recorded, the image's batch replayed changes nothing.
    assert h.run([f.event("u", id=2, name="two", body="b", qty=2, lsn=300)], batch_id=1)
    fingerprint = h.fingerprint()
    stale = (_stage(h, low + high, "chunk-stale", batch_id=0, image=True),)
    assert not h.target.commit(StagedBatch(h.resolved, stale), pipeline_id="pipe", batch_id=0)
    current = [r for r in h.rows() if scd == 1 or r["__END_AT"] is None]
    assert h.fingerprint() == fingerprint and data(current, "id", "name")[:2] == [(1, "n1"), (2, "two")]


def test_a_delta_table_with_columns_of_its_own_takes_an_image_by_merge(tmp_path: Path) -> None:
    """An overwrite would lose the values of the owner's extra column; a merge keeps them."""
    import pyarrow as pa

    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("body", pa.string()), ("qty", pa.int64()),
                        ("note", pa.string())])
    DeltaHarness.create(tmp_path, "public.items", schema, pa.table(
        {"id": [1, 2], "name": ["a", "b"], "body": ["x", "x"], "qty": [1, 2], "note": ["kept", "gone"]}, schema=schema))
    h = DeltaHarness(tmp_path, ApplySpec("public.items"))
    image = [h.feed.event("r", id=1, name="one", body="b", qty=1, lsn=100), h.feed.event("r", id=3, name="n3", body="b", qty=3, lsn=100)]
    part = _stage(h, image, "chunk-0", batch_id=0, image=True)
    assert not part.in_place
    assert h.target.commit(StagedBatch(h.resolved, (part,)), pipeline_id="pipe", batch_id=0)
    assert data(h.rows(), "id", "name", "note") == [(1, "one", "kept"), (3, "n3", None)]


def _stage_relations(h: PostgresHarness) -> list[str]:
    with psycopg.connect(h.url, autocommit=True) as conn:
        return [r[0] for r in conn.execute(
            "SELECT c.oid::regclass::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = 'sparkcdc' AND c.relname LIKE %s", (f"{h.name}__stage_%",)).fetchall()]


def _rows_in(h: PostgresHarness, relation: str) -> int:
    with psycopg.connect(h.url, autocommit=True) as conn:
        return int(conn.execute(f"SELECT count(*) FROM {relation}").fetchone()[0])


def test_postgresql_empties_a_big_batchs_staging_with_truncate_unless_another_pipeline_staged(
        tmp_path: Path, any_target: Callable[..., LakeHarness], monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch of TRUNCATE_STAGING_ROWS staged rows or more leaves its staging table emptied by
    TRUNCATE (a new, empty file: no dead row for the next batches to read through); rows another
    pipeline staged there keep the DELETE of this pipeline's rows only."""
    from sparkcdc.apply.targets import postgres

    h = any_target(tmp_path, ApplySpec("public.items"))
    if not isinstance(h, PostgresHarness):
        pytest.skip("the staging table is PostgreSQL's")
    monkeypatch.setattr(postgres, "TRUNCATE_STAGING_ROWS", 3)
    f = h.feed
    assert h.run([f.event("c", id=i, name=f"n{i}", body="b", qty=i, lsn=100) for i in (1, 2, 3)], batch_id=0)
    stage = h.target._table(h.resolved).stage.as_string(h.conn)  # this target's staging table
    assert stage.replace('"', "") in _stage_relations(h)

    def filenode() -> int:
        with psycopg.connect(h.url, autocommit=True) as conn:
            return int(conn.execute("SELECT pg_relation_filenode(%s)", (stage,)).fetchone()[0])

    before = filenode()
    big = _stage(h, [f.event("u", id=i, name=f"m{i}", body="b", qty=i, lsn=200 + i) for i in (1, 2, 3)], "big", batch_id=1)
    assert h.target.commit(StagedBatch(h.resolved, (big,)), pipeline_id="pipe", batch_id=1)
    assert _rows_in(h, stage) == 0 and filenode() != before  # truncated: a new file
    assert data(h.rows(), "id", "name") == [(1, "m1"), (2, "m2"), (3, "m3")]

    # Another pipeline's staged row (its batch not committed yet) stays; this pipeline's go.
    h.target.stage(fold_arrow(h.resolved, h.feed.table([f.event("u", id=9, name="other", body="b", qty=9, lsn=300)])),
                   pipeline_id="other-pipe", batch_id=7, tag="other")
    before = filenode()
    again = _stage(h, [f.event("u", id=i, name=f"o{i}", body="b", qty=i, lsn=400 + i) for i in (1, 2, 3)], "again", batch_id=2)
    assert h.target.commit(StagedBatch(h.resolved, (again,)), pipeline_id="pipe", batch_id=2)
    assert _rows_in(h, stage) == 1 and filenode() == before  # the DELETE of this pipeline's rows
    assert data(h.rows(), "id", "name") == [(1, "o1"), (2, "o2"), (3, "o3")]
