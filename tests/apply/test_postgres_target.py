"""The PostgreSQL target: COPY + MERGE with the position in the same transaction, on the session cluster."""

from __future__ import annotations

import random
from typing import Any

import pytest

from sparkcdc.apply import ApplySpec
from sparkcdc.apply.errors import TargetError
from sparkcdc.apply.fold import fold_changes
from sparkcdc.apply.targets import TargetColumn, target_for
from sparkcdc.apply.targets.postgres import PostgresTarget

from .support import Events

PG_TYPES = {"id": "bigint", "name": "text", "body": "text", "n": "integer"}


@pytest.fixture
def target(pg_cluster):
    t = target_for(f"postgresql://{pg_cluster.user}@{pg_cluster.host}:{pg_cluster.port}/postgres")
    assert isinstance(t, PostgresTarget)
    yield t
    t.close()


def prepared(target, unique_name: str, **parameters: Any):
    spec = ApplySpec(table="public.items", target=f"{unique_name}.items", **parameters).resolve(Events.columns, Events.keys)
    columns = [TargetColumn(f.name, f.type, PG_TYPES[f.name], f.name != "id") for f in Events.schema]
    sequence = [TargetColumn(name, Events().table().schema.field(name).type, None, False) for name in spec.sequence]
    target.prepare(spec, columns, sequence)
    return spec


def apply(target, spec, events: Events, batch_id: int, pipeline: str = "p", replace_at: tuple | None = None) -> bool:
    table = events.table()
    keys = list(dict.fromkeys((k,) for k in table.column("id").to_pylist()))
    opened = target.open_versions(spec, keys) if spec.scd_type == 2 else None
    changes = fold_changes(spec, table, tombstones=target.tombstones(spec, keys), open_versions=opened, replace_at=replace_at)
    return target.apply(changes, pipeline_id=pipeline, batch_id=batch_id)


def rows(db, unique_name: str, order: str = "id") -> list[tuple]:
    return db.execute(f'SELECT * FROM "{unique_name}".items ORDER BY {order}').fetchall()


def test_scd1_mirror_with_toast_replay_and_tombstones(target, db, unique_name):
    spec = prepared(target, unique_name)
    assert apply(target, spec, Events(1).upsert(1, "a", "B" * 10, 1).upsert(2, "b", "y", 2), batch_id=0)
    # The TOASTed body is unchanged: the stored value stays.
    assert apply(target, spec, Events(2).upsert(1, "a2", None, 3, unchanged=["body"]).delete(2), batch_id=1)
    assert rows(db, unique_name) == [(1, "a2", "B" * 10, 3)]
    # The same batch again (a replay): nothing happens, nothing is written.
    assert not apply(target, spec, Events(2).upsert(1, "zzz", "zzz", 0), batch_id=1)
    assert rows(db, unique_name) == [(1, "a2", "B" * 10, 3)]
    # An event older than the recorded delete of key 2 does not bring it back.
    assert apply(target, spec, Events(1).upsert(2, "ghost", "g", 0), batch_id=2)
    assert rows(db, unique_name) == [(1, "a2", "B" * 10, 3)]
    position = db.execute("SELECT batch_id FROM sparkcdc.apply_positions WHERE pipeline_id = 'p' AND target = %s",
                          (f"{unique_name}.items",)).fetchone()
    assert position == (2,)


def test_scd1_truncate_in_the_middle_of_a_batch(target, db, unique_name):
    spec = prepared(target, unique_name)
    apply(target, spec, Events(1).upsert(1, "a", "x", 1).upsert(2, "b", "y", 2), batch_id=0)
    apply(target, spec, Events(2).upsert(3, "c", "z", 3).truncate().upsert(4, "d", "w", 4), batch_id=1)
    assert rows(db, unique_name) == [(4, "d", "w", 4)]


def test_scd2_history_chains(target, db, unique_name):
    spec = prepared(target, unique_name, stored_as_scd_type=2, track_history_except_column_list=["n"])
    apply(target, spec, Events(1).upsert(1, "a", "x", 1).upsert(2, "b", "y", 2), batch_id=0)
    apply(target, spec, Events(2).upsert(1, "a", "x", 5).upsert(1, "a2", None, 5, unchanged=["body"]).delete(2), batch_id=1)
    apply(target, spec, Events(3).upsert(3, "c", "z", 3).truncate().upsert(3, "c2", "z", 3), batch_id=2)
    history = rows(db, unique_name, 'id, "__START_AT"')
    assert history == [
        (1, "a", "x", 5, [1001, 1001, 0], [2002, 2002, 0]),  # n rewritten in place, then closed by the name change
        (1, "a2", "x", 5, [2002, 2002, 0], [3002, 3002, 0]),  # closed by the truncate it was untouched by
        (2, "b", "y", 2, [1002, 1002, 0], [2003, 2003, 0]),  # closed by the delete
        (3, "c", "z", 3, [3001, 3001, 0], [3002, 3002, 0]),
        (3, "c2", "z", 3, [3003, 3003, 0], None),
    ]


def test_scd1_an_image_replaces_the_table_and_is_applied_again_at_its_own_batch(target, db, unique_name):
    """The initial snapshot's batch re-executed with a newer image (the source snapshotted again):
    the mirror becomes the newer image, though batch 0 is recorded."""
    spec = prepared(target, unique_name)
    first = Events(1).upsert(1, "a", "x", 1).upsert(2, "b", "y", 2).upsert(3, "c", "z", 3)
    assert apply(target, spec, first, batch_id=0, replace_at=(1000, 1000, 0))
    assert apply(target, spec, first, batch_id=0, replace_at=(1000, 1000, 0))  # the same image: no change
    assert rows(db, unique_name) == [(1, "a", "x", 1), (2, "b", "y", 2), (3, "c", "z", 3)]
    newer = Events(5).upsert(2, "b2", "y", 2).upsert(3, "c", "z", 3).upsert(4, "d", "w", 4)
    assert apply(target, spec, newer, batch_id=0, replace_at=(5000, 5000, 0))
    assert rows(db, unique_name) == [(2, "b2", "y", 2), (3, "c", "z", 3), (4, "d", "w", 4)]
    assert apply(target, spec, Events(6).upsert(5, "e", "v", 5), batch_id=1)
    # Once a later batch is recorded, the image batch is an old replay like any other.
    assert not apply(target, spec, Events(5).upsert(9, "i", "i", 9), batch_id=0, replace_at=(5000, 5000, 0))
    # An empty image empties the table.
    assert apply(target, spec, Events(7), batch_id=2, replace_at=(7000, 7000, 0))
    assert rows(db, unique_name) == []


def test_scd2_an_image_closes_the_versions_it_lacks_and_keeps_the_unchanged_ones(target, db, unique_name):
    spec = prepared(target, unique_name, stored_as_scd_type=2)
    first = Events(1).upsert(1, "a", "x", 1).upsert(2, "b", "y", 2).upsert(3, "c", "z", 3)
    assert apply(target, spec, first, batch_id=0, replace_at=(1001, 1001, 0))
    before = rows(db, unique_name, 'id, "__START_AT"')
    assert apply(target, spec, first, batch_id=0, replace_at=(1001, 1001, 0))
    assert rows(db, unique_name, 'id, "__START_AT"') == before  # the same image again changes nothing
    newer = Events(5).upsert(2, "b2", "y", 2).upsert(3, "c", "z", 3).upsert(4, "d", "w", 4)
    assert apply(target, spec, newer, batch_id=0, replace_at=(5001, 5001, 0))
    assert rows(db, unique_name, 'id, "__START_AT"') == [
        (1, "a", "x", 1, [1001, 1001, 0], [5001, 5001, 0]),  # not in the newer image: closed at it
        (2, "b", "y", 2, [1002, 1002, 0], [5001, 5001, 0]),
        (2, "b2", "y", 2, [5001, 5001, 0], None),
        (3, "c", "z", 3, [1003, 1003, 0], None),  # unchanged: its version stays open, no new one
        (4, "d", "w", 4, [5003, 5003, 0], None),
    ]
    assert apply(target, spec, Events(7), batch_id=1, replace_at=(7000, 7000, 0))
    assert db.execute(f'SELECT count(*) FROM "{unique_name}".items WHERE "__END_AT" IS NULL').fetchone() == (0,)


def test_existing_table_without_the_columns_gets_them(target, db, unique_name):
    """A table the owner made gets the columns it lacks (the evolve policy; see test_postgres_evolution.py)."""
    db.execute(f'CREATE SCHEMA "{unique_name}"')
    db.execute(f'CREATE TABLE "{unique_name}".items (id bigint primary key, name text)')
    db.execute(f'INSERT INTO "{unique_name}".items VALUES (1, \'kept\')')
    prepared(target, unique_name)
    assert rows(db, unique_name) == [(1, "kept", None, None)]


def test_unreachable_target_is_named():
    with pytest.raises(TargetError, match="postgresql://nobody:\\*{8}@127.0.0.1:1/x"):
        target_for("postgresql://nobody:secret@127.0.0.1:1/x", connect_timeout=2)


@pytest.mark.parametrize("scd_type", [1, 2])
def test_random_batches_match_a_model(target, db, unique_name, scd_type):
    """Random inserts, updates (some leaving the TOASTed body unchanged), deletes, re-inserts and
    truncates over 30 keys in 40 batches, every third batch replayed: the SCD1 mirror equals the
    model; SCD2's open versions equal it and each key's versions form a chain without overlap."""
    rng = random.Random(7 + scd_type)
    spec = prepared(target, unique_name, stored_as_scd_type=scd_type)
    model: dict[int, tuple[str, str, int]] = {}
    for batch_id in range(40):
        events = Events(batch_id + 1)
        for _ in range(rng.randint(1, 25)):
            key = rng.randint(1, 30)
            roll = rng.random()
            if roll < 0.02:
                events.truncate()
                model.clear()
            elif key in model and roll < 0.25:
                events.delete(key)
                del model[key]
            elif key in model and roll < 0.6:
                name, body, n = model[key]
                model[key] = (f"n{rng.randint(0, 9)}", body, n + 1)
                events.upsert(key, model[key][0], None, model[key][2], unchanged=["body"])
            else:
                model[key] = (f"n{rng.randint(0, 9)}", f"body{rng.randint(0, 99)}", rng.randint(0, 5))
                events.upsert(key, *model[key])
        assert apply(target, spec, events, batch_id)
        if batch_id % 3 == 0:
            assert not apply(target, spec, events, batch_id)
    expected = sorted((k, *v) for k, v in model.items())
    if scd_type == 1:
        assert rows(db, unique_name) == expected
        return
    history = rows(db, unique_name, 'id, "__START_AT"')
    assert sorted(r[:4] for r in history if r[5] is None) == expected
    by_key: dict[int, list[tuple]] = {}
    for r in history:
        by_key.setdefault(r[0], []).append(r)
    for versions in by_key.values():
        for older, newer in zip(versions, versions[1:], strict=False):
            assert older[5] is not None and older[4] < older[5] <= newer[4]
