"""Typed settings: one frozen object per configuration, generated from the property table.

``config.settings.slot_name`` instead of ``config.get("slot.name") or "debezium"``: the attribute
names, types and defaults all come from :data:`~sparkcdc.debezium.property_table.PROPERTIES`, so a
default is written in one place only. Attribute names are the property names in snake case
(``database.tcpKeepAlive`` -> ``database_tcpkeepalive``); aliases have none (they are translated
into the current properties first). Types by kind: ``int`` -> int, ``bool`` -> bool, ``list`` ->
tuple of str, ``regex_list`` -> tuple of compiled patterns (Debezium's: case-insensitive, matched in
full), enums -> lower-case str, anything else -> str, or None where the property has no default.
"""

from __future__ import annotations

import re
from dataclasses import make_dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .property_table import ALIAS, PROPERTIES, Property, compile_patterns, split_list

__all__ = ["PropertyValues", "Settings", "attribute_name", "settings_of"]


class PropertyValues(Protocol):
    """What the settings are read from: a property's value, its default applied (a validated
    :class:`~sparkcdc.debezium.config.ConnectorConfig`)."""

    def get(self, name: str) -> str | None: ...


def attribute_name(name: str) -> str:
    """``slot.max.retries`` -> ``slot_max_retries``."""
    return re.sub(r"[^0-9a-z]+", "_", name.lower())


#: ``count_or_auto``: a count, or None for ``auto`` (sparkcdc sizes it).
_TYPES: dict[str, Any] = {"int": int, "count_or_auto": int | None, "bool": bool, "list": tuple, "regex_list": tuple}
_FIELDS = {attribute_name(p.name): p for p in PROPERTIES.values() if p.status != ALIAS}

if TYPE_CHECKING:
    class Settings:
        """Attribute per property (generated at import; checkers see any attribute)."""

        def __getattr__(self, name: str) -> Any: ...
else:
    Settings = make_dataclass(
        "Settings",
        [(attr, _TYPES.get(p.kind, str | None)) for attr, p in _FIELDS.items()],
        frozen=True,
        slots=True,
    )
    Settings.__module__ = __name__
    Settings.__doc__ = "The configuration's properties as typed attributes (see the module docstring)."


def _typed(prop: Property, value: str | None) -> Any:
    if prop.kind == "int":
        return int(value) if value is not None else None
    if prop.kind == "count_or_auto":
        return None if value is None or value.strip().lower() == "auto" else int(value)
    if prop.kind == "bool":
        return value is not None and value.strip().lower() == "true"
    if prop.kind == "list":
        return tuple(split_list(value))
    if prop.kind == "regex_list":
        return tuple(compile_patterns(value))
    return value


def settings_of(config: PropertyValues) -> Settings:
    """The typed settings of a validated configuration (``config.settings`` caches this)."""
    return Settings(**{attr: _typed(prop, config.get(prop.name)) for attr, prop in _FIELDS.items()})
