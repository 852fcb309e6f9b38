"""Converters and their settings (sparkcdc.debezium.converters, the property table): what is honoured,
refused before anything connects (naming the property and what is missing) or warned about."""

from __future__ import annotations

import pytest

from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.errors import ConfigurationError

BASE = {"database.hostname": "h", "database.user": "u", "database.dbname": "d", "topic.prefix": "srv"}
JSON = "org.apache.kafka.connect.json.JsonConverter"
CLOUDEVENTS = "io.debezium.converters.CloudEventsConverter"


def _refused(extra: dict[str, str]) -> ConfigurationError:
    with pytest.raises(ConfigurationError) as info:
        ConnectorConfig(BASE | extra)
    return info.value


def _warnings(extra: dict[str, str], name: str) -> list[str]:
    return [w for w in ConnectorConfig(BASE | extra).warnings if w.startswith(f"{name}:")]


@pytest.mark.parametrize("prop", ["key.converter", "value.converter", "key.converter.class", "value.converter.class"])
@pytest.mark.parametrize("converter, written", [
    ("io.confluent.connect.avro.AvroConverter", "Avro"),
    ("io.confluent.connect.protobuf.ProtobufConverter", "Protobuf"),
    ("io.confluent.connect.json.JsonSchemaConverter", "JSON Schema"),
    ("io.apicurio.registry.utils.converter.AvroConverter", "Avro"),
    ("io.apicurio.registry.utils.converter.ProtobufConverter", "Protobuf"),
])
def test_a_converter_that_needs_a_schema_registry_is_refused_naming_the_property(prop: str, converter: str, written: str) -> None:
    error = _refused({prop: converter, f"{prop.removesuffix('.class')}.schema.registry.url": "http://registry:8081"})
    assert error.property == prop
    assert f"{converter} writes {written} through a schema registry" in str(error) and "sparkcdc writes JSON" in str(error)


@pytest.mark.parametrize("setting", ["value.converter.serializer.type", "value.converter.data.serializer.type"])
def test_cloudevents_with_avro_is_refused_naming_the_setting(setting: str) -> None:
    error = _refused({"value.converter": CLOUDEVENTS, setting: "avro", "value.converter.avro.schema.registry.url": "http://r"})
    assert error.property == setting and "schema registry" in str(error) and "use json" in str(error)


@pytest.mark.parametrize("prop, converter, words", [
    ("value.converter", "org.apache.kafka.connect.storage.StringConverter", "Struct.toString()"),
    ("key.converter", "org.apache.kafka.connect.converters.ByteArrayConverter", "byte arrays"),
    ("header.converter", "org.apache.kafka.connect.storage.SimpleHeaderConverter", "headers with JsonConverter"),
    ("value.converter", "com.acme.MyConverter", "cannot load Java classes"),
    ("key.converter", CLOUDEVENTS, "converts record values"),
    ("header.converter", CLOUDEVENTS, "converts record values"),
    ("value.converter", "JsonConverter", "is not a converter sparkcdc runs"),  # Kafka Connect wants the class's full name
])
def test_any_other_converter_class_is_refused_naming_it(prop: str, converter: str, words: str) -> None:
    error = _refused({prop: converter})
    assert error.property == prop and converter in str(error) and words in str(error)


@pytest.mark.parametrize("extra, prop, words", [
    ({"value.converter.decimal.format": "NUMERIC"}, "value.converter.decimal.format", "NUMERIC is not implemented"),
    ({"key.converter.decimal.format": "numeric"}, "key.converter.decimal.format", "BASE64"),
    ({"value.converter": CLOUDEVENTS, "value.converter.json.decimal.format": "NUMERIC"}, "value.converter.json.decimal.format",
     "NUMERIC is not implemented"),
    ({"value.converter.decimal.format": "TEXT"}, "value.converter.decimal.format", "not one of base64, numeric"),
    ({"value.converter.replace.null.with.default": "false"}, "value.converter.replace.null.with.default", "false is not implemented"),
    ({"header.converter.schemas.enable": "false"}, "header.converter.schemas.enable", "headers with their schemas"),
    ({"value.converter": CLOUDEVENTS, "value.converter.metadata.source": "header"}, "value.converter.metadata.source", "HeaderFrom"),
    ({"value.converter": CLOUDEVENTS, "value.converter.metadata.source": "value,id:header,type:generate"},
     "value.converter.metadata.source", "Header `id` was not provided"),
    ({"value.converter": CLOUDEVENTS, "value.converter.metadata.source": "value,id:generate"}, "value.converter.metadata.source",
     "gives type no source"),
    ({"value.converter": CLOUDEVENTS, "value.converter.metadata.source": "value,id:generate,type:generate,foo:header"},
     "value.converter.metadata.source", "'foo' is not a CloudEvents field"),
    ({"value.converter": CLOUDEVENTS, "value.converter.metadata.source": "value,id:generate,type:bogus"},
     "value.converter.metadata.source", "generate or header"),
    ({"value.converter": CLOUDEVENTS, "value.converter.metadata.source": "events,id:generate,type:generate"},
     "value.converter.metadata.source", "must start with value or header"),
    ({"value.converter": CLOUDEVENTS, "value.converter.opentelemetry.tracing.attributes.enable": "true"},
     "value.converter.opentelemetry.tracing.attributes.enable", "traceparent"),
    ({"value.converter": CLOUDEVENTS, "value.converter.schema.data.name.source.header.enable": "true",
      "value.converter.metadata.source": "value,id:generate,type:generate,traceparent:header,dataSchemaName:header"},
     "value.converter.metadata.source", "dataSchemaName"),
    ({"value.converter": CLOUDEVENTS, "value.converter.class": JSON}, "value.converter.class", "contradicts"),
    ({"value.converter": CLOUDEVENTS, "value.converter.extension.attributes.enable": "yes"},
     "value.converter.extension.attributes.enable", "not a boolean"),
])
def test_a_setting_that_cannot_be_honoured_is_refused_naming_it(extra: dict[str, str], prop: str, words: str) -> None:
    error = _refused(extra)
    assert error.property == prop and words in str(error)


def test_the_default_and_the_embedded_engines_names_are_json() -> None:
    config = ConnectorConfig(BASE | {"key.converter.class": JSON, "value.converter": JSON, "value.converter.class": JSON,
                                     "header.converter": JSON, "header.converter.schemas.enable": "true",
                                     "key.converter.schemas.enable": "false"})
    assert config.converters.plain_json_values and config.converters.cloudevents is None
    assert (config.key_schemas_enable, config.value_schemas_enable) == (False, True)
    assert not [w for w in config.warnings if "converter" in w]


def test_cloudevents_settings_are_read() -> None:
    config = ConnectorConfig(BASE | {"value.converter.class": CLOUDEVENTS, "value.converter.json.schemas.enable": "FALSE",
                                     "value.converter.extension.attributes.enable": "false",
                                     "value.converter.metadata.source": "VALUE, id:generate,type:Generate,traceparent:generate",
                                     "value.converter.serializer.type": "JSON"})
    settings = config.converters.cloudevents
    assert settings is not None and not settings.data_schemas and not settings.extension_attributes
    assert not config.converters.plain_json_values
    assert not [w for w in config.warnings if "converter" in w]


@pytest.mark.parametrize("extra, name, words", [
    # Debezium's CloudEventsConverter hands its data to a JsonConverter configured from json.* only.
    ({"value.converter": CLOUDEVENTS, "value.converter.schemas.enable": "false"}, "value.converter.schemas.enable",
     "value.converter.json.schemas.enable"),
    # CloudEvents settings under JsonConverter change nothing.
    ({"value.converter.extension.attributes.enable": "false"}, "value.converter.extension.attributes.enable", "is " + JSON),
    ({"value.converter.json.schemas.enable": "false"}, "value.converter.json.schemas.enable", "is " + JSON),
    ({"value.converter": CLOUDEVENTS, "value.converter.metadata.source": "value,id:generate,type:generate,dataSchemaName:header"},
     "value.converter.metadata.source", "without value.converter.schema.data.name.source.header.enable=true"),
    ({"value.converter": CLOUDEVENTS, "value.converter.schema.data.name.source.header.enable": "true"},
     "value.converter.schema.data.name.source.header.enable", "does not say dataSchemaName:header"),
    ({"value.converter": CLOUDEVENTS, "value.converter.schema.cloudevents.name": "my.Envelope"},
     "value.converter.schema.cloudevents.name", "JSON envelope has none"),
    ({"value.converter": CLOUDEVENTS, "value.converter.schema.name.adjustment.mode": "avro"},
     "value.converter.schema.name.adjustment.mode", "JSON envelope has none"),
    ({"key.converter.schemas.cache.size": "50"}, "key.converter.schemas.cache.size", "schema cache"),
    ({"value.converter.schema.registry.url": "http://r"}, "value.converter.schema.registry.url", "not a setting of any converter"),
])
def test_a_setting_without_effect_is_warned_about_naming_it(extra: dict[str, str], name: str, words: str) -> None:
    [warning] = _warnings(extra, name)
    assert words in warning


def test_defaults_and_json_defaults_under_cloudevents_are_quiet() -> None:
    config = ConnectorConfig(BASE | {"value.converter": CLOUDEVENTS, "value.converter.schemas.enable": "true",
                                     "value.converter.schemas.cache.size": "1000", "value.converter.decimal.format": "base64"})
    assert not [w for w in config.warnings if "converter" in w]
