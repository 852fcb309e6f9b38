"""The property table behaves as docs/properties.md says: every status, alias and default.

docs/properties.md is generated from ``sparkcdc.debezium.property_table``; these tests check the
file is that rendering, and that each property does what its status promises: a warned one warns
(naming itself), a refused one fails naming itself, an alias maps to its current property with its
value mapping and a deprecation warning, and an honoured one is read by the code.
"""

from __future__ import annotations

import ast
import functools
import re
import warnings
from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sparkcdc.cli.app import app
from sparkcdc.debezium import config as config_module
from sparkcdc.debezium.config import ConfigWarning, ConnectorConfig, report_warnings
from sparkcdc.debezium.property_docs import render_table, replace_table
from sparkcdc.debezium.property_table import ALIAS, FAMILIES, HONOURED, PROPERTIES, REFUSED, STATUSES, WARNED, Property, family_of
from sparkcdc.debezium.settings import attribute_name
from sparkcdc.errors import ConfigurationError

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src" / "sparkcdc"
BASE = {"database.hostname": "h", "database.user": "u", "database.dbname": "d", "topic.prefix": "srv"}

# Every alias, with an input and what it must be read as (a new alias needs a row here).
ALIASES: dict[str, list[tuple[dict[str, str], dict[str, str]]]] = {
    "database.server.name": [({"database.server.name": "fulfillment"}, {"topic.prefix": "fulfillment"})],
    "heartbeat.topics.prefix": [({"heartbeat.topics.prefix": "beats"}, {"topic.heartbeat.prefix": "beats"})],
    "toasted.value.placeholder": [({"toasted.value.placeholder": "hex:41"}, {"unavailable.value.placeholder": "hex:41"})],
    "truncate.handling.mode": [
        ({"truncate.handling.mode": "include"}, {"skipped.operations": "none"}),
        ({"truncate.handling.mode": "skip"}, {"skipped.operations": "t"}),
        ({"truncate.handling.mode": "include", "skipped.operations": "d,t"}, {"skipped.operations": "d"}),
        ({"truncate.handling.mode": "skip", "skipped.operations": "d"}, {"skipped.operations": "d,t"}),
    ],
    "sanitize.field.names": [
        ({"sanitize.field.names": "true"}, {"schema.name.adjustment.mode": "avro", "field.name.adjustment.mode": "avro"}),
        ({"sanitize.field.names": "false"}, {"schema.name.adjustment.mode": "none", "field.name.adjustment.mode": "none"}),
    ],
    "flush.lsn.source": [({"flush.lsn.source": "false"}, {"lsn.flush.mode": "manual"}),
                         ({"flush.lsn.source": "true"}, {"lsn.flush.mode": "connector"})],
}


def _value(prop: Property) -> str:
    """A valid value of ``prop`` that is not one of its quiet values."""
    quiet = {q.lower() for q in prop.quiet}
    if prop.kind == "bool":
        candidates = ["true", "false"]
    elif prop.kind == "enum":
        candidates = list(prop.choices)
    elif prop.kind == "int":
        candidates = ["7", "8"]
    else:
        candidates = ["x.y", "x.z"]
    return next(c for c in candidates if c not in quiet)


def _config(**extra: str) -> ConnectorConfig:
    return ConnectorConfig(BASE | extra)


def _warnings_about(config: ConnectorConfig, name: str) -> list[str]:
    return [w for w in config.warnings if re.match(rf"{re.escape(name)}[:= ]", w)]


def test_docs_table_is_the_property_table() -> None:
    text = (REPO / "docs" / "properties.md").read_text(encoding="utf-8")
    assert text == replace_table(text), "docs/properties.md is out of date: python -m sparkcdc.debezium.property_docs docs/properties.md"
    assert render_table() in text
    for name in PROPERTIES:
        assert f"| `{name}` |" in text
    assert "docs/properties.md" in (REPO / "README.md").read_text(encoding="utf-8")


def test_every_property_has_a_status_and_says_why() -> None:
    for prop in PROPERTIES.values():
        assert prop.status in STATUSES, prop.name
        if prop.status in (WARNED, REFUSED):
            assert prop.doc, f"{prop.name}: a {prop.status} property must say why"
        if prop.status == WARNED:
            assert "no effect" in prop.doc, f"{prop.name}: a warning says it has no effect here"
        if prop.status == ALIAS:
            assert prop.alias_of and prop.translate is not None and all(t in PROPERTIES for t in prop.alias_of), prop.name
    for family in FAMILIES:
        assert family.status in (HONOURED, WARNED) and (family.status == HONOURED or "no effect" in family.doc)


@pytest.mark.parametrize("name", [p.name for p in PROPERTIES.values() if p.status == WARNED])
def test_a_warned_property_warns_naming_itself(name: str) -> None:
    prop = PROPERTIES[name]
    config = _config(**{name: _value(prop)})
    assert [f"{name}: {prop.doc}"] == _warnings_about(config, name)
    for quiet in prop.quiet:
        assert not _warnings_about(_config(**{name: quiet}), name), f"{name}={quiet} asks for what happens anyway"
    assert not _warnings_about(_config(), name), "an unset property is not warned about"


@pytest.mark.parametrize("family", [f for f in FAMILIES if f.status == WARNED], ids=lambda f: f.shown)
def test_a_warned_family_warns(family) -> None:
    name = {"signal.*": "signal.emit.failure.max.retries", "notification.*": "notification.custom.setting", "driver.*": "driver.loglevel",
            "key.converter.*, value.converter.*, header.converter.*": "value.converter.schema.registry.url",
            "converter.*, converters.*": "converters.x.type", "transforms.*, predicates.*": "transforms.unwrap.type",
            "offset.*": "offset.storage.file.filename", "schema.history.internal.*": "schema.history.internal.kafka.topic",
            "internal.*": "internal.key.converter", "errors.deadletterqueue.*": "errors.deadletterqueue.topic.name",
            "producer.override.*, consumer.override.*, admin.override.*": "producer.override.linger.ms",
            "openlineage.integration.*": "openlineage.integration.job.namespace", "database.*": "database.ApplicationName"}[family.shown]
    assert family.pattern.fullmatch(name)
    config = _config(**{name: "io.confluent.connect.avro.AvroConverter"})
    assert _warnings_about(config, name) == [f"{name}: {family.doc}"]
    for quiet in family.quiet:
        assert not _warnings_about(_config(**{name: quiet}), name)


@pytest.mark.parametrize("name", [p.name for p in PROPERTIES.values() if p.status == REFUSED])
def test_a_refused_property_fails_naming_itself(name: str) -> None:
    prop = PROPERTIES[name]
    with pytest.raises(ConfigurationError) as info:
        _config(**{name: _value(prop)})
    assert info.value.property == name and prop.doc in str(info.value)
    for quiet in prop.quiet:
        _config(**{name: quiet})  # accepted: it asks for what sparkcdc does


@pytest.mark.parametrize("name,value", [(p.name, v) for p in PROPERTIES.values() for v, _ in p.refused_values]
                         + [("plugin.name", "decoderbufs"), ("connector.class", "io.debezium.connector.mysql.MySqlConnector"),
                            ("topic.naming.strategy", "io.debezium.schema.DefaultTopicNamingStrategy")])
def test_a_refused_value_fails_naming_its_property(name: str, value: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        _config(**{name: value})
    assert info.value.property == name


def test_every_alias_is_tested() -> None:
    assert set(ALIASES) == {p.name for p in PROPERTIES.values() if p.status == ALIAS}


@pytest.mark.parametrize("name,given,expected", [(n, g, e) for n, cases in ALIASES.items() for g, e in cases])
def test_an_alias_maps_to_its_current_property(name: str, given: dict, expected: dict) -> None:
    base = {k: v for k, v in BASE.items() if not (name == "database.server.name" and k == "topic.prefix")}
    config = ConnectorConfig(base | given)
    for target, value in expected.items():
        assert config.get(target) == value
    [warning] = _warnings_about(config, name)
    assert "deprecated" in warning and f"use {', '.join(PROPERTIES[name].alias_of)}" in warning
    again = ConnectorConfig(config.raw)  # what a Spark executor rebuilds from the driver's raw properties
    assert {t: again.get(t) for t in expected} == expected


def test_an_alias_conflicting_with_its_current_property_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="topic.prefix is set to 'other'") as info:
        _config(**{"database.server.name": "fulfillment", "topic.prefix": "other"})
    assert info.value.property == "database.server.name"
    assert _config(**{"database.server.name": "srv"}).get("topic.prefix") == "srv"  # the same value is fine


@pytest.mark.parametrize("old,current", [("never", "no_data"), ("exported", "initial"), ("NEVER", "no_data")])
def test_deprecated_snapshot_modes_are_aliases(old: str, current: str) -> None:
    config = _config(**{"snapshot.mode": old})
    assert config.get("snapshot.mode") == current and config.settings.snapshot_mode == current
    assert _warnings_about(config, "snapshot.mode") == [
        f"snapshot.mode={old} is deprecated: use snapshot.mode={current} (it is read as that)"]


_SKIPPED = {"property_table.py", "property_docs.py", "settings.py"}


@functools.cache
def _source_without_the_table() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in SRC.rglob("*.py") if p.name not in _SKIPPED)


@functools.cache
def _string_literals() -> frozenset[str]:
    """Every string constant of the code outside the table (regular expressions and prefixes included)."""
    found: set[str] = set()
    for path in SRC.rglob("*.py"):
        if path.name not in _SKIPPED:
            found |= {node.value for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                      if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    return frozenset(found)


#: Honoured properties that no code needs to read, because every value asks for what sparkcdc does
#: by construction; each with the reason (and where it is shown).
SATISFIED_BY_DESIGN = {
    "exactly.once.support": "every output sparkcdc writes is exactly once (tests/spark/test_kafka_sink.py, "
                            "test_topic_files_sink.py, the apply kill tests)",
}


@pytest.mark.parametrize("name", [p.name for p in PROPERTIES.values() if p.status == HONOURED])
def test_an_honoured_property_is_read_by_the_code(name: str) -> None:
    source = _source_without_the_table()
    attribute = attribute_name(name)
    read = f'"{name}"' in source or f"'{name}'" in source or re.search(rf"\b(settings|s)\.{attribute}\b", source)
    prop = PROPERTIES[name]
    # A property with a single behaviour (plugin.name=pgoutput, snapshot.query.mode=select_all): its check is what it does.
    checked_by_the_table = (prop.check is not None and prop.kind != "int") or bool(prop.refused_values)
    assert read or checked_by_the_table or name in SATISFIED_BY_DESIGN, f"{name} is marked honoured but nothing reads it"


# A member of each honoured family, set in a configuration where it applies (a new honoured family
# needs a row here).
FAMILY_MEMBERS: dict[str, dict[str, str]] = {
    "column.truncate.to.<n>.chars": {"column.truncate.to.12.chars": r"public\.t\.c"},
    "column.mask.with.<n>.chars": {"column.mask.with.8.chars": r"public\.t\.c"},
    "column.mask.hash.<algorithm>.with.salt.<salt>, column.mask.hash.v2.<algorithm>.with.salt.<salt>":
        {"column.mask.hash.v2.SHA-256.with.salt.CzQMA0cB5K": r"public\.t\.c"},
    "snapshot.select.statement.overrides.<schema>.<table>": {"snapshot.select.statement.overrides.public.orders": "SELECT 1",
                                                             "snapshot.select.statement.overrides": "public.orders"},
    "sparkcdc.output.kafka.client.*": {"sparkcdc.output.kafka.client.security.protocol": "ssl"},
    "signal.consumer.*": {"signal.consumer.security.protocol": "ssl"},
    "transforms.<alias>.*, predicates.<alias>.*": {"transforms.route.regex": "(.*)", "transforms": "route",
                                                   "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
                                                   "transforms.route.replacement": "$1"},
    "post.processors.<name>.*": {"post.processors.reselector.reselect.columns.include.list": r"public\.t:c",
                                 "post.processors": "reselector",
                                 "post.processors.reselector.type": "io.debezium.processors.reselect.ReselectColumnsPostProcessor"},
    "topic.creation.default.*": {"topic.creation.default.cleanup.policy": "compact"},
    "topic.creation.<group>.*": {"topic.creation.logs.retention.ms": "1000", "topic.creation.groups": "logs",
                                 "topic.creation.logs.include": r"srv\.logs\..*"},
}


def _reads(literal: str, name: str) -> bool:
    """Whether code holding ``literal`` reads ``name``: a regular expression matching it whole, or its
    prefix (the rest of the name is the parameter), at least up to the family's second dot."""
    if literal.endswith(".") and literal.count(".") >= 2 and name.startswith(literal):
        return True
    if "\\" not in literal:
        return False  # only a pattern with escaped dots is taken for a regular expression
    try:
        return re.fullmatch(literal, name) is not None
    except re.error:
        return False


def test_every_honoured_family_has_a_tested_member() -> None:
    assert set(FAMILY_MEMBERS) == {f.shown for f in FAMILIES if f.status == HONOURED}
    for shown, properties in FAMILY_MEMBERS.items():
        member = next(iter(properties))
        assert family_of(member) is not None and family_of(member).shown == shown, member


@pytest.mark.parametrize("shown", [f.shown for f in FAMILIES if f.status == HONOURED])
def test_an_honoured_family_is_read_by_the_code(shown: str) -> None:
    """The docs' "0 accepted and unread" for families: code outside the table matches a member's name
    (a pattern or the family's prefix of its own), and the configuration takes it without a warning."""
    properties = FAMILY_MEMBERS[shown]
    member = next(iter(properties))
    readers = [literal for literal in _string_literals() if _reads(literal, member)]
    assert readers, f"{shown} is marked honoured but no code outside the table matches {member}"
    config = _config(**properties)
    assert not config.warnings


def test_docs_list_no_property_accepted_and_unread() -> None:
    """What docs/properties.md calls honoured is read (the two tests above), and every other status
    says what happens: a warning (no effect), an error, or the property it is read as."""
    text = (REPO / "docs" / "properties.md").read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert len(rows) >= len(PROPERTIES) + len(FAMILIES)
    for row in rows:
        status = re.split(r"(?<!\\)\|", row)[3].strip()
        assert status.split(" ")[0] in STATUSES, row
        if status.startswith(WARNED):
            assert "no effect" in row, row


def test_settings_are_typed_frozen_and_take_the_tables_defaults() -> None:
    settings = _config(**{"slot.max.retries": "3", "table.include.list": r"public\.a,public\.b", "snapshot.mode": "ALWAYS"}).settings
    assert settings.slot_name == "debezium" and settings.publication_name == "dbz_publication"
    assert settings.slot_max_retries == 3 and settings.snapshot_mode == "always" and settings.tombstones_on_delete is True
    assert [p.pattern for p in settings.table_include_list] == [r"public\.a", r"public\.b"]
    assert settings.database_tcpkeepalive is True and settings.database_password is None
    with pytest.raises(FrozenInstanceError):
        settings.slot_name = "other"
    defaults = _config().settings
    for prop in PROPERTIES.values():
        if prop.status == ALIAS:
            assert not hasattr(defaults, attribute_name(prop.name))
        elif prop.kind in ("string", "enum", "password") and not prop.required:
            assert getattr(defaults, attribute_name(prop.name)) == prop.default, prop.name
        elif prop.kind == "int":
            assert getattr(defaults, attribute_name(prop.name)) == int(prop.default), prop.name


def test_no_default_is_written_twice() -> None:
    """``config.get("x") or <default>`` repeats the table's default; the table is the only place."""
    repeated = re.compile(r"""config\.get\(["'][a-z.]+["']\)\s+or\s+["'0-9]""")
    for path in [*(SRC / "debezium").rglob("*.py"), *(SRC / "cli").rglob("*.py")]:
        if path.name == "settings.py":
            continue  # its docstring shows the pattern it replaces
        assert not repeated.search(path.read_text(encoding="utf-8")), path


def test_the_library_path_reports_each_warning_once(monkeypatch) -> None:
    monkeypatch.setattr(config_module, "_reported", set())
    config = _config(**{"max.batch.size": "100", "database.server.name": "srv"})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report_warnings(config)
        report_warnings(_config(**{"max.batch.size": "100", "database.server.name": "srv"}))
    messages = [str(w.message) for w in caught if issubclass(w.category, ConfigWarning)]
    assert messages == config.warnings and len(messages) == 2


def test_validate_prints_the_warnings_with_their_lines(tmp_path: Path) -> None:
    path = tmp_path / "c.properties"
    path.write_text("database.hostname=203.0.113.1\ndatabase.user=u\ndatabase.dbname=d\ndatabase.server.name=srv\n"
                    "snapshot.tables.order.by.row.count=ascending\nsnapshot.mode=never\nmax.batch.size=10\n")
    result = CliRunner().invoke(app, ["validate", str(path)], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    output = " ".join(result.output.split())
    assert "database.server.name (line 4) is deprecated: use topic.prefix" in output
    assert "snapshot.tables.order.by.row.count (line 5): has no effect here" in output
    assert "snapshot.mode=never (line 6) is deprecated: use snapshot.mode=no_data" in output
    assert "max.batch.size (line 7): has no effect here" in output


def test_validate_refuses_naming_the_property(tmp_path: Path) -> None:
    path = tmp_path / "c.properties"
    path.write_text("database.hostname=203.0.113.1\ndatabase.user=u\ndatabase.dbname=d\ntopic.prefix=srv\nconverters=money\n")
    result = CliRunner().invoke(app, ["validate", str(path)], env={"COLUMNS": "300"})
    assert result.exit_code == 2
    assert "c.properties:5: converters: custom converters are Java classes" in " ".join(result.output.split())


def test_spark_options_report_the_warnings(monkeypatch) -> None:
    """The library path: a configuration built from the postgres-cdc source's options warns once."""
    from sparkcdc.spark.source.options import config_from_options, options_for

    monkeypatch.setattr(config_module, "_reported", set())
    options = options_for(BASE | {"poll.interval.ms": "100"})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        config_from_options(options)
        config_from_options(options)
    assert [str(w.message) for w in caught if issubclass(w.category, ConfigWarning)] == [
        f"poll.interval.ms: {PROPERTIES['poll.interval.ms'].doc}"]


def test_the_sink_notification_channel_needs_its_topic() -> None:
    with pytest.raises(ConfigurationError) as caught:
        _config(**{"notification.enabled.channels": "log,sink"})
    assert caught.value.property == "notification.sink.topic.name"
    assert "is required when notification.enabled.channels includes sink" in str(caught.value)
    config = _config(**{"notification.enabled.channels": "sink", "notification.sink.topic.name": "srv.notifications"})
    assert config.get("notification.sink.topic.name") == "srv.notifications" and not config.warnings
    _config(**{"notification.enabled.channels": "log"})  # the topic is only needed by the sink channel


def test_no_property_is_read_by_its_name_outside_debezium() -> None:
    """Outside ``debezium/`` a property is read through the typed settings (``config.settings.x``,
    ``config.setting(name)``, ``config.given(name)``), never as ``<anything>.get("name")`` or
    ``<anything>["name"]`` on a configuration or its raw mapping."""
    reads = []
    for path in SRC.rglob("*.py"):
        if "debezium" in path.relative_to(SRC).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            key = None
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args
                    and isinstance(node.args[0], ast.Constant)):
                key = node.args[0].value
            elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and isinstance(node.slice, ast.Constant):
                key = node.slice.value
            if isinstance(key, str) and "." in key and key in PROPERTIES:  # ("name" is every dictionary's key too)
                reads.append(f"{path.relative_to(SRC)}:{node.lineno}: {key}")
    assert not reads, "read through config.settings instead:\n" + "\n".join(reads)
