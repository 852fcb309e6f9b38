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
    {"sparkcdc.stream.decode.chunk.messages": "5000", "sparkcdc.stream.decode.processes": "1"},
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


FILES = {"sparkcdc.output.layout": "topic_files", "sparkcdc.output.topic.files": "/tmp/out"}
CHANGES = {"sparkcdc.output.layout": "changes"}


@pytest.mark.parametrize(("given", "processes"), [
    (FILES, 1),  # auto with plain topic files: one (the page cache, not decoding, bounds them)
    (FILES | {"sparkcdc.output.topic.files.compression": "zstd"}, "cores"),
    (FILES | {"sparkcdc.output.topic.files.compression": "zstd", "signal.data.collection": "public.signals"}, 1),  # a rule: one
    (FILES | {"sparkcdc.output.topic.files.compression": "zstd", "include.schema.changes": "true"}, 1),
    (FILES | {"sparkcdc.stream.decode.processes": "3"}, 3),
    (FILES | {"sparkcdc.stream.decode.processes": "1", "sparkcdc.output.topic.files.compression": "zstd"}, 1),
    (CHANGES, "cores"),  # apply_changes' source: decoding and building blocks is all the stream task does
    (CHANGES | {"signal.data.collection": "public.signals"}, 1),
    (CHANGES | {"sparkcdc.stream.decode.processes": "1"}, 1),
    ({"sparkcdc.output.layout": "columns"}, 1),  # decodes in the task: the setting is not its own
    ({}, 1),  # the default layout (columns)
])
def test_auto_decoding_processes_are_sized_where_they_pay_and_the_rules_allow(given: dict[str, str], processes: int | str) -> None:
    import os

    from sparkcdc.spark.outputs import output_for
    from sparkcdc.spark.outputs.decoding import AUTO_PROCESSES_MAX

    config = ConnectorConfig(BASE | given)
    cores = min(len(os.sched_getaffinity(0)), AUTO_PROCESSES_MAX)
    expected = (cores if cores > 1 else 1) if processes == "cores" else processes
    assert output_for(config).decoding_processes(config) == expected


def test_auto_is_the_default_and_a_count_or_auto_is_all_it_takes() -> None:
    assert ConnectorConfig(BASE).settings.sparkcdc_stream_decode_processes is None  # auto
    assert ConnectorConfig(BASE | {"sparkcdc.stream.decode.processes": "AUTO"}).settings.sparkcdc_stream_decode_processes is None
    for wrong in ("0", "-1", "two", "1.5"):
        with pytest.raises(ConfigurationError, match="neither a positive integer nor auto") as caught:
            ConnectorConfig(BASE | {"sparkcdc.stream.decode.processes": wrong})
        assert caught.value.property == "sparkcdc.stream.decode.processes"


def test_chunk_messages_without_decoding_processes_is_refused_or_warned(caplog: pytest.LogCaptureFixture) -> None:
    """Never accepted and ignored: another layout refuses it; plain topic files (auto: one process) warn."""
    import logging

    from sparkcdc.spark.outputs.registry import check_output_settings

    chunk = {"sparkcdc.stream.decode.chunk.messages": "5000"}
    with pytest.raises(ConfigurationError) as caught:
        check_output_settings(ConnectorConfig(BASE | chunk | {"sparkcdc.output.layout": "columns"}))
    assert caught.value.property == "sparkcdc.stream.decode.chunk.messages"
    assert "only the topic_files and changes layouts decode in processes" in str(caught.value)
    both = chunk | {"sparkcdc.stream.decode.processes": "2"}
    for layout in ({"sparkcdc.output.layout": "changes"}, {"sparkcdc.output.layout": "topic_files", "sparkcdc.output.topic.files": "/o"}):
        check_output_settings(ConnectorConfig(BASE | both | layout))  # each of the two takes both settings
    files = {"sparkcdc.output.layout": "topic_files", "sparkcdc.output.topic.files": "/tmp/out"}
    with caplog.at_level(logging.WARNING):
        check_output_settings(ConnectorConfig(BASE | chunk | files)).check(ConnectorConfig(BASE | chunk | files))
    assert any("sparkcdc.stream.decode.chunk.messages has no effect" in r.getMessage() for r in caplog.records)
