"""A PostgreSQL mirror follows its source table's shape (sparkcdc.apply.evolution), on the session cluster.

Each test prepares a target table, then prepares it again with the columns a later version of the
source table has (with their ``attnum``, as the reader describes them), applies rows, and looks at
the mirror: its columns, types, NOT NULL, and values.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from sparkcdc.apply import ApplySpec
from sparkcdc.apply.evolution import EvolutionPolicy, SchemaChangeError
from sparkcdc.apply.fold import fold_changes
from sparkcdc.apply.spec import DEFAULT_SEQUENCE
from sparkcdc.apply.targets import TargetColumn, target_for
from sparkcdc.apply.targets.postgres import pg_type_verdict

SEQUENCE = [TargetColumn(name, pa.int64(), None, False) for name in DEFAULT_SEQUENCE]


@pytest.fixture
def target(pg_cluster):
    t = target_for(f"postgresql://{pg_cluster.user}@{pg_cluster.host}:{pg_cluster.port}/postgres")
    yield t
    t.close()


def col(name: str, arrow: pa.DataType, pg: str, attnum: int, *, nullable: bool = True, **extra: Any) -> TargetColumn:
    return TargetColumn(name, arrow, pg, nullable, attnum=attnum, **extra)


BASE = [col("id", pa.int64(), "bigint", 1, nullable=False), col("name", pa.string(), "character varying(20)", 2),
        col("qty", pa.int32(), "integer", 3), col("price", pa.decimal128(8, 2), "numeric(8,2)", 4)]


def prepare(target, schema: str, columns: list[TargetColumn], *, scd: int = 1, policy: EvolutionPolicy | None = None):
    spec = ApplySpec(table="public.items", target=f"{schema}.items", stored_as_scd_type=scd).resolve(
        [c.name for c in columns], ["id"])
    evolution = target.prepare(spec, columns, SEQUENCE, policy, relation_id=4242)
    return spec, evolution


def apply(target, spec, columns: list[TargetColumn], rows: list[dict[str, Any]], batch_id: int) -> None:
    fields = [pa.field(c.name, c.arrow_type) for c in columns] + [
        pa.field("__is_delete", pa.bool_()), pa.field("__is_truncate", pa.bool_()), pa.field("__unchanged", pa.list_(pa.string())),
        *(pa.field(name, pa.int64()) for name in DEFAULT_SEQUENCE)]
    events = [{**{c.name: row.get(c.name) for c in columns}, "__is_delete": False, "__is_truncate": False, "__unchanged": [],
               "__commit_lsn": 100 * batch_id + i, "__lsn": 100 * batch_id + i, "__ordinal": 0} for i, row in enumerate(rows)]
    table = pa.Table.from_pylist(events, schema=pa.schema(fields))
    keys = [(row["id"],) for row in rows]
    opened = target.open_versions(spec, keys) if spec.scd_type == 2 else None
    changes = fold_changes(spec, table, tombstones=target.tombstones(spec, keys), open_versions=opened)
    assert target.apply(changes, pipeline_id="p", batch_id=batch_id)


def shape(db, schema: str) -> list[tuple[str, str, bool]]:
    return db.execute(
        "SELECT attname::text, format_type(atttypid, atttypmod), attnotnull FROM pg_attribute"
        f" WHERE attrelid = '\"{schema}\".items'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum").fetchall()


def test_added_renamed_widened_and_dropped_columns(target, db, unique_name):
    db.execute(f'CREATE SCHEMA "{unique_name}"')
    spec, _ = prepare(target, unique_name, BASE)
    apply(target, spec, BASE, [{"id": 1, "name": "a", "qty": 1, "price": Decimal("1.50")},
                               {"id": 2, "name": "b", "qty": 2, "price": Decimal("2.50")}], 1)
    # The source: name renamed to title and widened to varchar(50), qty int -> bigint, price numeric(8,2) ->
    # numeric(12,2), a column added with a constant default (existing rows got 7), one without, and
    # a column dropped: nothing but what the attnums say tells the rename from a drop and an add.
    later = [col("id", pa.int64(), "bigint", 1, nullable=False), col("title", pa.string(), "character varying(50)", 2),
             col("qty", pa.int64(), "bigint", 3), col("price", pa.decimal128(12, 2), "numeric(12,2)", 4),
             col("flag", pa.int32(), "integer", 6, fill=7), col("note", pa.string(), "text", 7)]
    spec, evolution = prepare(target, unique_name, later)
    assert [type(op).__name__ for op in evolution.operations] == [
        "RenameColumn", "WidenColumn", "WidenColumn", "WidenColumn", "AddColumn", "AddColumn"]
    assert shape(db, unique_name) == [("id", "bigint", True), ("title", "character varying(50)", False),
                                      ("qty", "bigint", False), ("price", "numeric(12,2)", False),
                                      ("flag", "integer", False), ("note", "text", False)]
    # Existing rows hold the default's value, as in the source; the default itself is not kept.
    assert db.execute(f'SELECT id, title, flag, note FROM "{unique_name}".items ORDER BY id').fetchall() == [
        (1, "a", 7, None), (2, "b", 7, None)]
    assert db.execute(f"SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef WHERE adrelid = '\"{unique_name}\".items'::regclass"
                      ).fetchall() == []
    apply(target, spec, later, [{"id": 3, "title": "c" * 40, "qty": 2**40, "price": Decimal("1234567890.25"), "flag": 1}], 2)
    # Then flag is dropped from the source: the mirror keeps it (nullable), new rows leave it null.
    dropped = [c for c in later if c.name != "flag"]
    spec, evolution = prepare(target, unique_name, dropped)
    assert evolution.operations == ()  # flag was nullable already: nothing to change
    apply(target, spec, dropped, [{"id": 4, "title": "d", "qty": 4}], 3)
    assert db.execute(f'SELECT id, flag FROM "{unique_name}".items ORDER BY id').fetchall() == [(1, 7), (2, 7), (3, 1), (4, None)]
    # Identity recorded, so a restart matches by attnum again.
    identity = db.execute("SELECT columns FROM sparkcdc.apply_identities WHERE target = %s", (f"{unique_name}.items",)).fetchone()[0]
    assert identity == {"id": 1, "title": 2, "qty": 3, "price": 4, "flag": 6, "note": 7}


def test_a_column_dropped_and_added_again_is_a_new_column(target, db, unique_name):
    db.execute(f'CREATE SCHEMA "{unique_name}"')
    spec, _ = prepare(target, unique_name, BASE)
    apply(target, spec, BASE, [{"id": 1, "name": "a", "qty": 5}], 1)
    again = [*BASE[:2], BASE[3], col("qty", pa.int32(), "integer", 5)]  # qty dropped, then added (attnum 5)
    spec, evolution = prepare(target, unique_name, again)
    assert [type(op).__name__ for op in evolution.operations] == ["DropColumn", "AddColumn"]
    assert db.execute(f'SELECT id, qty FROM "{unique_name}".items').fetchall() == [(1, None)]


def test_not_null_is_relaxed_at_once_and_set_after_the_batch(target, db, unique_name):
    db.execute(f'CREATE SCHEMA "{unique_name}"')
    spec, _ = prepare(target, unique_name, BASE)
    apply(target, spec, BASE, [{"id": 1, "name": None, "qty": 1}], 1)
    strict_name = [BASE[0], col("name", pa.string(), "character varying(20)", 2, nullable=False), *BASE[2:]]
    spec, evolution = prepare(target, unique_name, strict_name)
    assert [op.name for op in evolution.tighten] == ["name"]
    assert ("name", "character varying(20)", False) in shape(db, unique_name)  # not yet: row 1 has no name
    apply(target, spec, strict_name, [{"id": 1, "name": "filled", "qty": 1}], 2)
    assert ("name", "character varying(20)", True) in shape(db, unique_name)
    spec, evolution = prepare(target, unique_name, BASE)
    assert [type(op).__name__ for op in evolution.operations] == ["DropNotNull"]
    assert ("name", "character varying(20)", False) in shape(db, unique_name)


def test_unsafe_changes_stop_naming_the_column_and_leave_the_mirror_as_it_was(target, db, unique_name):
    db.execute(f'CREATE SCHEMA "{unique_name}"')
    prepare(target, unique_name, BASE)
    narrowed = [BASE[0], col("name", pa.string(), "character varying(10)", 2), *BASE[2:]]
    with pytest.raises(SchemaChangeError, match=r"column name changed type from character varying\(20\) to character varying\(10\)"
                                                r".*ALTER TABLE .*items ALTER COLUMN name"):
        prepare(target, unique_name, narrowed)
    incompatible = [*BASE[:2], col("qty", pa.string(), "text", 3), BASE[3]]
    with pytest.raises(SchemaChangeError, match="column qty changed type from integer to text"):
        prepare(target, unique_name, incompatible)
    rekeyed = [col("id", pa.int64(), "bigint", 1), col("name", pa.string(), "character varying(20)", 2, nullable=False), *BASE[2:]]
    spec = ApplySpec(table="public.items", target=f"{unique_name}.items").resolve([c.name for c in rekeyed], ["name"])
    with pytest.raises(SchemaChangeError, match="a key change"):
        target.prepare(spec, rekeyed, SEQUENCE, None, relation_id=4242)
    assert shape(db, unique_name) == [("id", "bigint", True), ("name", "character varying(20)", False),
                                      ("qty", "integer", False), ("price", "numeric(8,2)", False)]
    # The user's remedy: the mirror column changed by hand; the same change then goes through.
    db.execute(f'ALTER TABLE "{unique_name}".items ALTER COLUMN name TYPE varchar(10)')
    prepare(target, unique_name, narrowed)


def test_strict_stops_at_any_change_and_goes_on_once_the_mirror_has_it(target, db, unique_name):
    db.execute(f'CREATE SCHEMA "{unique_name}"')
    strict = EvolutionPolicy("strict")
    prepare(target, unique_name, BASE, policy=strict)
    added = [*BASE, col("flag", pa.int32(), "integer", 5)]
    with pytest.raises(SchemaChangeError, match=r"source table public.items: column flag \(integer\) was added, and "
                                                r"sparkcdc.apply.schema.evolution is strict"):
        prepare(target, unique_name, added, policy=strict)
    db.execute(f'ALTER TABLE "{unique_name}".items ADD COLUMN flag integer')
    _, evolution = prepare(target, unique_name, added, policy=strict)
    assert not evolution.changed


def test_ignore_new_columns_leaves_them_out(target, db, unique_name):
    db.execute(f'CREATE SCHEMA "{unique_name}"')
    policy = EvolutionPolicy("ignore-new-columns")
    prepare(target, unique_name, BASE, policy=policy)
    renamed = [BASE[0], col("title", pa.string(), "character varying(20)", 2), *BASE[2:], col("flag", pa.int32(), "integer", 5)]
    _, evolution = prepare(target, unique_name, renamed, policy=policy)
    assert [c.name for c in evolution.columns] == ["id", "title", "qty", "price"]
    assert [name for name, _, _ in shape(db, unique_name)] == ["id", "title", "qty", "price"]


def test_dropped_columns_are_dropped_when_asked(target, db, unique_name):
    db.execute(f'CREATE SCHEMA "{unique_name}"')
    policy = EvolutionPolicy(dropped_columns="drop")
    prepare(target, unique_name, BASE, policy=policy)
    _, evolution = prepare(target, unique_name, BASE[:3], policy=policy)
    assert [name for name, _, _ in shape(db, unique_name)] == ["id", "name", "qty"]


def test_scd2_history_follows_too(target, db, unique_name):
    db.execute(f'CREATE SCHEMA "{unique_name}"')
    spec, _ = prepare(target, unique_name, BASE, scd=2)
    apply(target, spec, BASE, [{"id": 1, "name": "a", "qty": 1}], 1)
    later = [BASE[0], col("title", pa.string(), "text", 2), *BASE[2:], col("flag", pa.int32(), "integer", 5, fill=3,
                                                                          nullable=False)]
    spec, evolution = prepare(target, unique_name, later, scd=2)
    assert evolution.tighten == ()  # a history keeps old versions: NOT NULL is not set
    apply(target, spec, later, [{"id": 1, "title": "b", "qty": 1, "flag": 4}], 2)
    assert db.execute(f'SELECT id, title, flag, "__END_AT" IS NULL FROM "{unique_name}".items ORDER BY "__START_AT"').fetchall() == [
        (1, "a", 3, False), (1, "b", 4, True)]


@pytest.mark.parametrize(("old", "new", "verdict"), [
    ("integer", "bigint", "wider"), ("bigint", "integer", "unsafe"), ("smallint", "integer", "wider"),
    ("real", "double precision", "wider"), ("double precision", "real", "unsafe"),
    ("character varying(10)", "character varying(20)", "wider"), ("character varying(20)", "character varying(10)", "unsafe"),
    ("character varying(10)", "text", "wider"), ("character varying(10)", "character varying", "wider"),
    ("text", "character varying(10)", "unsafe"),
    ("numeric(8,2)", "numeric(12,2)", "wider"), ("numeric(8,2)", "numeric(12,4)", "wider"), ("numeric(8,2)", "numeric(8,3)", "unsafe"),
    ("numeric(8,2)", "numeric", "wider"), ("numeric", "numeric(30,2)", "unsafe"),
    ("integer[]", "bigint[]", "wider"), ("integer", "text", "unsafe"),
    ("timestamp(3) without time zone", "timestamp without time zone", "wider"),
    ("timestamp without time zone", "timestamp with time zone", "unsafe"),
])
def test_what_a_postgresql_mirror_widens(old, new, verdict):
    assert pg_type_verdict(old, new) == verdict


def test_a_widened_key_is_widened_in_the_tombstones_too(target, db, unique_name):
    db.execute(f'CREATE SCHEMA "{unique_name}"')
    narrow = [col("id", pa.int32(), "integer", 1, nullable=False), *BASE[1:]]
    spec, _ = prepare(target, unique_name, narrow)
    apply(target, spec, narrow, [{"id": 1, "name": "a"}], 1)
    wide = [col("id", pa.int64(), "bigint", 1, nullable=False), *BASE[1:]]
    spec, evolution = prepare(target, unique_name, wide)
    assert [type(op).__name__ for op in evolution.operations] == ["WidenColumn"]
    tombstones = db.execute("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = %s::regclass AND attname = 'id'",
                            (f'"{unique_name}".items__sparkcdc_tombstones',)).fetchone()[0]
    assert tombstones == "bigint"
    big = 2**40
    apply(target, spec, wide, [{"id": big, "name": "big"}], 2)
    fields = [pa.field(c.name, c.arrow_type) for c in wide] + [
        pa.field("__is_delete", pa.bool_()), pa.field("__is_truncate", pa.bool_()), pa.field("__unchanged", pa.list_(pa.string())),
        *(pa.field(name, pa.int64()) for name in DEFAULT_SEQUENCE)]
    delete = pa.Table.from_pylist([{"id": big, "__is_delete": True, "__is_truncate": False, "__unchanged": [], "__commit_lsn": 900,
                                    "__lsn": 900, "__ordinal": 0}], schema=pa.schema(fields))
    changes = fold_changes(spec, delete, tombstones=target.tombstones(spec, [(big,)]))
    assert target.apply(changes, pipeline_id="p", batch_id=3)
    assert db.execute(f'SELECT count(*) FROM "{unique_name}".items__sparkcdc_tombstones WHERE id = %s', (big,)).fetchone()[0] == 1
