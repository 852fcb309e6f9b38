"""The command line's view of a configuration: names sparkcdc does not know, and "differs from Debezium".

What sparkcdc refuses, translates or warns about is decided by the property table
(:mod:`sparkcdc.debezium.property_table`) on every path, the library's as well as the command
line's; this module only adds what a configuration file's reader wants to see on top.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..debezium.config import PROPERTIES, ConnectorConfig
from ..debezium.property_table import ALIAS, family_of

__all__ = ["DEBEZIUM_DEFAULTS", "differences_from_debezium", "unknown_properties"]

# Debezium's own defaults where sparkcdc's differ (the property table keeps sparkcdc's).
DEBEZIUM_DEFAULTS: dict[str, str | None] = {name: prop.default for name, prop in PROPERTIES.items()} | {"plugin.name": "decoderbufs"}


def unknown_properties(properties: Mapping[str, str]) -> list[str]:
    """Names neither sparkcdc nor Debezium's parameterised families know (probably typos)."""
    return [name for name in properties if name not in PROPERTIES and family_of(name) is None]


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
        if name in skip or prop.status == ALIAS:
            continue  # an alias shows as the current property it was translated to
        value = config.raw.get(name)
        if value is None or value == "":
            continue
        default = DEBEZIUM_DEFAULTS.get(name)
        if _normalized(name, value) == _normalized(name, default):
            continue
        rows.append((name, "********" if prop.kind == "password" else value, default))
    return rows
