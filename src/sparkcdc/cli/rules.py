"""The command line's view of a configuration: what differs from Debezium.

What sparkcdc refuses, translates or warns about, and which names it does not know, is decided by
the property table (:mod:`sparkcdc.debezium.property_table`) and reported by
:class:`~sparkcdc.debezium.config.ConnectorConfig` on every path, the library's as well as the
command line's; this module only adds what a configuration file's reader wants to see on top.
"""

from __future__ import annotations

from ..debezium.config import PROPERTIES, ConnectorConfig
from ..debezium.property_table import ALIAS

__all__ = ["DEBEZIUM_DEFAULTS", "differences_from_debezium"]

# Debezium's own defaults where sparkcdc's differ (the property table keeps sparkcdc's).
DEBEZIUM_DEFAULTS: dict[str, str | None] = {name: prop.default for name, prop in PROPERTIES.items()} | {"plugin.name": "decoderbufs"}


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

    Secrets (password properties, names ``custom.sanitize.pattern`` matches) are shown masked; ``skip`` leaves out what a summary already shows elsewhere.
    """
    rows = []
    for name, prop in PROPERTIES.items():
        if name in skip or prop.status == ALIAS:
            continue  # an alias shows as the current property it was translated to
        value = config.given(name)
        if value is None or value == "":
            continue
        default = DEBEZIUM_DEFAULTS.get(name)
        if _normalized(name, value) == _normalized(name, default):
            continue
        rows.append((name, "********" if config.is_secret(name) else value, default))
    return rows
