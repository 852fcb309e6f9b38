"""From Spark's data source options to a connector configuration, and back.

Spark lower-cases option names, which loses information Debezium's names carry
(``database.tcpKeepAlive``, the salt in ``column.mask.hash.SHA-256.with.salt.<salt>``). So the whole
configuration can travel as one JSON option, ``sparkcdc.config``, whose content keeps its case;
plain options are accepted too and mapped back to Debezium's names where the name is known.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..debezium.config import PROPERTIES, ConnectorConfig, report_warnings

__all__ = ["CONFIG_OPTION", "config_from_options", "options_for"]

CONFIG_OPTION = "sparkcdc.config"
_CANONICAL = {name.lower(): name for name in PROPERTIES}


def options_for(properties: Mapping[str, Any]) -> dict[str, str]:
    """Data source options carrying ``properties`` intact."""
    return {CONFIG_OPTION: json.dumps({str(k): str(v) for k, v in properties.items()})}


def config_from_options(options: Mapping[str, str]) -> ConnectorConfig:
    properties: dict[str, str] = {}
    for key, value in options.items():
        if key.lower() == CONFIG_OPTION:
            continue
        properties[_CANONICAL.get(key.lower(), key)] = value
    for key, value in options.items():
        if key.lower() == CONFIG_OPTION:
            properties.update(json.loads(value))  # case-preserving; wins over plain options
    config = ConnectorConfig(properties)
    report_warnings(config)  # deprecated names, settings without effect here: once per process
    return config
