"""Outbox events read back as a typed Spark frame: sparkcdc writes an outbox table's events with the
EventRouter (``table.expand.json.payload=true``) to topic files, snapshot and stream, and
``outbox_events`` types them from the Connect schemas the records carry, with a real SparkSession."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg
import pytest

from sparkcdc.spark.outbox import OutboxSchemaError, outbox_events
from sparkcdc.spark.runner import run_pipeline

from .support import properties

ROUTER = "io.debezium.transforms.outbox.EventRouter"
MATCHES = "org.apache.kafka.connect.transforms.predicates.TopicNameMatches"


def _insert(table: str, n: int, aggregate: str, key: str, payload: str | None, note: str | None = None) -> str:
    body = "NULL" if payload is None else "'" + payload.replace("'", "''") + "'"
    return (f"INSERT INTO {table} VALUES ('{n:08x}-0000-4000-8000-{n:012x}', '{aggregate}', '{key}', 'Created', {body}, "
            f"{'NULL' if note is None else repr(note)})")


def test_outbox_events_are_a_typed_frame(spark: Any, db: psycopg.Connection, pg_cluster: Any, unique_name: str, tmp_path: Path) -> None:
    plain, wrapped = f"ob_{unique_name}", f"obe_{unique_name}"
    for table in (plain, wrapped):
        db.execute(f"CREATE TABLE {table} (id uuid PRIMARY KEY, aggregatetype text NOT NULL, aggregateid text NOT NULL, "
                   "type text NOT NULL, payload jsonb, note text)")
    order = ('{"id": 7, "lines": [{"sku": "a-1", "qty": 2, "price": 9.5}], "customer": {"name": "Ann", "vip": true}, '
             '"big": 12345678901, "placed": "2024-01-02"}')
    db.execute(_insert(plain, 1, "Order", "o-1", order))
    db.execute(_insert(plain, 2, "Order", "o-2", '{"id": 8, "lines": [], "customer": {"name": null, "vip": false}, "note": null}'))
    db.execute(_insert(wrapped, 3, "Invoice", "i-1", '{"total": 1.25}', note="first"))
    router = {"type": ROUTER, "table.expand.json.payload": "true", "table.fields.additional.placement": "type:header:eventType"}
    props = properties(pg_cluster, unique_name, [f"public.{plain}", f"public.{wrapped}"], **{
        "topic.prefix": unique_name, "transforms": "plain,wrapped", "predicates": "isPlain,isWrapped",
        **{f"transforms.plain.{k}": v for k, v in router.items()}, "transforms.plain.predicate": "isPlain",
        **{f"transforms.wrapped.{k}": v for k, v in router.items()}, "transforms.wrapped.predicate": "isWrapped",
        "transforms.wrapped.table.fields.additional.placement": "note:envelope,type:header:eventType",
        "predicates.isPlain.type": MATCHES, "predicates.isPlain.pattern": rf".*\.{plain}",
        "predicates.isWrapped.type": MATCHES, "predicates.isWrapped.pattern": rf".*\.{wrapped}",
    })
    output, checkpoint = tmp_path / "topics", tmp_path / "checkpoint"
    try:
        run_pipeline(props, output=output, checkpoint=checkpoint, once=True)  # the snapshot
        db.execute(_insert(plain, 4, "Order", "o-3", '{"id": 9, "lines": [{"sku": "b", "qty": 1, "price": 2.0}], "extra": [1, 2]}'))
        db.execute(_insert(plain, 5, "Order", "o-4", None))
        db.execute(_insert(wrapped, 6, "Invoice", "i-2", '{"total": 3.5}', note=None))
        run_pipeline(props, output=output, checkpoint=checkpoint, once=True)  # the stream
    finally:
        db.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s AND NOT active",
                   (unique_name,))

    orders = outbox_events(spark.read.text(str(output / "outbox.event.Order")))
    assert orders.columns == ["topic", "key", "event_id", "payload", "headers", "lsn", "commit_lsn", "ordinal"]
    payload_type = orders.schema["payload"].dataType.simpleString()
    # the shapes of every event merged (jsonb orders an object's keys shortest first): fields some events
    # leave out (their nulls, empty arrays) are null in the others
    assert payload_type == ("struct<id:int,big:bigint,lines:array<struct<qty:int,sku:string,price:double>>,placed:string,"
                            "customer:struct<vip:boolean,name:string>,extra:array<int>>"), payload_type
    rows = {row["key"]: row for row in orders.collect()}
    assert sorted(rows) == ["o-1", "o-2", "o-3", "o-4"]
    first = rows["o-1"]
    assert (first["topic"], first["event_id"]) == ("outbox.event.Order", "00000001-0000-4000-8000-000000000001")
    assert first["payload"].asDict(recursive=True) == {
        "id": 7, "lines": [{"sku": "a-1", "qty": 2, "price": 9.5}], "customer": {"name": "Ann", "vip": True},
        "big": 12345678901, "placed": "2024-01-02", "extra": None}
    assert rows["o-2"]["payload"]["customer"].asDict() == {"name": None, "vip": False}
    assert rows["o-3"]["payload"]["extra"] == [1, 2] and rows["o-3"]["payload"]["customer"] is None
    assert rows["o-4"]["payload"] is None  # no payload: a null one
    assert json.loads(dict((h["name"], h["value"]) for h in first["headers"])["eventType"])["payload"] == "Created"
    assert first["lsn"] is not None and rows["o-3"]["commit_lsn"] > first["commit_lsn"]

    invoices = outbox_events(spark.read.text(str(output / "outbox.event.Invoice")))
    assert invoices.columns == ["topic", "key", "event_id", "payload", "note", "headers", "lsn", "commit_lsn", "ordinal"]
    got = sorted((row["key"], row["payload"]["total"], row["note"]) for row in invoices.collect())
    assert got == [("i-1", 1.25, "first"), ("i-2", 3.5, None)]


def test_incompatible_payloads_are_refused_naming_the_field(spark: Any, tmp_path: Path) -> None:
    def line(payload_schema: dict[str, Any], payload: Any, ordinal: int) -> str:
        value = json.dumps({"schema": payload_schema, "payload": payload})
        key = json.dumps({"schema": {"type": "string", "optional": False}, "payload": "k"})
        return json.dumps({"key": key, "value": value, "headers": [], "lsn": 1, "commit_lsn": 1, "ordinal": ordinal})

    struct_schema = {"type": "struct", "fields": [{"type": "int32", "optional": True, "field": "a"}], "optional": True, "name": "payload"}
    text_schema = {"type": "string", "optional": True, "name": "io.debezium.data.Json", "version": 1}
    topic = tmp_path / "outbox.event.X"
    topic.mkdir()
    (topic / "part-0000000000-00000.jsonl").write_text(line(struct_schema, {"a": 1}, 0) + "\n" + line(text_schema, "not json", 1) + "\n")
    with pytest.raises(OutboxSchemaError, match=r"value has two incompatible types: struct \(payload\) and string \(io.debezium.data.Json\)"):
        outbox_events(spark.read.text(str(topic)))
    # with the schema given, the struct events are typed (the text one reads as null)
    typed = outbox_events(spark.read.text(str(topic)).limit(1), value_schema=json.dumps(struct_schema))
    assert [row["payload"]["a"] for row in typed.collect()] == [1]
