"""Checks the command line adds to :class:`ConnectorConfig`'s, and the "differs from Debezium" view.

:class:`ConnectorConfig` validates values; these rules catch configurations that are valid for
Debezium but name something only a JVM can provide (a Java class, another decoding plugin), which
sparkcdc would otherwise ignore and silently produce different events. Each raises
:class:`ConfigError` naming the property, like every other configuration error.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..debezium.config import PROPERTIES, ConfigError, ConnectorConfig

__all__ = ["DEBEZIUM_DEFAULTS", "check_cli_rules", "differences_from_debezium", "unknown_properties"]

_CONNECTOR_CLASS = "io.debezium.connector.postgresql.PostgresConnector"
_TOPIC_NAMING = "io.debezium.schema.SchemaTopicNamingStrategy"

# Debezium's own defaults where sparkcdc's differ (config.py keeps sparkcdc's).
DEBEZIUM_DEFAULTS: dict[str, str | None] = {name: prop.default for name, prop in PROPERTIES.items()} | {"plugin.name": "decoderbufs"}


def check_cli_rules(properties: Mapping[str, str]) -> None:
    """Raise :class:`ConfigError` for settings sparkcdc cannot honour (before any other validation)."""
    plugin = properties.get("plugin.name", "").strip()
    if plugin and plugin.lower() != "pgoutput":
        raise ConfigError("plugin.name", f"{plugin!r} is not supported: sparkcdc decodes pgoutput only (set plugin.name=pgoutput or remove it)")
    connector_class = properties.get("connector.class", "").strip()
    if connector_class and connector_class not in (_CONNECTOR_CLASS, "PostgresConnector"):
        raise ConfigError("connector.class", f"{connector_class!r} is not the Debezium PostgreSQL connector ({_CONNECTOR_CLASS})")
    for name in ("snapshot.locking.mode", "snapshot.query.mode"):
        if properties.get(name, "").strip().lower() == "custom":
            raise ConfigError(name, "custom implementations are Java classes; sparkcdc cannot load them")
    if properties.get("converters", "").strip():
        raise ConfigError("converters", "custom converters are Java classes; sparkcdc cannot load them")
    strategy = properties.get("topic.naming.strategy", "").strip()
    if strategy and strategy != _TOPIC_NAMING:
        raise ConfigError("topic.naming.strategy", f"{strategy!r} is a Java class sparkcdc cannot load; only {_TOPIC_NAMING} is supported")


def unknown_properties(properties: Mapping[str, str]) -> list[str]:
    """Names neither sparkcdc nor Debezium's parameterised families know (probably typos).

    ``ConnectorConfig(strict=True)`` is the authority on what is known; it reports the first unknown
    name only, so the names are tried one at a time.
    """
    known = {name: properties[name] for name in properties if name in PROPERTIES}
    unknown = []
    for name in properties:
        if name in PROPERTIES:
            continue
        try:
            ConnectorConfig(known | {name: properties[name]}, strict=True)
        except ConfigError as exc:
            if exc.property == name:
                unknown.append(name)
    return unknown


def _normalized(name: str, value: str | None) -> str | None:
    if value is None or value == "":
        return None
    prop = PROPERTIES[name]
    if prop.kind in ("enum", "bool"):
        return value.strip().lower()
    if prop.kind == "int":
        return str(int(value))
    return value


def differences_from_debezium(config: ConnectorConfig, *, skip: frozenset[str] = frozenset()) -> list[tuple[str, str, str | None]]:
    """(property, value, Debezium's default) for every known property set to a non-default value.

    Passwords are shown masked; ``skip`` leaves out what a summary already shows elsewhere.
    """
    rows = []
    for name, prop in PROPERTIES.items():
        if name in skip:
            continue
        value = config.raw.get(name)
        if value is None or value == "":
            continue
        default = DEBEZIUM_DEFAULTS.get(name)
        if _normalized(name, value) == _normalized(name, default):
            continue
        rows.append((name, "********" if prop.kind == "password" else value, default))
    return rows
