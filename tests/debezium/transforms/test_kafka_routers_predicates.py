"""Kafka's routing transforms (RegexRouter, TimestampRouter, Filter) and predicates (TopicNameMatches,
HasHeaderKey, RecordIsTombstone) on the records sparkcdc makes."""

from __future__ import annotations

import pytest

from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.debezium.transforms import RecordError, TransformConfigError, transform_chain
from sparkcdc.debezium.transforms.routers import TimestampRouter

from .records import K, chain, change, heartbeat, message, row_free_records, run, tombstone, transaction

BASE = {"database.hostname": "h", "database.user": "u", "database.dbname": "d", "topic.prefix": "shop"}


# -- RegexRouter ------------------------------------------------------------------------------------

@pytest.mark.parametrize("regex, replacement, topics", [
    (r"shop\.public\.(.*)", "$1", ["items", "__debezium-heartbeat.shop", "shop.transaction", "shop.message"]),
    (r"(?<prefix>[^.]+)\.(?<rest>.*)", "${rest}@${prefix}", ["public.items@shop", "shop@__debezium-heartbeat", "transaction@shop",
                                                              "message@shop"]),
    (r"shop", "x", ["shop.public.items", "__debezium-heartbeat.shop", "shop.transaction", "shop.message"]),  # whole names only
])
def test_regex_router_renames_whole_topic_names_of_every_kind_of_record(regex: str, replacement: str, topics: list[str]) -> None:
    router = chain("RegexRouter", regex=regex, replacement=replacement)
    records = [change(), heartbeat(), transaction(), message()]
    out = list(router.apply(records))
    assert [r.topic for r in out] == topics
    assert all(a.value is b.value and a.key is b.key for a, b in zip(records, out, strict=True))


def test_regex_router_routes_tombstones_with_their_change() -> None:
    out = list(chain("RegexRouter", regex=".*", replacement="all").apply([change("d"), tombstone()]))
    assert [(r.topic, r.value is None) for r in out] == [("all", False), ("all", True)]


# -- TimestampRouter --------------------------------------------------------------------------------

def test_timestamp_router_formats_as_kafka_and_fails_on_records_without_a_timestamp() -> None:
    given = {**BASE, "transforms": "t", "transforms.t.type": K + "TimestampRouter",
             "transforms.t.topic.format": "${topic}_${timestamp}_${topic}", "transforms.t.timestamp.format": "yyyy-MM-dd'T'HH"}
    config = ConnectorConfig(given)
    assert any("TimestampRouter fails on every record" in w for w in config.warnings)
    router = config.transforms.steps[0].transform
    assert isinstance(router, TimestampRouter)
    assert router.topic_for("a.b", 1577934245123) == "a.b_2020-01-02T03_a.b"
    with pytest.raises(RecordError, match="Timestamp missing on record") as caught:
        list(config.transforms.apply([change()]))
    assert caught.value.lsn == 7


def test_timestamp_router_defaults_and_a_format_java_refuses() -> None:
    router = chain("TimestampRouter").steps[0].transform
    assert isinstance(router, TimestampRouter) and router.topic_for("t", 1577934245123) == "t-20200102"
    with pytest.raises(TransformConfigError) as caught:
        chain("TimestampRouter", timestamp_format="yyyy-bb")
    assert caught.value.property == "transforms.t.timestamp.format" and "Illegal pattern character 'b'" in str(caught.value)


# -- Filter and predicates --------------------------------------------------------------------------

def _filtered(predicate: dict[str, str], negate: str = "false") -> list[str]:
    chain_ = transform_chain({"transforms": "f", "transforms.f.type": K + "Filter", "transforms.f.predicate": "p",
                              "transforms.f.negate": negate, "predicates": "p", **predicate})
    records = [change(), tombstone(), heartbeat(), transaction(), message()]
    return [f"{r.topic}{'/tombstone' if r.value is None else ''}" for r in chain_.apply(records)]


def test_filter_without_a_predicate_drops_everything() -> None:
    assert list(chain("Filter").apply([change(), tombstone(), heartbeat()])) == []


def test_record_is_tombstone_drops_tombstones_and_any_null_value() -> None:
    predicate = {"predicates.p.type": K + "predicates.RecordIsTombstone"}
    assert _filtered(predicate) == ["shop.public.items", "__debezium-heartbeat.shop", "shop.transaction", "shop.message"]
    assert _filtered(predicate, negate="true") == ["shop.public.items/tombstone"]
    extracted = run("ExtractField$Value", change("d", after=None), field="after")
    assert extracted is not None and extracted.value is None and extracted.value_schema is not None
    chain_ = transform_chain({"transforms": "f", "transforms.f.type": K + "Filter", "transforms.f.predicate": "p",
                              "predicates": "p", **predicate})
    assert list(chain_.apply([extracted])) == []  # a null value with a schema is a tombstone to Kafka's predicate


def test_has_header_key_matches_a_header_name_exactly() -> None:
    present = {"predicates.p.type": K + "predicates.HasHeaderKey", "predicates.p.name": "__debezium.context.connectorName"}
    assert _filtered(present) == ["__debezium-heartbeat.shop"]  # the records made without headers here
    upper = {**present, "predicates.p.name": "__DEBEZIUM.context.connectorName"}
    assert len(_filtered(upper)) == 5


@pytest.mark.parametrize("name, words", [(None, "is required"), ("  ", "String must be non-empty")])
def test_has_header_key_needs_a_name(name: str | None, words: str) -> None:
    given = {"transforms": "f", "transforms.f.type": K + "Filter", "transforms.f.predicate": "p", "predicates": "p",
             "predicates.p.type": K + "predicates.HasHeaderKey"}
    if name is not None:
        given["predicates.p.name"] = name
    with pytest.raises(TransformConfigError) as caught:
        transform_chain(given)
    assert caught.value.property == "predicates.p.name" and words in str(caught.value)


def test_record_is_tombstone_takes_no_options() -> None:
    given = {**BASE, "transforms": "f", "transforms.f.type": K + "Filter", "transforms.f.predicate": "p", "predicates": "p",
             "predicates.p.type": K + "predicates.RecordIsTombstone", "predicates.p.pattern": "x"}
    assert any(w.startswith("predicates.p.pattern: is not an option of RecordIsTombstone") for w in ConnectorConfig(given).warnings)


def test_records_without_a_row_reach_every_transform() -> None:
    """Heartbeats, transaction records and messages go through the chain like row changes."""
    out = list(chain("InsertField$Value", static_field="s", static_value="v").apply(row_free_records()))
    assert [r.value["s"] for r in out] == ["v", "v", "v"]
