"""Debezium's routing transforms against Debezium 3.6.3 itself: the outbox ``EventRouter``,
``ByLogicalTableRouter`` and ``PartitionRouting``, each with the same ``transforms.*`` properties in
both connectors, over rows read by the initial snapshot (``setup``) and changes streamed afterwards
(``workload``).

Records are compared as every differential test compares them (topic, key, value, headers), and
the Kafka partition a transform chose (``ChangeEvent.partition()`` on Debezium's side) as well.
Where Debezium stops the connector on a record (an update of the outbox table under
``table.op.invalid.behavior=fatal``, a truncate, a null routing column, a payload whose inferred
schema does not fit it), sparkcdc must stop too.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .differential import assert_both_stop, run_conformance
from .oracle import OracleRecord, debezium_properties

ROUTER = "io.debezium.transforms.outbox.EventRouter"
MATCHES = "org.apache.kafka.connect.transforms.predicates.TopicNameMatches"


def _router(alias: str = "outbox", **options: str) -> dict[str, str]:
    return {"transforms": alias, f"transforms.{alias}.type": ROUTER,
            **{f"transforms.{alias}.{name.replace('_', '.')}": value for name, value in options.items()}}


def _same_partitions(debezium: list[OracleRecord], ours: list[OracleRecord]) -> None:
    """The partition of each record of each topic, in order, is Debezium's."""
    def partitions(records: list[OracleRecord]) -> dict[str, list[int | None]]:
        out: dict[str, list[int | None]] = {}
        for record in records:
            if not record.topic.startswith("__debezium-heartbeat"):  # Debezium puts heartbeats on partition 0
                out.setdefault(record.topic, []).append(record.partition)
        return out

    assert partitions(ours) == partitions(debezium)


# -- the outbox EventRouter ---------------------------------------------------------------------------

_IDS = [f"{n:08x}-0000-4000-8000-{n:012x}" for n in range(1, 40)]


def _outbox_table(t: str, payload_type: str) -> list[str]:
    return [f"CREATE TABLE {t} (id uuid PRIMARY KEY, aggregatetype varchar(255), aggregateid varchar(255) NOT NULL, "
            f"type varchar(255) NOT NULL, payload {payload_type}, ver int, shard int, note text)",
            f"CREATE TABLE {t}_other (id int PRIMARY KEY, name text)"]


def _insert(t: str, n: int, aggregate: str | None, key: str, kind: str, payload: str | None, ver: int | None = None,
            shard: int | None = None, note: str | None = None, cast: str = "") -> str:
    """An outbox row; ``cast`` is appended to the payload's literal (``::bytea``)."""
    def literal(value: object) -> str:
        return "NULL" if value is None else "'" + str(value).replace("'", "''") + "'"

    def number(value: int | None) -> str:
        return "NULL" if value is None else str(value)

    body = "NULL" if payload is None else literal(payload) + cast
    return (f"INSERT INTO {t} VALUES ('{_IDS[n]}', {literal(aggregate)}, {literal(key)}, {literal(kind)}, {body}, "
            f"{number(ver)}, {number(shard)}, {literal(note)})")


_ORDER = ('{"id": 7, "lines": [{"sku": "a-1", "qty": 2, "price": 9.5}, {"sku": "b-2", "qty": 1, "price": 20.25}], '
          '"customer": {"name": "Ann", "vip": true}, "note": null, "big": 12345678901}')
_CUSTOMER = '{"name": "Bob", "tags": ["x", "y"], "nested": [[1, 2], [3]], "empty": [], "obj": {}}'


def _outbox_rows(t: str, payload_type: str) -> tuple[list[str], list[str]]:
    """(snapshot rows, streamed workload) of an outbox table whose payload column is ``payload_type``."""
    cast = "::bytea" if payload_type == "bytea" else ""
    setup = [_insert(t, 0, "Order", "o-1", "OrderCreated", _ORDER, 1, 0, "first", cast),
             _insert(t, 1, "Customer", "c-1", "CustomerCreated", _CUSTOMER, None, 1, None, cast),
             f"INSERT INTO {t}_other VALUES (1, 'not an outbox row')"]
    odd = "not json" if payload_type == "text" else '{"mixed": [1, "a"]}'  # text the expansion leaves as it is
    workload = [_insert(t, 2, "Order", "o-2", "OrderShipped", '{"id": 8, "lines": []}', 2, 1, "n", cast),
                _insert(t, 3, "Customer", "c-2", "CustomerDeleted", None, 3, None, "", cast),
                # o-3: the version and payload schema of o-1 (an envelope kept per version is used again)
                f"BEGIN; {_insert(t, 4, 'Order', 'o-3', 'OrderCreated', _ORDER, 1, 0, None, cast)}; "
                f"{_insert(t, 5, 'Invoice', 'i-1', 'InvoiceIssued', odd, 4, 0, 'x', cast)}; COMMIT",
                _insert(t, 6, "Invoice", "i-2", "InvoicePaid", "" if payload_type != "jsonb" else "{}", 5, 1, "y", cast),
                # i-3: the version of o-2, another aggregate: its envelope keeps the name o-2 gave it
                _insert(t, 7, "Invoice", "i-3", "InvoiceVoided", '{"id": 9, "lines": []}', 2, 1, "z", cast),
                f"UPDATE {t} SET note = 'updated' WHERE aggregateid = 'o-1'",  # dropped by the router
                f"DELETE FROM {t} WHERE aggregateid = 'c-1'",  # dropped, its tombstone too
                f"INSERT INTO {t}_other VALUES (2, 'still not')"]
    return setup, workload


def _only_outbox(t: str) -> dict[str, str]:
    return {"predicates": "isOutbox", "predicates.isOutbox.type": MATCHES, "predicates.isOutbox.pattern": rf".*\.{t}",
            "transforms.outbox.predicate": "isOutbox"}


OUTBOX: dict[str, tuple[str, Callable[[str], dict[str, str]]]] = {
    # name -> (payload column type, properties)
    "jsonb_defaults": ("jsonb", lambda t: {**_router(), **_only_outbox(t)}),
    "jsonb_expanded_in_an_envelope": ("jsonb", lambda t: {
        **_router(**{"table.expand.json.payload": "true", "table.field.event.schema.version": "ver",
                     "table.fields.additional.placement": "type:header:eventType,note:envelope,ver:ENVELOPE:v,shard:partition,"
                                                          "nothere:header",
                     "table.field.additional.missing": "ignore", "route.tombstone.on.empty.payload": "true",
                     "table.op.invalid.behavior": "error"}), **_only_outbox(t)}),
    "text_expanded_nulls_as_bytes": ("text", lambda t: {
        **_router(**{"table.expand.json.payload": "true", "table.json.payload.null.behavior": "optional_bytes",
                     "route.by.field": "type", "route.topic.regex": "(?<kind>[A-Z][a-z]+)([A-Z].*)",
                     "route.topic.replacement": "events.${kind}.$2", "table.field.event.key": "id",
                     "table.field.event.id": "aggregateid", "table.fields.additional.placement": "aggregatetype:header"}),
        **_only_outbox(t)}),
    "bytea_tombstones": ("bytea", lambda t: {
        **_router(**{"route.tombstone.on.empty.payload": "true", "route.topic.replacement": "fixed_topic",
                     "table.fields.additional.placement": "shard:partition:ignored,aggregatetype:envelope:agg"}), **_only_outbox(t)}),
}


@pytest.mark.parametrize("case", sorted(OUTBOX))
def test_outbox_event_router(debezium_oracle, pg_cluster, db, unique_name: str, case: str) -> None:
    t = f"outbox_{case[:12]}_{unique_name[-3:].strip('_')}"
    payload_type, properties = OUTBOX[case]
    setup, workload = _outbox_rows(t, payload_type)
    debezium, ours = run_conformance(debezium_oracle, pg_cluster, db, unique_name, setup=_outbox_table(t, payload_type) + setup,
                                     tables=[f"public.{t}", f"public.{t}_other"], workload=workload, **properties(t))
    _same_partitions(debezium, ours)
    routed = [r for r in debezium if not r.topic.startswith("test_server.")]
    # the snapshot's two rows and the six streamed inserts; the update and the delete dropped
    assert len(routed) == 8, [str(r) for r in debezium]
    assert any(r.topic.endswith(f"{t}_other") for r in debezium)  # the predicate kept other tables' rows as they are


FAILING: dict[str, tuple[Callable[[str], dict[str, str]], Callable[[str, int], list[str]], str, str]] = {
    # name -> (properties, the failing change, Debezium's words, sparkcdc's words)
    "update_fatal": (
        lambda t: _router(**{"table.op.invalid.behavior": "fatal"}),
        lambda t, n: [_insert(t, 10 + n, "Order", f"o-{n}", "K", "{}"), f"UPDATE {t} SET note = 'x' WHERE aggregateid = 'o-{n}'"],
        "Unexpected update message received", "UPDATE of the outbox table",
    ),
    "truncate": (
        lambda t: {**_router(), "skipped.operations": "none"},
        lambda t, n: [f"TRUNCATE {t}"],
        "Only Struct objects supported for [Read Outbox Event], found: null", "no row to route",
    ),
    "null_route": (
        lambda t: _router(),
        lambda t, n: [_insert(t, 10 + n, None, f"o-{n}", "K", "{}")],  # type: ignore[arg-type]
        "because \"this.text\" is null", "route.by.field: column 'aggregatetype' is null",
    ),
    "envelope_version_kept": (
        lambda t: _router(**{"table.expand.json.payload": "true", "table.field.event.schema.version": "ver",
                             "table.fields.additional.placement": "note:envelope"}),
        lambda t, n: [_insert(t, 10 + n, "Order", f"o-{n}", "K", '{"a": 1}', 7), _insert(t, 20 + n, "Order", f"p-{n}", "K", '{"b": 1}', 7)],
        "Struct schemas do not match", "the envelope of version 7 was made for another payload schema",
    ),
    "partition_path_through_null": (
        lambda t: _routing(**{"partition.payload.fields": "after.aggregateid", "partition.topic.num": "3"}),
        lambda t, n: [_insert(t, 10 + n, "Order", f"o-{n}", "K", "{}"), f"DELETE FROM {t} WHERE aggregateid = 'o-{n}'"],
        "Unprocessable message", "after.aggregateid reads into after, which is null",
    ),
    "array_payload": (
        lambda t: _router(**{"table.expand.json.payload": "true"}),
        lambda t, n: [_insert(t, 10 + n, "Order", f"o-{n}", "K", "[1, 2]")],
        "Invalid type for ARRAY", "the payload is a JSON array",
    ),
}


@pytest.mark.parametrize("case", sorted(FAILING))
def test_routing_stops_where_debezium_stops(debezium_oracle, pg_cluster, db, unique_name: str, case: str) -> None:
    t = f"outbox_fail_{case}"
    properties, failing, theirs_words, our_words = FAILING[case]
    for statement in _outbox_table(t, "jsonb")[:1]:
        db.execute(statement)
    dbz_props = debezium_properties(pg_cluster, slot=f"{unique_name}_d", publication=f"{unique_name}_d", tables=[f"public.{t}"],
                                    **properties(t))

    def change(run: int) -> None:
        for statement in failing(t, run):
            db.execute(statement)

    assert_both_stop(debezium_oracle, db, dbz_props, unique_name, change, theirs_words, our_words)


# -- PartitionRouting ---------------------------------------------------------------------------------

PARTITION_ROUTING = "io.debezium.transforms.partitions.PartitionRouting"


def _routing(**options: str) -> dict[str, str]:
    return {"transforms": "p", "transforms.p.type": PARTITION_ROUTING,
            **{f"transforms.p.{name}": value for name, value in options.items()}}


def _routed_table(t: str) -> list[str]:
    return [f"CREATE TABLE {t} (id int PRIMARY KEY, name text, big bigint, price numeric(10,2), flag boolean, "
            "note text DEFAULT 'dflt', ts timestamp, data bytea, tags text[])",
            f"INSERT INTO {t} SELECT g, 'name ' || g, g::bigint * 1000000007, g * 1.25, g % 2 = 0, CASE WHEN g % 3 = 0 THEN NULL "
            f"ELSE 'n' || g END, '2024-01-01'::timestamp + g * interval '1 hour', int4send(g), ARRAY['t' || g, NULL] "
            "FROM generate_series(1, 40) g"]


def _routed_workload(t: str) -> list[str]:
    return [f"INSERT INTO {t} SELECT g, 'new ' || g, -g, -g * 0.5, NULL, NULL, NULL, NULL, NULL FROM generate_series(100, 130) g",
            f"UPDATE {t} SET name = 'renamed', note = NULL WHERE id % 7 = 0",
            f"DELETE FROM {t} WHERE id % 5 = 0",  # before holds the key only: change.<other> is left out
            f"INSERT INTO {t} (id, name) VALUES (-1, 'héllo ✓ \U0001F600')"]


PARTITIONS = {
    "java": lambda t: _routing(**{"partition.payload.fields": "change.name,change.big,change.price,change.flag,source.table",
                                  "partition.topic.num": "5"}),
    "murmur": lambda t: _routing(**{"partition.payload.fields": "change.id,change.note,change.ts,change.data,change.tags,op",
                                    "partition.topic.num": "7", "partition.hash.function": "murmur"}),
    "java_with_predicate": lambda t: {**_routing(**{"partition.payload.fields": "change.note,change.id", "partition.topic.num": "3",
                                                    "predicate": "isTable"}),
                                      "predicates": "isTable", "predicates.isTable.type": MATCHES, "predicates.isTable.pattern": rf".*\.{t}"},
}


@pytest.mark.parametrize("case", sorted(PARTITIONS))
def test_partition_routing(debezium_oracle, pg_cluster, db, unique_name: str, case: str) -> None:
    t = f"routed_{case}"
    debezium, ours = run_conformance(debezium_oracle, pg_cluster, db, unique_name, setup=_routed_table(t), tables=[f"public.{t}"],
                                     workload=_routed_workload(t), **PARTITIONS[case](t))
    _same_partitions(debezium, ours)
    chosen = [r.partition for r in debezium if r.topic.endswith(t) and not r.is_tombstone]
    assert len(chosen) > 80 and None not in chosen and len(set(chosen)) > 1, chosen  # snapshot and stream both routed


# -- ByLogicalTableRouter ------------------------------------------------------------------------------

LOGICAL = "io.debezium.transforms.ByLogicalTableRouter"


def _logical(**options: str) -> dict[str, str]:
    return {"transforms": "r", "transforms.r.type": LOGICAL, **{f"transforms.r.{name}": value for name, value in options.items()}}


def _shards(t: str) -> list[str]:
    return [f"CREATE TABLE {t}_shard1 (id int PRIMARY KEY, name text, amount numeric(8,2))",
            f"CREATE TABLE {t}_shard2 (id int PRIMARY KEY, name text, amount numeric(8,2))",
            f"CREATE TABLE {t}_shardless (id int, name text, amount numeric(8,2))",  # no key: keys stay null
            f"CREATE TABLE {t}_other (id int PRIMARY KEY, name text)",
            f"INSERT INTO {t}_shard1 VALUES (1, 'a', 1.5), (2, 'b', NULL)",
            f"INSERT INTO {t}_shard2 VALUES (1, 'c', 2.5)",
            f"INSERT INTO {t}_shardless VALUES (1, 'k', 0)",
            f"INSERT INTO {t}_other VALUES (1, 'o')"]


def _shard_workload(t: str) -> list[str]:
    return [f"INSERT INTO {t}_shard2 VALUES (2, 'd', 3)",
            f"BEGIN; INSERT INTO {t}_shard1 VALUES (3, 'e', 4); UPDATE {t}_shard2 SET name = 'x' WHERE id = 1; COMMIT",
            f"UPDATE {t}_shard1 SET id = 10 WHERE id = 1",  # a key change: delete, tombstone, create
            f"DELETE FROM {t}_shard2 WHERE id = 2",
            f"INSERT INTO {t}_shardless VALUES (2, 'l', 1)",
            f"INSERT INTO {t}_other VALUES (2, 'p')"]


LOGICAL_CASES = {
    "defaults": lambda t: _logical(**{"topic.regex": rf"(.*){t}_shard(.*)", "topic.replacement": f"$1{t}_all"}),
    "key_field_from_regex": lambda t: _logical(**{"topic.regex": rf"(?<head>.*){t}_shard(.*)",
                                                  "topic.replacement": f"${{head}}{t}_all", "key.field.name": "shard",
                                                  "key.field.regex": rf".*{t}_(shard.*)", "key.field.replacement": "id-$1",
                                                  "logical.table.cache.size": "1"}),
    "no_key_field_avro_names": lambda t: {**_logical(**{"topic.regex": rf"(.*){t}_shard(.*)", "topic.replacement": f"$1{t}-all",
                                                        "key.enforce.uniqueness": "false", "schema.name.adjustment.mode": "avro"}),
                                          "topic.prefix": "my-server", "provide.transaction.metadata": "true"},
}


@pytest.mark.parametrize("case", sorted(LOGICAL_CASES))
def test_by_logical_table_router(debezium_oracle, pg_cluster, db, unique_name: str, case: str) -> None:
    t = f"lt_{case[:8]}"
    debezium, _ = run_conformance(debezium_oracle, pg_cluster, db, unique_name, setup=_shards(t),
                                  tables=[f"public.{t}_shard1", f"public.{t}_shard2", f"public.{t}_shardless", f"public.{t}_other"],
                                  workload=_shard_workload(t), **LOGICAL_CASES[case](t))
    logical = [r for r in debezium if r.topic.endswith(f"{t}_all") or r.topic.endswith(f"{t}-all")]
    # the snapshot's four rows and the stream's changes of three tables, tombstones included, in one topic
    assert len(logical) >= 12 and any(r.is_tombstone for r in logical) and any(r.key is None for r in logical), logical
    assert any(r.topic.endswith(f"{t}_other") for r in debezium)


def test_partition_routing_lands_on_debezium_s_partitions_in_kafka(
    debezium_oracle, pg_cluster, db, spark, kafka_broker: str, unique_name: str, tmp_path
) -> None:
    """The kafka layout (reader tasks producing to a Kafka-protocol broker, Tansu) puts each record
    PartitionRouting routed on the partition Debezium chose for it: the snapshot (several chunks,
    several producing tasks) and the stream."""
    import json

    from sparkcdc.debezium.config import ConnectorConfig
    from sparkcdc.spark.outputs.kafka.task_commits import ReaderKafkaBatchWriter
    from sparkcdc.spark.outputs.kafka.task_producer import kafka_link

    from ..spark.test_kafka_sink import consume, run_available_now
    from .differential import END_PREFIX, _ends, _until_end

    # a table (so topic) of its own: the session's broker keeps the topics of the run on the other major
    t = f"routed_kafka_{unique_name.rsplit('_', 1)[-1]}"
    for statement in _routed_table(t) + [f"INSERT INTO {t} (id, name) SELECT g, 'more ' || g FROM generate_series(1001, 1260) g",
                                         f"ANALYZE {t}"]:
        db.execute(statement)
    routing = _routing(**{"partition.payload.fields": "change.id,change.name", "partition.topic.num": "4",
                          "partition.hash.function": "murmur"})
    dbz_props = debezium_properties(pg_cluster, slot=f"{unique_name}_d", publication=f"{unique_name}_d", tables=[f"public.{t}"],
                                    **routing)
    with debezium_oracle.run(dbz_props) as debezium:
        debezium.wait_streaming()
        for statement in _routed_workload(t):
            db.execute(statement)
        db.execute("SELECT pg_logical_emit_message(true, %s, 'x')", (END_PREFIX,))
        theirs = _until_end(debezium.wait_for(_ends, timeout=120))

    ours_props = {**dbz_props, "slot.name": f"{unique_name}_s", "publication.name": f"{unique_name}_s", "slot.drop.on.stop": "false",
                  "sparkcdc.state.location": str(tmp_path / "state"), "sparkcdc.snapshot.chunk.rows": "60",
                  "sparkcdc.output.layout": "kafka", "sparkcdc.output.kafka.bootstrap.servers": kafka_broker,
                  "sparkcdc.output.kafka.topic.partitions": "4", "sparkcdc.output.kafka.timeout.ms": "20000"}
    # the rows the stream changed are back as they were for the snapshot, then changed again
    db.execute(f"DROP TABLE {t}")
    for statement in _routed_table(t) + [f"INSERT INTO {t} (id, name) SELECT g, 'more ' || g FROM generate_series(1001, 1260) g"]:
        db.execute(statement)
    writer = ReaderKafkaBatchWriter(kafka_link(ConnectorConfig(ours_props)))
    checkpoint = tmp_path / "checkpoint"

    def run() -> None:
        run_available_now(spark.readStream.format("postgres-cdc").options(**ours_props).load().writeStream.foreachBatch(writer),
                          checkpoint)

    try:
        run()  # the snapshot
        for statement in _routed_workload(t):
            db.execute(statement)
        run()  # the stream
    finally:
        db.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s", (f"{unique_name}_s",))
        db.execute(f'DROP PUBLICATION IF EXISTS "{unique_name}_s"')

    def where(key: str | bytes | None, value: str | bytes | None, partition: int | None) -> tuple[int, str, int | None]:
        payload = None if value is None else json.loads(value)["payload"]
        return json.loads(key)["payload"]["id"], "tombstone" if payload is None else payload["op"], partition  # type: ignore[arg-type]

    expected = sorted(where(r.raw_key, r.raw_value, r.partition) for r in theirs if r.topic == f"test_server.public.{t}")
    produced = sorted(where(r["key"], r["value"], r["partition"]) for r in consume(kafka_broker, [f"test_server.public.{t}"]))
    tombstones = [(key, op) for key, op, _ in expected if op == "tombstone"]
    assert tombstones and len(expected) > 300
    # A tombstone keeps the partition the producer's partitioner chooses (Debezium: none chosen), as its delete's key
    assert [r for r in produced if r[1] != "tombstone"] == [r for r in expected if r[1] != "tombstone"]
    assert sorted((key, op) for key, op, _ in produced if op == "tombstone") == sorted(tombstones)
    assert len({partition for _, _, partition in produced}) == 4
