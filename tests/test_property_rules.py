"""The rules across properties: each one refuses the configuration that breaks it, naming its property,
and a configuration that keeps them all passes (sparkcdc.debezium.property_rules)."""

from __future__ import annotations

import pytest

from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.debezium.property_rules import RULES, PropertyRule
from sparkcdc.errors import ConfigurationError

BASE = {"database.hostname": "h", "database.user": "u", "database.dbname": "d", "topic.prefix": "srv"}
DECODERS = {"sparkcdc.stream.decode.processes": "2", "sparkcdc.output.layout": "topic_files"}
SLOTS = {"sparkcdc.stream.slots": "2", "publication.autocreate.mode": "filtered"}

#: For each rule (by position in RULES): a configuration that breaks it and no rule before it.
BREAKING: list[dict[str, str]] = [
    {"table.include.list": "a.b", "table.exclude.list": "a.c"},
    {"schema.include.list": "a", "schema.exclude.list": "b"},
    {"column.include.list": "a.b.c", "column.exclude.list": "a.b.d"},
    {"message.prefix.include.list": "x", "message.prefix.exclude.list": "y"},
    {"signal.enabled.channels": "source,kafka"},
    {"sparkcdc.stream.decode.chunk.messages": "5000"},
    DECODERS | {"signal.data.collection": "public.signals"},
    DECODERS | {"include.schema.changes": "true"},
    DECODERS | {"post.processors": "reselector",
                "reselector.type": "io.debezium.processors.reselect.ReselectColumnsPostProcessor"},
    {"sparkcdc.stream.slots.assignment": "public.a:0"},
    SLOTS | {"publication.autocreate.mode": "all_tables"},
    SLOTS | {"publication.autocreate.mode": "disabled", "sparkcdc.stream.slots.assignment": "public.a:1"},
    SLOTS | {"signal.data.collection": "public.signals"},
    SLOTS | {"signal.enabled.channels": "source,file", "signal.file": "/tmp/signals.txt"},
]


def test_every_rule_has_a_breaking_case() -> None:
    assert len(BREAKING) == len(RULES)


@pytest.mark.parametrize(("rule", "breaking"), list(zip(RULES, BREAKING, strict=True)),
                         ids=[f"{i}-{rule.prop}" for i, rule in enumerate(RULES)])
def test_a_broken_rule_refuses_the_configuration_naming_its_property(rule: PropertyRule, breaking: dict[str, str]) -> None:
    with pytest.raises(ConfigurationError) as caught:
        ConnectorConfig(BASE | breaking)
    assert caught.value.property == rule.prop
    assert str(caught.value).startswith(rule.prop)


@pytest.mark.parametrize("kept", [DECODERS, SLOTS, SLOTS | {"sparkcdc.stream.slots.assignment": "public.a:1"},
                                  {"table.include.list": "a.b", "schema.exclude.list": "c"},
                                  {"signal.enabled.channels": "source,kafka", "signal.kafka.bootstrap.servers": "k:9092"}])
def test_a_configuration_that_keeps_the_rules_passes(kept: dict[str, str]) -> None:
    ConnectorConfig(BASE | kept)
