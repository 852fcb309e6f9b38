"""Schema change records (``include.schema.changes``) from the engine: when a Relation message makes
one, where it is placed, and what a micro-batch knows of the batch before it.

Against the session's PostgreSQL: the stream ranges are read with the batch reader the Spark tasks
use (``read_stream_range``, one replication connection per batch, the stream state handed between
them), the snapshot through the in-process connector (the planner and ``read_work`` of every path).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import psycopg
import pytest

from sparkcdc.catalog import ColumnInfo, TableInfo
from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.debezium.records import ChangeRecord
from sparkcdc.engine.batch_reader import read_stream_range
from sparkcdc.engine.connector import LocalConnector
from sparkcdc.engine.core import tables as tables_module
from sparkcdc.engine.core.offsets import SourceOffset
from sparkcdc.engine.core.schema_changes import RelationShapes, relation_message_digest, table_digest
from sparkcdc.engine.core.state_store import StreamStateStore
from sparkcdc.errors import ConfigurationError
from sparkcdc.pgoutput.messages import Relation, RelationColumn, ReplicaIdentity
from sparkcdc.postgres import create_publication, drop_slot, ensure_slot

INT4, TEXT, INT8 = 23, 25, 20


# -- the content that counts -------------------------------------------------------------------------
def _relation(columns: list[tuple[str, int, int, bool]], identity: ReplicaIdentity = ReplicaIdentity.DEFAULT,
              oid: int = 16400, name: str = "t") -> Relation:
    return Relation(None, oid, "public", name, identity, tuple(RelationColumn(int(k), c, t, m) for c, t, m, k in columns))


def test_only_a_change_of_the_relation_content_is_a_schema_change() -> None:
    shapes = RelationShapes()
    base = [("id", INT4, -1, True), ("a", TEXT, -1, False)]
    assert shapes.change(_relation(base)) == "CREATE"
    assert shapes.change(_relation(base)) is None  # sent again (a new connection, an ANALYZE): the same content
    assert shapes.change(_relation([*base, ("b", INT4, -1, False)])) == "ALTER"  # a column added
    assert shapes.change(_relation([("id", INT4, -1, True), ("a", TEXT, -1, False), ("c", INT4, -1, False)])) == "ALTER"  # renamed
    assert shapes.change(_relation([("id", INT4, -1, True), ("a", TEXT, -1, False), ("c", INT8, -1, False)])) == "ALTER"  # retyped
    assert shapes.change(_relation([("id", INT4, -1, True), ("a", 1043, 14, False), ("c", INT8, -1, False)])) == "ALTER"  # typmod
    assert shapes.change(_relation([("id", INT4, -1, True), ("a", 1043, 14, True), ("c", INT8, -1, False)])) == "ALTER"  # key
    current = [("id", INT4, -1, True), ("a", 1043, 14, True), ("c", INT8, -1, False)]
    assert shapes.change(_relation(current, ReplicaIdentity.INDEX)) == "ALTER"  # replica identity
    assert shapes.change(_relation(current, ReplicaIdentity.INDEX, oid=16500)) == "CREATE"  # dropped and created again
    assert shapes.change(_relation(current, ReplicaIdentity.INDEX, oid=16500, name="t2")) == "CREATE"  # renamed table
    known = shapes.entries()
    assert [(s, t, o) for s, t, o, _ in known] == [("public", "t2", 16500)]  # the old name is not kept
    again = RelationShapes(known)  # as the next batch loads it from the state
    assert again.change(_relation(current, ReplicaIdentity.INDEX, oid=16500, name="t2")) is None


def test_the_catalogs_digest_is_the_relation_messages() -> None:
    columns = (ColumnInfo("id", 1, INT4, -1, True, None, False, ""), ColumnInfo("g", 2, INT4, -1, False, None, True, ""),
               ColumnInfo("a", 3, 1043, 14, False, None, False, ""), ColumnInfo("b", 4, TEXT, -1, False, None, False, ""))
    message = [("id", INT4, -1, True), ("a", 1043, 14, False), ("b", TEXT, -1, False)]  # generated columns are not sent
    for identity, keys, info in [
        (ReplicaIdentity.DEFAULT, {"id"}, TableInfo(1, "public", "t", "r", "d", columns, ("id",))),
        (ReplicaIdentity.FULL, {"id", "a", "b"}, TableInfo(1, "public", "t", "r", "f", columns, ("id",))),
        (ReplicaIdentity.INDEX, {"a", "b"}, TableInfo(1, "public", "t", "r", "i", columns, ("id",), ("b", "a"))),
        (ReplicaIdentity.NOTHING, set(), TableInfo(1, "public", "t", "r", "n", columns, ("id",))),
    ]:
        relation = _relation([(c, t, m, c in keys) for c, t, m, _ in message], identity)
        assert relation_message_digest(relation) == table_digest(info), identity


def test_parallel_decoding_refuses_schema_changes() -> None:
    with pytest.raises(ConfigurationError, match=r"sparkcdc\.stream\.decode\.processes=2 .*include\.schema\.changes=true") as raised:
        ConnectorConfig({"database.hostname": "h", "database.user": "u", "database.dbname": "d", "topic.prefix": "srv",
                         "sparkcdc.output.layout": "topic_files", "sparkcdc.stream.decode.processes": "2",
                         "include.schema.changes": "true"})
    assert raised.value.property == "sparkcdc.stream.decode.processes"


def test_a_processor_places_each_record_at_the_change_its_relation_message_came_with() -> None:
    """Without a server: the Relation messages of a TRUNCATE of two tables (both new) go out before
    its records, at its LSN; a change that fails (event.processing.failure.handling.mode=warn) does
    not take its table's record with it."""
    from sparkcdc.catalog import StaticCatalog
    from sparkcdc.engine.batch_reader import process_items
    from sparkcdc.pgoutput.messages import Insert, Truncate

    from .test_streaming_processor import ACCOUNT_COLUMNS, ACCOUNTS, OTHER, TYPES, Stream, _processor, _table
    from .test_streaming_processor import _relation as relation

    catalog = StaticCatalog(TYPES, [_table(ACCOUNTS, "accounts", [("id", INT4, True), ("owner", TEXT, False), ("notes", TEXT, False)]),
                                    _table(OTHER, "other", [("id", INT8, True)])])
    processor = _processor(catalog, **{"include.schema.changes": "true", "skipped.operations": "none"})
    s = Stream()
    items = list(s.transaction(
        900, relation(ACCOUNTS, "accounts", ACCOUNT_COLUMNS), relation(OTHER, "other", [("id", INT8)]), Truncate(None, 0, (ACCOUNTS, OTHER)),
    ))
    records = processor.process_batch(items)
    truncate_lsn = items[3].data_start
    assert [(r.topic, r.op, r.table) for r in records] == [
        ("srv", None, "accounts"), ("srv", None, "other"), ("srv.public.accounts", "t", "accounts"), ("srv.public.other", "t", "other")]
    assert [(r.lsn, r.ordinal) for r in records] == [(truncate_lsn, 0), (truncate_lsn, 1), (truncate_lsn, 2), (truncate_lsn, 3)]
    assert [r.value["source"]["lsn"] for r in records] == [truncate_lsn] * 4

    altered = [("id", INT4), ("owner", TEXT), ("notes", TEXT), ("extra", INT4)]
    catalog.add_table(_table(ACCOUNTS, "accounts", [("id", INT4, True), ("owner", TEXT, False), ("notes", TEXT, False),
                                                    ("extra", INT4, False)]))
    items = list(s.transaction(901, relation(ACCOUNTS, "accounts", altered), Insert(None, ACCOUNTS, ("1", "a", None, "not a number")),
                               Insert(None, ACCOUNTS, ("2", "b", None, "2"))))
    records = process_items(processor, items, "warn")
    assert processor.erroneous_events == 1
    assert [(r.topic, r.op, r.lsn, r.ordinal) for r in records] == [
        ("srv", None, items[2].data_start, 0), ("srv.public.accounts", "c", items[3].data_start, 1)]
    assert records[0].value["tableChanges"][0]["type"] == "ALTER"


# -- a live stream, in micro-batches ------------------------------------------------------------------
def _insert_lsn(db: psycopg.Connection) -> int:
    row = db.execute("SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn").fetchone()
    assert row is not None
    return int(row[0])


def _summary(record: ChangeRecord) -> tuple[Any, ...]:
    """(kind, table, what it says): a schema change's type and columns (name, type, optional), a row's op and id."""
    if record.topic == "srv":
        [change] = record.value["tableChanges"]
        columns = tuple((c["name"], c["typeName"], c["optional"]) for c in change["table"]["columns"])
        return change["type"], record.table, columns
    image = record.value["after"] or record.value["before"]
    return record.op, record.table, image.get("id", image.get("k"))


def _stable(record: ChangeRecord) -> tuple[Any, ...]:
    """A record with the wall-clock fields left out: what a replay must give again."""
    value = dict(record.value)
    value.pop("ts_ms", None), value.pop("ts_us", None), value.pop("ts_ns", None)
    return (record.topic, orjson.dumps(record.key), orjson.dumps(value), record.lsn, record.commit_lsn, record.ordinal, record.op)


def test_ddl_gives_one_record_each_at_its_relation_message(db: psycopg.Connection, pg_cluster: Any, unique_name: str,
                                                           tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s, u = f"s_{unique_name}", f"u_{unique_name}"
    db.execute(f"CREATE TABLE {s} (id int PRIMARY KEY, a text)")
    create_publication(db, unique_name, tables=[("public", s)])
    slot, _ = ensure_slot(db, unique_name)
    config = ConnectorConfig({
        "database.hostname": pg_cluster.host, "database.port": str(pg_cluster.port), "database.user": pg_cluster.user,
        "database.dbname": "postgres", "topic.prefix": "srv", "slot.name": unique_name, "publication.name": unique_name,
        "table.include.list": rf"public\.(s|u)_{unique_name}", "include.schema.changes": "true",
    })
    relations: list[str] = []  # every Relation message the batches' processors saw, by table
    real = tables_module.TableResolver.on_relation

    def seen(self: Any, relation: Relation) -> Any:
        relations.append(relation.name)
        return real(self, relation)

    monkeypatch.setattr(tables_module.TableResolver, "on_relation", seen)
    try:
        # batch 1: the table's first change; ADD COLUMN; an ANALYZE and a SET NOT NULL (Relation
        # messages sent again with the same content)
        db.execute(f"INSERT INTO {s} VALUES (1, 'one')")
        db.execute(f"ALTER TABLE {s} ADD COLUMN b int")
        db.execute(f"INSERT INTO {s} VALUES (2, 'two', 2)")
        db.execute(f"ANALYZE {s}")
        db.execute(f"INSERT INTO {s} VALUES (3, 'three', 3)")
        db.execute(f"ALTER TABLE {s} ALTER COLUMN a SET NOT NULL")
        db.execute(f"INSERT INTO {s} VALUES (4, 'four', 4)")
        middle = _insert_lsn(db)
        # batch 2: an unchanged table at a new batch's start; RENAME, a type change, DROP COLUMN; a new table
        db.execute(f"INSERT INTO {s} VALUES (5, 'five', 5)")
        db.execute(f"ALTER TABLE {s} RENAME COLUMN b TO c")
        db.execute(f"INSERT INTO {s} VALUES (6, 'six', 6)")
        db.execute(f"ALTER TABLE {s} ALTER COLUMN c TYPE bigint")
        db.execute(f"INSERT INTO {s} VALUES (7, 'seven', 7)")
        db.execute(f"ALTER TABLE {s} DROP COLUMN c")
        with db.transaction():
            db.execute(f"INSERT INTO {s} VALUES (8, 'eight')")
            db.execute(f"UPDATE {s} SET a = 'uno' WHERE id = 1")
        db.execute(f"CREATE TABLE {u} (k text PRIMARY KEY)")
        db.execute(f'ALTER PUBLICATION "{unique_name}" ADD TABLE {u}')
        with db.transaction():
            db.execute(f"INSERT INTO {s} VALUES (9, 'nine')")
            db.execute(f"INSERT INTO {u} VALUES ('k1')")
        end = _insert_lsn(db)

        store = StreamStateStore(tmp_path / "state")
        offsets = [SourceOffset(unique_name, "postgres", lsn) for lsn in (slot.confirmed_flush_lsn or 0, middle, end)]
        first = list(read_stream_range(config, offsets[0], offsets[1], run_id="r", state_store=store))
        assert relations == [s] * 4, "the batch's Relation messages: the first change, and after each of the three commands"
        relations.clear()
        second = list(read_stream_range(config, offsets[1], offsets[2], run_id="r", state_store=store))
        assert relations.count(s) >= 4 and relations.count(u) == 1  # the new connection's, and after each DDL

        # NOT NULL comes from the catalog as it is when the batch is read (here: after the SET NOT NULL,
        # which the batches are read after); pgoutput does not carry it.
        not_null = ("id", "int4", False), ("a", "text", False)
        assert [_summary(r) for r in first] == [
            ("CREATE", s, not_null), ("c", s, 1),
            ("ALTER", s, (*not_null, ("b", "int4", True))), ("c", s, 2),
            ("c", s, 3),
            ("c", s, 4),  # SET NOT NULL changes no Relation content: no record of its own
        ]
        assert [_summary(r) for r in second] == [
            ("c", s, 5),  # the new batch knows the table as the last batch left it: no record
            ("ALTER", s, (*not_null, ("c", "int4", True))), ("c", s, 6),
            ("ALTER", s, (*not_null, ("c", "int8", True))), ("c", s, 7),
            ("ALTER", s, not_null), ("c", s, 8), ("u", s, 1),
            ("c", s, 9), ("CREATE", u, (("k", "text", False),)), ("c", u, "k1"),
        ]
        # Each record sits at its Relation message: in the transaction of the change that follows it,
        # at that change's LSN (pgoutput sends the message as it decodes the change), one ordinal before.
        for records in (first, second):
            for record, following in zip(records, records[1:], strict=False):
                if record.topic == "srv":
                    assert following.topic != "srv" and following.table == record.table
                    assert (record.commit_lsn, record.lsn, record.tx_id) == (following.commit_lsn, following.lsn, following.tx_id)
                    assert record.ordinal == following.ordinal - 1
                    source = record.value["source"]
                    assert source == {**following.value["source"]}, "the source block of the row events there"
                    assert (record.op, record.table_schema, record.key) == (None, None, {"databaseName": "postgres"})
                    assert record.value["databaseName"] == "postgres" and record.value["schemaName"] == "public"
                    assert record.value["ddl"] is None
                    assert record.value["tableChanges"][0]["id"] == f'"postgres"."public"."{record.table}"'
        assert [r.ordinal for r in first[:2]] == [0, 1]

        # Read again, each batch gives the same records at the same places (the state is the same).
        assert [_stable(r) for r in read_stream_range(config, offsets[0], offsets[1], run_id="r", state_store=store)] == \
            [_stable(r) for r in first]
        assert [_stable(r) for r in read_stream_range(config, offsets[1], offsets[2], run_id="r", state_store=store)] == \
            [_stable(r) for r in second]

        # The changes layout (typed blocks for apply_changes) carries the row changes only.
        from sparkcdc.spark.outputs.changes.blocks import change_blocks

        with_records = list(change_blocks(second, config))
        rows_only = list(change_blocks([r for r in second if r.topic != "srv"], config))
        assert len(with_records) == len(rows_only) >= 1 and all(a.equals(b) for a, b in zip(with_records, rows_only, strict=True))

        # Without the property nothing changes for the row events, and there are no schema change records.
        plain = ConnectorConfig({**config.raw, "include.schema.changes": "false"})
        rows = list(read_stream_range(plain, offsets[1], offsets[2], run_id="r", state_store=StreamStateStore(tmp_path / "plain")))
        assert [(r.op, r.lsn) for r in rows] == [(r.op, r.lsn) for r in second if r.topic != "srv"]
    finally:
        drop_slot(db, unique_name, wait=30)
        db.execute(f'DROP PUBLICATION IF EXISTS "{unique_name}"')


def _records(local: LocalConnector, count: int) -> list[Any]:
    out: list[Any] = []
    for _ in range(200):
        out += local.poll(0.5)
        if len(out) >= count:
            break
    assert len(out) == count, [(r.topic, r.op) for r in out]
    return out


def _payload(record: Any) -> dict[str, Any]:
    return orjson.loads(record.value)["payload"]


def test_the_snapshot_creates_its_tables_and_streaming_goes_on_from_them(db: psycopg.Connection, pg_cluster: Any,
                                                                         unique_name: str) -> None:
    p, q = f"p_{unique_name}", f"q_{unique_name}"
    db.execute(f"CREATE TABLE {p} (id int PRIMARY KEY, v text NOT NULL DEFAULT 'x')")
    db.execute(f"CREATE TABLE {q} (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, n numeric(8,3))")
    db.execute(f"INSERT INTO {p} SELECT g, 'v' || g FROM generate_series(1, 3) g")
    db.execute(f"INSERT INTO {q} (n) VALUES (1.5), (2.5)")
    config = ConnectorConfig({
        "database.hostname": pg_cluster.host, "database.port": str(pg_cluster.port), "database.user": pg_cluster.user,
        "database.dbname": "postgres", "topic.prefix": "srv", "slot.name": unique_name, "slot.drop.on.stop": "true",
        "publication.name": unique_name, "publication.autocreate.mode": "filtered",
        "table.include.list": f"public.{p},public.{q}", "include.schema.changes": "true",
    })
    with LocalConnector(config) as local:
        snapshot = _records(local, 7)
        assert [(r.topic, r.op) for r in snapshot] == [("srv", None)] + [(f"srv.public.{p}", "r")] * 3 + \
            [("srv", None)] + [(f"srv.public.{q}", "r")] * 2
        create_p, create_q = _payload(snapshot[0]), _payload(snapshot[4])
        assert [(c["type"], c["id"]) for c in create_p["tableChanges"] + create_q["tableChanges"]] == [
            ("CREATE", f'"postgres"."public"."{p}"'), ("CREATE", f'"postgres"."public"."{q}"')]
        assert (create_p["source"]["snapshot"], create_q["source"]["snapshot"]) == ("first", "true")
        assert _payload(snapshot[1])["source"]["snapshot"] == "first"  # the rows' markers are Debezium's, as without
        for create, row in ((snapshot[0], snapshot[1]), (snapshot[4], snapshot[5])):
            assert (create.commit_lsn, create.lsn) == (row.commit_lsn, row.lsn) and create.ordinal < row.ordinal
            assert {k: v for k, v in _payload(create)["source"].items() if k != "snapshot"} == \
                {k: v for k, v in _payload(row)["source"].items() if k != "snapshot"}
        assert [snapshot[0].ordinal, snapshot[4].ordinal] == [-1, (1 << 45) - 1]
        columns = {c["name"]: c for c in create_p["tableChanges"][0]["table"]["columns"] + create_q["tableChanges"][0]["table"]["columns"]}
        assert columns["v"]["defaultValueExpression"] == "'x'::text" and columns["v"]["optional"] is False
        assert columns["n"]["length"] == 8 and columns["n"]["scale"] == 3 and columns["n"]["jdbcType"] == 2
        assert columns["id"]["autoIncremented"] is True and columns["id"]["jdbcType"] == -5  # q's identity column

        # The stream's first Relation messages carry the snapshot's shapes: no record for them.
        db.execute(f"INSERT INTO {p} VALUES (4, 'four')")
        db.execute(f"INSERT INTO {q} (n) VALUES (3.5)")
        assert [(r.topic, r.op) for r in _records(local, 2)] == [(f"srv.public.{p}", "c"), (f"srv.public.{q}", "c")]
        db.execute(f"ALTER TABLE {q} ALTER COLUMN n TYPE numeric(10,3)")
        db.execute(f"INSERT INTO {q} (n) VALUES (4.5)")
        altered = _records(local, 2)
        assert [(r.topic, r.op) for r in altered] == [("srv", None), (f"srv.public.{q}", "c")]
        [change] = _payload(altered[0])["tableChanges"]
        assert change["type"] == "ALTER" and [c["length"] for c in change["table"]["columns"]] == [19, 10]
