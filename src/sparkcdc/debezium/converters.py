"""Kafka Connect's converters (``key.converter``, ``value.converter``, ``header.converter``): which ones
sparkcdc runs, and every setting of theirs read, checked and honoured or refused before anything connects.

sparkcdc writes Kafka Connect's ``JsonConverter`` bytes for keys, values and headers, and Debezium's
``CloudEventsConverter`` (JSON envelope, JSON ``data``: :mod:`sparkcdc.debezium.cloudevents`) for
values. A converter that needs a schema registry (Confluent's and Apicurio's Avro, Protobuf and JSON
Schema converters, CloudEvents with an Avro envelope or ``data``) cannot run here: no registry runs
beside sparkcdc, and a mock one would hand consumers schema ids nobody can resolve. It is refused,
naming the property and what is missing. Any other class (``StringConverter`` of a struct is Java's
``Struct.toString()``, ``ByteArrayConverter`` needs bytes, ...) is refused naming it.

A converter's own settings are ``<part>.converter.<setting>`` (Kafka Connect strips the prefix and
hands the rest to the converter). Each one a converter sparkcdc runs has is in the property table,
honoured, refused (with the value it cannot honour) or warned about (it changes nothing sparkcdc
writes); a name no converter here has is warned about by its family there, with the closest known
name. What depends on the class chosen is checked here: a setting that changes nothing for it
(``value.converter.schemas.enable=false`` under CloudEvents, whose ``data`` follows
``value.converter.json.schemas.enable``; a CloudEvents setting under JsonConverter) is warned about.
Debezium's embedded engine names the class ``<part>.converter.class``; both names are read (they
must agree).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from ..errors import ConfigurationError
from .converter_values import CLOUDEVENTS_CONVERTER, JSON_CONVERTER, NO_HEADER_TRANSFORM, metadata_sources
from .property_table import PROPERTIES, WARNED

__all__ = [
    "CLOUDEVENTS_CONVERTER",
    "JSON_CONVERTER",
    "CloudEventsSettings",
    "ConverterConfigError",
    "Converters",
    "converters_of",
]

PARTS: Final = ("key", "value", "header")

#: JsonConverter's settings that change its bytes, with their defaults (what happens when unset).
_JSON_SETTINGS: Final[Mapping[str, str]] = {
    "schemas.enable": "true",
    "decimal.format": "base64",
    "replace.null.with.default": "true",
}

#: CloudEventsConverter's own settings (its ``json.*`` ones are JsonConverter's, prefix stripped).
_CLOUDEVENTS_SETTINGS: Final = (
    "serializer.type", "data.serializer.type", "schema.name.adjustment.mode", "schema.cloudevents.name",
    "schema.data.name.source.header.enable", "opentelemetry.tracing.attributes.enable", "extension.attributes.enable",
    "metadata.source",
)


class ConverterConfigError(ConfigurationError):
    """A converter or one of its settings cannot be honoured; ``property`` names it."""


@dataclass(frozen=True)
class CloudEventsSettings:
    """What Debezium's ``CloudEventsConverter`` (JSON envelope, JSON ``data``) writes, as configured."""

    data_schemas: bool = True  # value.converter.json.schemas.enable: ``data`` is {"schema", "payload"}
    extension_attributes: bool = True  # value.converter.extension.attributes.enable: the iodebezium* attributes


@dataclass(frozen=True)
class Converters:
    """The converters of a configuration: JsonConverter for keys and headers (``*_schemas``: its
    ``schemas.enable``), and for values JsonConverter or, with ``cloudevents`` set, CloudEvents."""

    key_schemas: bool = True
    value_schemas: bool = True
    header_schemas: bool = True
    cloudevents: CloudEventsSettings | None = None

    @property
    def plain_json_values(self) -> bool:
        """Values are JsonConverter's (what the server-rendered snapshot path writes)."""
        return self.cloudevents is None


def converters_of(raw: Mapping[str, str], warnings: list[str] | None = None) -> Converters:
    """The converters ``raw`` (a configuration's properties) asks for. The property table has checked
    each property's own value (a refused class or value raised there); what depends on the class
    chosen is checked here: the two names of a class must agree, and a setting that changes nothing
    for the chosen converter is reported in ``warnings`` (as Kafka Connect hands every converter its
    settings and the converter ignores those it does not read)."""

    notes = warnings if warnings is not None else []
    classes = {part: _class_of(raw, part) for part in PARTS}
    cloudevents = classes["value"] == CLOUDEVENTS_CONVERTER
    for name, value in raw.items():
        prop = PROPERTIES.get(name)
        if not name.startswith("value.converter.") or prop is None or prop.status == WARNED or not value.strip():
            continue  # a warned setting is reported by the table; a name it does not know, by its family
        setting = name[len("value.converter."):]
        if cloudevents:
            default = _JSON_SETTINGS.get(setting)
            if default is not None and value.strip().lower() != default:
                notes.append(f"{name}: has no effect with {CLOUDEVENTS_CONVERTER} (as in Debezium): its data attribute "
                             f"follows value.converter.json.{setting}")
            elif setting == "metadata.source":
                _check_data_schema_name(raw, name, value, notes)
        elif setting.startswith("json.") or setting in _CLOUDEVENTS_SETTINGS:
            notes.append(f"{name}: has no effect: it is a setting of {CLOUDEVENTS_CONVERTER}, and value.converter is "
                         f"{classes['value']}")
    settings = None
    if cloudevents:
        settings = CloudEventsSettings(
            data_schemas=_flag(raw, "value.converter.json.schemas.enable", True),
            extension_attributes=_flag(raw, "value.converter.extension.attributes.enable", True),
        )
        header_enable = _flag(raw, "value.converter.schema.data.name.source.header.enable", False)
        if header_enable and "value.converter.metadata.source" not in raw:
            notes.append("value.converter.schema.data.name.source.header.enable: has no effect: value.converter.metadata.source "
                         "does not say dataSchemaName:header (as in Debezium, the data schema's name is generated)")
    return Converters(
        key_schemas=_flag(raw, "key.converter.schemas.enable", True),
        value_schemas=_flag(raw, "value.converter.schemas.enable", True),
        header_schemas=_flag(raw, "header.converter.schemas.enable", True),
        cloudevents=settings,
    )


def _check_data_schema_name(raw: Mapping[str, str], name: str, value: str, notes: list[str]) -> None:
    """``dataSchemaName:header`` takes the data schema's name from a header only with
    ``schema.data.name.source.header.enable=true`` (Debezium ignores it otherwise)."""
    header_enable = _flag(raw, "value.converter.schema.data.name.source.header.enable", False)
    if metadata_sources(value).get("dataSchemaName") == "header":
        if header_enable:
            raise ConverterConfigError("dataSchemaName:header with schema.data.name.source.header.enable=true takes "
                                             f"the data schema's name from a 'dataSchemaName' header; {NO_HEADER_TRANSFORM}, "
                                             "so Debezium's converter would fail on every change event", prop=name)
        notes.append(f"{name}: dataSchemaName:header has no effect without "
                     "value.converter.schema.data.name.source.header.enable=true (as in Debezium): the name is generated")
    elif header_enable:
        notes.append("value.converter.schema.data.name.source.header.enable: has no effect: value.converter.metadata.source "
                     "does not say dataSchemaName:header (as in Debezium, the data schema's name is generated)")


def _class_of(raw: Mapping[str, str], part: str) -> str:
    """``<part>.converter`` (Kafka Connect's name) or ``<part>.converter.class`` (the embedded engine's)."""
    connect, engine = (raw.get(f"{part}.converter") or "").strip(), (raw.get(f"{part}.converter.class") or "").strip()
    if connect and engine and connect != engine:
        raise ConverterConfigError(f"{engine!r} contradicts {part}.converter={connect}; set one of them", prop=f"{part}.converter.class")
    return connect or engine or JSON_CONVERTER


def _flag(raw: Mapping[str, str], name: str, default: bool) -> bool:
    value = (raw.get(name) or "").strip().lower()
    return default if not value else value == "true"
