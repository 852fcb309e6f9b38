"""The streaming processor without a server: pgoutput bytes made by the encoder, a static catalog.

The connector's logic is pure (see the import contract in ``.importlinter``): a stream of
:class:`WalMessage` items and a :class:`~sparkcdc.catalog.CatalogLookup` are all it needs. Each
message here is built as a dataclass, encoded by :mod:`sparkcdc.pgoutput.encoder` and decoded by
the real decoder, as the replication reader would hand it over.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from sparkcdc.catalog import ColumnInfo, StaticCatalog, TableInfo, TypeInfo
from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.debezium.events import EventFactory
from sparkcdc.debezium.records import ChangeRecord
from sparkcdc.debezium.serialization import JsonSerializer
from sparkcdc.debezium.table import TableSchemaFactory
from sparkcdc.engine.core.errors import UnexpectedMessageError
from sparkcdc.engine.core.filters import TableFilter
from sparkcdc.engine.core.streaming import StreamingProcessor
from sparkcdc.engine.core.tables import TableResolver
from sparkcdc.pgoutput import Decoder, WalMessage, encode
from sparkcdc.pgoutput.messages import (
    UNCHANGED_TOAST,
    Begin,
    BeginPrepare,
    Commit,
    Delete,
    Insert,
    LogicalMessage,
    Origin,
    Relation,
    RelationColumn,
    ReplicaIdentity,
    StreamStart,
    Truncate,
    TypeMessage,
    Update,
)

INT4, INT8, TEXT = 23, 20, 25
TYPES = [
    TypeInfo(INT4, "int4", "pg_catalog", "b", "N", 0, 0, -1, 1007, False, None),
    TypeInfo(INT8, "int8", "pg_catalog", "b", "N", 0, 0, -1, 1016, False, None),
    TypeInfo(TEXT, "text", "pg_catalog", "b", "S", 0, 0, -1, 1009, False, None),
]
ACCOUNTS, OTHER = 16401, 16402
CLOCK_NS = 1_700_000_000_000_000_000


def _table(oid: int, name: str, columns: list[tuple[str, int, bool]], key: tuple[str, ...] = ("id",)) -> TableInfo:
    infos = tuple(ColumnInfo(c, i + 1, t, -1, nn, None, False, "") for i, (c, t, nn) in enumerate(columns))
    return TableInfo(oid, "public", name, "r", "d", infos, key)


def _relation(oid: int, name: str, columns: list[tuple[str, int]], key: tuple[str, ...] = ("id",)) -> Relation:
    cols = tuple(RelationColumn(1 if c in key else 0, c, t, -1) for c, t in columns)
    return Relation(None, oid, "public", name, ReplicaIdentity.DEFAULT, cols)


class Stream:
    """Builds WAL messages: encoded, decoded, placed at increasing LSNs."""

    def __init__(self) -> None:
        self.decoder = Decoder(1)
        self.lsn = 0x1000000

    def __call__(self, message: Any) -> WalMessage:
        self.lsn += 0x100
        return WalMessage(self.lsn, self.lsn, 0, self.decoder.decode(encode(message)))

    def transaction(self, xid: int, *messages: Any) -> Iterator[WalMessage]:
        """BEGIN, the messages, COMMIT; the commit's LSNs follow the messages'."""
        final = self.lsn + 0x100 * (len(messages) + 2)
        yield self(Begin(final, 1_700_000_000_000_000 + xid, xid))
        for message in messages:
            yield self(message)
        yield self(Commit(0, final, final + 0x28, 1_700_000_000_000_000 + xid))


@pytest.fixture
def catalog() -> StaticCatalog:
    return StaticCatalog(TYPES, [
        _table(ACCOUNTS, "accounts", [("id", INT4, True), ("owner", TEXT, False), ("notes", TEXT, False)]),
        _table(OTHER, "other", [("id", INT8, True)]),
    ])


def _processor(catalog: StaticCatalog, **properties: str) -> StreamingProcessor:
    config = ConnectorConfig({
        "database.hostname": "unused", "database.user": "unused", "database.dbname": "shop", "topic.prefix": "srv",
        "table.include.list": "public.accounts,public.other", **properties,
    })
    factory = TableSchemaFactory(config)
    events = EventFactory(config, "shop", factory.topics, clock_ns=lambda: CLOCK_NS)
    events.set_run_id("run-1")
    return StreamingProcessor(config, TableResolver(catalog, factory, TableFilter(config)), events)


def _json(records: list[ChangeRecord]) -> list[tuple[str, Any, Any]]:
    """(topic, key payload, value payload) of each record, as a consumer reads them."""
    serializer = JsonSerializer()
    out = []
    for record in records:
        key, value, _ = serializer.record(record)
        out.append((
            record.topic,
            None if key is None else orjson.loads(key)["payload"],
            None if value is None else orjson.loads(value)["payload"],
        ))
    return out


ACCOUNT_COLUMNS = [("id", INT4), ("owner", TEXT), ("notes", TEXT)]


def test_insert_update_delete_and_tombstone(catalog: StaticCatalog) -> None:
    processor = _processor(catalog)
    s = Stream()
    items = [s(_relation(ACCOUNTS, "accounts", ACCOUNT_COLUMNS)), *s.transaction(
        700,
        Insert(None, ACCOUNTS, ("1", "ann", "n1")),
        Update(None, ACCOUNTS, None, None, ("1", "ann", "n2")),
        Delete(None, ACCOUNTS, "K", ("1", None, None)),
    )]
    records = processor.process_batch(items)
    rows = _json(records)
    assert [r.op for r in records] == ["c", "u", "d", None]
    assert rows[0] == ("srv.public.accounts", {"id": 1}, rows[0][2])
    assert rows[0][2]["after"] == {"id": 1, "owner": "ann", "notes": "n1"} and rows[0][2]["op"] == "c"
    assert rows[1][2]["before"] is None and rows[1][2]["after"]["notes"] == "n2"
    assert rows[2][2]["before"] == {"id": 1, "owner": None, "notes": None} and rows[2][2]["after"] is None
    assert rows[3] == ("srv.public.accounts", {"id": 1}, None)  # the tombstone
    source = rows[0][2]["source"]
    commit = items[-1].message
    assert source["txId"] == 700 and source["lsn"] == items[2].data_start and source["db"] == "shop"
    assert source["sequence"] == f'[null,"{items[2].data_start}"]'  # no commit seen before this one
    assert all(r.commit_lsn == commit.commit_lsn for r in records)
    assert [r.ordinal for r in records] == [0, 1, 2, 3]
    assert processor.last_commit_lsn == commit.end_lsn and not processor.in_transaction


def test_sequence_carries_the_previous_commit(catalog: StaticCatalog) -> None:
    processor = _processor(catalog)
    s = Stream()
    first = [s(_relation(OTHER, "other", [("id", INT8)])), *s.transaction(1, Insert(None, OTHER, ("1",)))]
    processor.process_batch(first)
    second = list(s.transaction(2, Insert(None, OTHER, ("2",))))
    (row,) = _json(processor.process_batch(second))
    assert row[2]["source"]["sequence"] == f'["{first[-1].message.end_lsn}","{second[1].data_start}"]'


def test_primary_key_change_is_delete_tombstone_create_with_headers(catalog: StaticCatalog) -> None:
    processor = _processor(catalog)
    s = Stream()
    items = [s(_relation(ACCOUNTS, "accounts", ACCOUNT_COLUMNS)), *s.transaction(
        701, Update(None, ACCOUNTS, "K", ("1", None, None), ("5", "ann", "n")),
    )]
    records = processor.process_batch(items)
    assert [(r.op, r.key.get("id") if r.key else None) for r in records] == [("d", 1), (None, 1), ("c", 5)]
    assert [h.name for h in records[0].headers][0] == "__debezium.newkey"
    assert [h.name for h in records[2].headers][0] == "__debezium.oldkey"


def test_unchanged_toast_keeps_the_placeholder(catalog: StaticCatalog) -> None:
    processor = _processor(catalog)
    s = Stream()
    items = [s(_relation(ACCOUNTS, "accounts", ACCOUNT_COLUMNS)), *s.transaction(
        702, Update(None, ACCOUNTS, None, None, ("1", "bob", UNCHANGED_TOAST)),
    )]
    (row,) = _json(processor.process_batch(items))
    assert row[2]["after"] == {"id": 1, "owner": "bob", "notes": "__debezium_unavailable_value"}


def test_truncate_messages_origin_and_types(catalog: StaticCatalog) -> None:
    processor = _processor(catalog, **{"skipped.operations": "none"})
    s = Stream()
    items = [
        s(_relation(ACCOUNTS, "accounts", ACCOUNT_COLUMNS)), s(_relation(OTHER, "other", [("id", INT8)])),
        s(TypeMessage(None, 99999, "public", "mood")),
        *s.transaction(
            703, Origin(0x55, "upstream"), Truncate(None, 0, (ACCOUNTS, OTHER)),
            LogicalMessage(None, 1, 0, "audit", b"inside"),
        ),
    ]
    records = processor.process_batch(items)
    assert [(r.op, r.table) for r in records] == [("t", "accounts"), ("t", "other"), ("m", "")]
    rows = _json(records)
    assert rows[0][1] is None  # Debezium's truncate has no key
    message = rows[2][2]
    assert message["message"] == {"prefix": "audit", "content": "aW5zaWRl"}
    assert rows[2][1] == {"prefix": "audit"} and message["source"]["txId"] == 703
    at = s.lsn + 1
    outside = processor.process(s(LogicalMessage(None, 0, at, "beat", b"")))
    assert [r.op for r in outside] == ["m"] and processor.last_commit_lsn == at


def test_transaction_metadata_begin_and_end(catalog: StaticCatalog) -> None:
    processor = _processor(catalog, **{"provide.transaction.metadata": "true"})
    s = Stream()
    items = [s(_relation(ACCOUNTS, "accounts", ACCOUNT_COLUMNS)), s(_relation(OTHER, "other", [("id", INT8)])), *s.transaction(
        704, Insert(None, ACCOUNTS, ("1", "a", None)), Insert(None, OTHER, ("9",)), Insert(None, ACCOUNTS, ("2", "b", None)),
    )]
    rows = _json(processor.process_batch(items))
    topics = [r[0] for r in rows]
    assert topics == ["srv.transaction", "srv.public.accounts", "srv.public.other", "srv.public.accounts", "srv.transaction"]
    begin, end = rows[0][2], rows[-1][2]
    assert begin["status"] == "BEGIN" and end["status"] == "END" and end["event_count"] == 3
    assert sorted((c["data_collection"], c["event_count"]) for c in end["data_collections"]) == [
        ("public.accounts", 2), ("public.other", 1)]
    assert [r[2]["transaction"]["data_collection_order"] for r in rows[1:4]] == [1, 1, 2]
    assert [r[2]["transaction"]["total_order"] for r in rows[1:4]] == [1, 2, 3]


def test_a_transaction_without_captured_changes_has_no_metadata(catalog: StaticCatalog) -> None:
    processor = _processor(catalog, **{"provide.transaction.metadata": "true"})
    s = Stream()
    assert processor.process_batch(list(s.transaction(705))) == []


def test_relation_change_mid_stream_changes_the_schema(catalog: StaticCatalog) -> None:
    """ALTER TABLE ADD COLUMN between two transactions: a new Relation message, new fields."""
    processor = _processor(catalog)
    s = Stream()
    before = processor.process_batch([s(_relation(OTHER, "other", [("id", INT8)])), *s.transaction(706, Insert(None, OTHER, ("1",)))])
    catalog.add_table(_table(OTHER, "other", [("id", INT8, True), ("label", TEXT, False)]))
    after = processor.process_batch([
        s(_relation(OTHER, "other", [("id", INT8), ("label", TEXT)])), *s.transaction(707, Insert(None, OTHER, ("2", "two"))),
    ])
    (first,), (second,) = _json(before), _json(after)
    assert first[2]["after"] == {"id": 1}
    assert second[2]["after"] == {"id": 2, "label": "two"}
    fields = [f["field"] for f in after[0].value_schema.to_json()["fields"][1]["fields"]]  # the after struct
    assert fields == ["id", "label"]


def test_tables_outside_the_filter_give_nothing(catalog: StaticCatalog) -> None:
    catalog.add_table(_table(16403, "secret", [("id", INT4, True)]))
    processor = _processor(catalog)
    s = Stream()
    items = [s(_relation(16403, "secret", [("id", INT4)])), *s.transaction(708, Insert(None, 16403, ("1",)))]
    assert processor.process_batch(items) == []


def test_data_before_its_relation_and_unexpected_messages_fail_clearly(catalog: StaticCatalog) -> None:
    processor = _processor(catalog)
    s = Stream()
    with pytest.raises(LookupError, match=f"relation OID {ACCOUNTS}"):
        processor.process_batch(list(s.transaction(709, Insert(None, ACCOUNTS, ("1", "a", None)))))
    with pytest.raises(UnexpectedMessageError, match="StreamStart"):  # protocol v2: decoded by a v2 decoder only
        _processor(catalog).process(WalMessage(s.lsn, s.lsn, 0, StreamStart(710, True)))
    with pytest.raises(UnexpectedMessageError, match="created with two_phase"):  # decoded under v1 too
        _processor(catalog).process(s(BeginPrepare(0x2000, 0x2100, 1, 711, "gid-1")))
    with pytest.raises(UnexpectedMessageError, match="outside a transaction"):
        _processor(catalog).process(s(Insert(None, ACCOUNTS, ("1", "a", None))))
    with pytest.raises(UnexpectedMessageError, match="BEGIN of xid 712 inside transaction 711"):
        fresh = _processor(catalog)
        fresh.process(s(Begin(1, 1, 711)))
        fresh.process(s(Begin(2, 2, 712)))
