"""The transform chain: Kafka Connect's reading of transforms= and predicates=, and its running order."""

from __future__ import annotations

import pytest

from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.debezium.connect import string
from sparkcdc.debezium.records import ChangeRecord
from sparkcdc.debezium.transforms import TransformConfigError, transform_chain

BASE = {"database.hostname": "h", "database.user": "u", "database.dbname": "d", "topic.prefix": "shop"}
ROUTER = "org.apache.kafka.connect.transforms.RegexRouter"
MATCHES = "org.apache.kafka.connect.transforms.predicates.TopicNameMatches"


def record(topic: str) -> ChangeRecord:
    return ChangeRecord(topic, {"id": 1}, None, "v", string(), lsn=7, commit_lsn=9, ordinal=3)


def test_transforms_run_in_order_each_on_what_the_last_made() -> None:
    chain = transform_chain({
        "transforms": "a,b",
        "transforms.a.type": ROUTER, "transforms.a.regex": r"shop\.public\.(.*)", "transforms.a.replacement": "mid.$1",
        "transforms.b.type": ROUTER, "transforms.b.regex": r"mid\.(?<rest>.*)", "transforms.b.replacement": "end-${rest}-\\$",
    })
    out = list(chain.apply([record("shop.public.orders"), record("other")]))
    assert [r.topic for r in out] == ["end-orders-$", "other"]
    assert (out[0].lsn, out[0].commit_lsn, out[0].ordinal) == (7, 9, 3)  # position kept


@pytest.mark.parametrize("negate, expected", [("false", ["routed", "keep.b"]), ("true", ["keep.a", "routed"])])
def test_a_predicate_guards_its_transform_and_negate_inverts_it(negate: str, expected: list[str]) -> None:
    chain = transform_chain({
        "transforms": "r", "transforms.r.type": ROUTER, "transforms.r.regex": ".*", "transforms.r.replacement": "routed",
        "transforms.r.predicate": "isA", "transforms.r.negate": negate,
        "predicates": "isA", "predicates.isA.type": MATCHES, "predicates.isA.pattern": r"keep\.a",
    })
    assert [r.topic for r in chain.apply([record("keep.a"), record("keep.b")])] == expected


def test_no_transforms_is_a_falsy_chain() -> None:
    assert not transform_chain({})
    assert not ConnectorConfig(BASE).transforms


@pytest.mark.parametrize("extra, prop, words", [
    ({"transforms": "x"}, "transforms.x.type", "is required"),
    ({"transforms": "x", "transforms.x.type": "com.acme.Mine"}, "transforms.x.type", "Java class sparkcdc does not have"),
    ({"transforms": "x", "transforms.x.type": "org.apache.kafka.connect.transforms.RegexRoutr"}, "transforms.x.type",
     "did you mean org.apache.kafka.connect.transforms.RegexRouter"),
    ({"transforms": "x", "transforms.x.type": "io.debezium.transforms.ContentBasedRouter"}, "transforms.x.type", "JSR 223"),
    ({"transforms": "x", "transforms.x.type": ROUTER, "transforms.x.regex": "("}, "transforms.x.replacement", "is required"),
    ({"transforms": "x", "transforms.x.type": ROUTER, "transforms.x.regex": "(", "transforms.x.replacement": "y"},
     "transforms.x.regex", "not a valid regular expression"),
    ({"transforms": "x", "transforms.x.type": ROUTER, "transforms.x.regex": "a", "transforms.x.replacement": "$"},
     "transforms.x.replacement", "names no group"),
    ({"transforms": "x", "transforms.x.type": ROUTER, "transforms.x.regex": "a", "transforms.x.replacement": "b",
      "transforms.x.predicate": "p"}, "transforms.x.predicate", "predicates= does not define"),
    ({"transforms": "x", "transforms.x.type": ROUTER, "transforms.x.regex": "a", "transforms.x.replacement": "b",
      "transforms.x.negate": "true"}, "transforms.x.negate", "needs a predicate"),
    ({"transforms": "x,x"}, "transforms", "twice"),
    ({"predicates": "p", "predicates.p.type": "org.apache.kafka.connect.transforms.predicates.Nope"}, "predicates.p.type",
     "not a predicate sparkcdc has"),
])
def test_configuration_errors_name_the_property(extra: dict[str, str], prop: str, words: str) -> None:
    with pytest.raises(TransformConfigError) as caught:
        ConnectorConfig({**BASE, **extra})
    assert caught.value.property == prop
    assert words in str(caught.value)


def test_unknown_options_are_reported_with_the_closest_name_and_refused_when_strict() -> None:
    given = {**BASE, "transforms": "x", "transforms.x.type": ROUTER, "transforms.x.regex": "a", "transforms.x.replacement": "b",
             "transforms.x.replacment": "c", "transforms.y.type": ROUTER, "predicates": "p", "predicates.p.type": MATCHES,
             "predicates.p.pattern": "q"}
    config = ConnectorConfig(given)
    assert any(w.startswith("transforms.x.replacment: is not an option of RegexRouter; did you mean transforms.x.replacement?")
               for w in config.warnings)
    assert any(w.startswith("transforms.y.type: configures transform 'y', which transforms= does not list") for w in config.warnings)
    assert any(w.startswith("predicates.p: defined but no transform uses it") for w in config.warnings)
    with pytest.raises(TransformConfigError) as caught:
        ConnectorConfig(given, strict=True)
    assert caught.value.property == "transforms.x.replacment"
