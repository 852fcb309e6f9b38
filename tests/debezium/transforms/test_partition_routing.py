"""Debezium's PartitionRouting on records shaped as sparkcdc's connector makes them; the expected
partitions are Debezium 3.6.3's for the same values (printed by its JVM)."""

from __future__ import annotations

from typing import Any

import pytest

from sparkcdc.debezium.connect import int32, int64, string, struct
from sparkcdc.debezium.records import ChangeRecord
from sparkcdc.debezium.schemas import envelope_schema
from sparkcdc.debezium.transforms import TransformConfigError, transform_chain
from sparkcdc.debezium.transforms.base import RecordError

ROUTING = "io.debezium.transforms.partitions.PartitionRouting"
ROW = struct([("id", int32()), ("x", int32(optional=True)), ("s", string(optional=True)), ("sm", int64(optional=True))],
             optional=True, name="shop.public.t.Value")
ENVELOPE = envelope_schema(ROW, "shop.public.t.Envelope")
KEY = struct([("id", int32())], name="shop.public.t.Key")


def change(op: str, x: int | None = 1, s: str | None = "a", before: dict[str, Any] | None = None, sm: int | None = None) -> ChangeRecord:
    after = None if op == "d" else {"id": 1, "x": x, "s": s, "sm": sm}
    value = {"before": before, "after": after, "source": {"table": "t", "lsn": 5}, "transaction": None, "op": op,
             "ts_ms": 1, "ts_us": 1, "ts_ns": 1}
    return ChangeRecord("shop.public.t", {"id": 1}, KEY, value, ENVELOPE, (), op, "public", "t", 7, 9, 1)


def partitions(records: list[ChangeRecord], **options: str) -> list[int | None]:
    chain = transform_chain({"transforms": "p", "transforms.p.type": ROUTING,
                             **{f"transforms.p.{name}": value for name, value in options.items()}})
    return [r.partition for r in chain.apply(records)]


@pytest.mark.parametrize("x, function, expected", [
    # Debezium's partitions of an int32 field x among 7, 100 and 1000 partitions
    (0, "java", [0, 0, 0]), (1, "java", [1, 1, 1]), (-2, "java", [0, 46, 646]), (-3, "java", [6, 45, 645]),
    (-1, "java", [0, 0, 0]), (2147483647, "java", [0, 0, 0]),  # low 31 bits all ones: partition 0
    (0, "murmur", [5, 89, 889]), (1, "murmur", [1, 97, 197]), (-1, "murmur", [3, 13, 313]), (2, "murmur", [1, 96, 696]),
])
def test_the_partition_of_one_field_is_debezium_s(x: int, function: str, expected: list[int]) -> None:
    got = [partitions([change("c", x=x)], **{"partition.payload.fields": "after.x", "partition.topic.num": str(n),
                                              "partition.hash.function": function})[0] for n in (7, 100, 1000)]
    assert got == expected


def test_fields_hashes_are_summed_and_missing_or_null_fields_left_out() -> None:
    # a field listed twice counts twice (Debezium: 9931 + 9931 = 19862, partition 862 of 1000)
    assert partitions([change("c", x=9931, s=None)], **{"partition.payload.fields": "after.x,after.nosuch,after.s,after.x",
                                                         "partition.topic.num": "1000", "partition.hash.function": "java"}) == [862]
    assert partitions([change("c", x=None, s=None)], **{"partition.payload.fields": "after.x,after.s,nosuch.a,after.x.y",
                                                         "partition.topic.num": "7"}) == [None]


def test_a_murmur_sum_whose_low_31_bits_are_all_ones_is_partition_0() -> None:
    # Debezium's murmur hashes of 9931 and 19863 sum to 0x7fffffff: Debezium puts the record on partition 0
    assert partitions([change("c", x=9931, sm=19863)], **{"partition.payload.fields": "after.x,after.sm", "partition.topic.num": "7",
                                                          "partition.hash.function": "murmur"}) == [0]
    assert partitions([change("c", x=9931, sm=19862)], **{"partition.payload.fields": "after.x,after.sm", "partition.topic.num": "7",
                                                          "partition.hash.function": "murmur"}) == [6]


def test_change_reads_before_for_a_delete_and_after_of_a_delete_stops() -> None:
    delete = change("d", before={"id": 1, "x": 3, "s": None, "sm": None})
    assert partitions([delete], **{"partition.payload.fields": "change.x", "partition.topic.num": "7"}) == [3]
    with pytest.raises(RecordError, match="after.x reads into after, which is null"):
        partitions([delete], **{"partition.payload.fields": "after.x", "partition.topic.num": "7"})


def test_records_that_are_not_change_events_keep_their_partition() -> None:
    tombstone = ChangeRecord("shop.public.t", {"id": 1}, KEY, None, None)
    message_schema = struct([("op", string()), ("source", struct([("table", string())]))], name="io.debezium.connector.postgresql.MessageValue")
    message = ChangeRecord("shop.message", {"prefix": "p"}, None, {"op": "m", "source": {"table": ""}}, message_schema)
    assert partitions([tombstone, message], **{"partition.payload.fields": "source.table,op", "partition.topic.num": "7"}) == [None, None]


def test_a_struct_field_is_refused_naming_why() -> None:
    with pytest.raises(RecordError, match="changes with every JVM run"):
        partitions([change("c")], **{"partition.payload.fields": "source", "partition.topic.num": "7"})


@pytest.mark.parametrize("options, prop, words", [
    ({"partition.topic.num": "2"}, "partition.payload.fields", "is required"),
    ({"partition.payload.fields": "after.x"}, "partition.topic.num", "is required"),
    ({"partition.payload.fields": "after.x", "partition.topic.num": "0"}, "partition.topic.num", "not a positive"),
    ({"partition.payload.fields": "after.x", "partition.topic.num": "2", "partition.hash.function": "md5"},
     "partition.hash.function", "java, murmur"),
    ({"partition.payload.fields": "after..x", "partition.topic.num": "2"}, "partition.payload.fields", "not a dotted path"),
])
def test_configuration_errors(options: dict[str, str], prop: str, words: str) -> None:
    with pytest.raises(TransformConfigError) as caught:
        partitions([], **options)
    assert caught.value.property == f"transforms.p.{prop}"
    assert words in str(caught.value)


def test_the_hash_function_is_read_in_any_case() -> None:
    assert partitions([change("c", x=0)], **{"partition.payload.fields": "after.x", "partition.topic.num": "7",
                                             "partition.hash.function": "MURMUR"}) == [5]


@pytest.mark.parametrize("layout, warned", [("columns", True), ("topic_files", True), ("kafka", False)])
def test_a_layout_that_writes_no_partitions_is_reported(layout: str, warned: bool) -> None:
    from sparkcdc.debezium.config import ConnectorConfig
    from sparkcdc.spark.outputs import named
    from sparkcdc.spark.outputs.registry import warn_unwritten_partitions

    config = ConnectorConfig({"database.hostname": "h", "database.user": "u", "database.dbname": "d", "topic.prefix": "shop",
                              "transforms": "p", "transforms.p.type": ROUTING, "transforms.p.partition.payload.fields": "after.x",
                              "transforms.p.partition.topic.num": "3"})
    warn_unwritten_partitions(config, named(layout))
    assert any(w.startswith("transforms.p: chooses each record's Kafka partition, which only sparkcdc.output.layout=kafka writes")
               for w in config.warnings) == warned
