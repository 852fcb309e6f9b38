"""What a converter property may be set to: the property table's checks of ``<part>.converter`` and
``value.converter.metadata.source``, each value on its own.

Why a module of its own: the property table (:mod:`.property_table`) checks every property's value
as it is read, and :mod:`.converters` reads the table to judge the settings that depend on the class
chosen; the converter classes sparkcdc knows, and what each value means, are the knowledge both
need, kept here so that neither module needs the other's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

__all__ = [
    "CLOUDEVENTS_CONVERTER",
    "JSON_CONVERTER",
    "METADATA_SOURCE_DEFAULT",
    "NO_HEADER_TRANSFORM",
    "converter_problem",
    "metadata_source_problem",
    "metadata_sources",
]

JSON_CONVERTER: Final = "org.apache.kafka.connect.json.JsonConverter"
CLOUDEVENTS_CONVERTER: Final = "io.debezium.converters.CloudEventsConverter"

_WRITES_JSON: Final = "sparkcdc writes JSON (org.apache.kafka.connect.json.JsonConverter"

#: Converters that serialize through a schema registry, and what they write.
_REGISTRY_CONVERTERS: Final[Mapping[str, str]] = {
    "io.confluent.connect.avro.AvroConverter": "Avro",
    "io.confluent.connect.protobuf.ProtobufConverter": "Protobuf",
    "io.confluent.connect.json.JsonSchemaConverter": "JSON Schema",
    "io.apicurio.registry.utils.converter.AvroConverter": "Avro",
    "io.apicurio.registry.utils.converter.ProtobufConverter": "Protobuf",
    "io.apicurio.registry.utils.converter.ExtJsonConverter": "JSON with registered schemas",
}

#: Other converter classes a configuration may name, and why sparkcdc cannot write what they write.
_OTHER_CONVERTERS: Final[Mapping[str, str]] = {
    "org.apache.kafka.connect.storage.StringConverter": "it writes a struct as Java's Struct.toString(), which sparkcdc does not imitate",
    "org.apache.kafka.connect.converters.ByteArrayConverter": "it takes byte arrays, and Debezium's keys and values are structs",
    "io.debezium.converters.ByteArrayConverter": "it takes byte arrays, and Debezium's keys and values are structs",
    "io.debezium.converters.BinaryDataConverter": "it takes byte arrays, and Debezium's keys and values are structs",
    "org.apache.kafka.connect.storage.SimpleHeaderConverter": "sparkcdc writes headers with JsonConverter (their schemas included)",
}

_METADATA_FIELDS: Final = ("id", "type", "traceparent", "dataSchemaName")
METADATA_SOURCE_DEFAULT: Final = "value,id:generate,type:generate,traceparent:header,dataSchemaName:generate"

NO_HEADER_TRANSFORM: Final = ("no transform sparkcdc runs puts such a header on a change event (Kafka's InsertHeader and "
                              "HeaderFrom are not among them)")


def converter_problem(part: str, raw: str) -> str | None:
    """Why ``<part>.converter=raw`` cannot be honoured, or None (the property table's check)."""
    name = raw.strip()
    if name == JSON_CONVERTER:
        return None
    if name == CLOUDEVENTS_CONVERTER:
        if part == "value":
            return None
        return (f"{name} converts record values (Debezium documents it as value.converter); sparkcdc writes {part}s "
                f"with {JSON_CONVERTER}")
    written = _REGISTRY_CONVERTERS.get(name)
    if written is not None:
        return (f"{name} writes {written} through a schema registry, and none runs beside sparkcdc (a registry's schema ids "
                f"would name schemas nobody can resolve); {_WRITES_JSON}, or {CLOUDEVENTS_CONVERTER} for values with "
                "serializer.type=json)")
    reason = _OTHER_CONVERTERS.get(name)
    if reason is None:
        reason = "sparkcdc cannot load Java classes and does not know what it writes"
    return f"{name} is not a converter sparkcdc runs: {reason}; {_WRITES_JSON}" + (
        f", or {CLOUDEVENTS_CONVERTER})" if part == "value" else ")")


def metadata_source_problem(raw: str) -> str | None:
    """Why ``value.converter.metadata.source=raw`` cannot be honoured, or None (the property table's
    check). Read as Debezium reads it: the comma-separated parts trimmed, the first ``value`` or
    ``header`` (any case), then ``<field>:<source>`` pairs, field names exactly as written, a later
    pair winning over an earlier one."""
    try:
        sources = metadata_sources(raw)
    except ValueError as exc:
        return str(exc)
    if sources["global"] == "header":
        return ("'header' reads each change event's source, op and transaction from headers that Kafka's HeaderFrom "
                f"transform adds; {NO_HEADER_TRANSFORM}, and without them Debezium's converter writes every value as "
                "null: use value")
    for field in ("id", "type"):
        source = sources.get(field)
        if source is None:
            return (f"gives {field} no source: Debezium's converter fails on every change event without one "
                    f"(null used for required field {field!r}); add {field}:generate")
        if source == "header":
            return (f"{field}:header takes each CloudEvent's {field} from a header named {field!r}; {NO_HEADER_TRANSFORM}, "
                    f"so Debezium's converter would fail on every change event (Header `{field}` was not provided): "
                    f"use {field}:generate")
    return None


def metadata_sources(raw: str) -> dict[str, str]:
    parts = [part.strip() for part in raw.split(",")]
    head = parts[0].lower()
    if head not in ("value", "header"):
        raise ValueError(f"{raw!r} must start with value or header (where change events' metadata is read)")
    sources = {"global": head}
    for part in parts[1:]:
        field, colon, source = part.partition(":")
        if not colon:
            raise ValueError(f"{part!r} must be <field>:<source> (for example id:generate)")
        if field not in _METADATA_FIELDS:
            raise ValueError(f"{field!r} is not a CloudEvents field whose source can be set ({', '.join(_METADATA_FIELDS)})")
        source = source.strip().lower()
        if source not in ("generate", "header"):
            raise ValueError(f"{part!r}: the source must be generate or header")
        sources[field] = source
    return sources
