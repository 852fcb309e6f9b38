"""From Spark's data source options to a connector configuration, and back.

Options can be given one by one (``.option("database.hostname", ...)``, ``.options(**properties)``)
or as one JSON option, ``sparkcdc.config``, which ``options_for`` builds. Values always arrive as
given. Names do not: PySpark hands a Python data source its options in a ``CaseInsensitiveDict``,
which keeps them in lower case. So a plain option's name is matched case-insensitively against the
known properties (``database.tcpkeepalive`` is ``database.tcpKeepAlive``), and a name that embeds a
table, ``snapshot.select.statement.overrides.<schema>.<table>``, takes the table's case from the
list of ``snapshot.select.statement.overrides`` (a value: its case is kept). What cannot be
recovered, the salt of ``column.mask.hash.<algorithm>.with.salt.<salt>``, is warned about when Spark
lowered it: such a property belongs in ``sparkcdc.config``, whose content keeps its case.

Spark adds options of its own to the map a data source gets: ``path`` (``load(path)``, ``start(path)``)
and, for a writer, ``checkpointLocation`` and ``queryName``. They are Spark's, not the connector's,
and are left out here; every other name goes to :class:`ConnectorConfig`, which reports a name it does
not know (with the closest known one) or, under ``sparkcdc.strict``, refuses it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ...debezium.config import PROPERTIES, ConnectorConfig, report_warnings
from ...debezium.property_table import split_list
from ...errors import ConfigurationError

__all__ = ["CONFIG_OPTION", "SPARK_OPTIONS", "config_from_options", "options_for", "properties_from_options"]

CONFIG_OPTION = "sparkcdc.config"
#: Options Spark itself puts in a data source's options (lower case, as PySpark hands them over).
SPARK_OPTIONS = frozenset({"path", "checkpointlocation", "queryname"})
_CANONICAL = {name.lower(): name for name in PROPERTIES}
_OVERRIDES = "snapshot.select.statement.overrides"
_SALT = re.compile(r"column\.mask\.hash\..+?\.with\.salt\.(.+)", re.IGNORECASE)


def options_for(properties: Mapping[str, Any]) -> dict[str, str]:
    """Data source options carrying ``properties`` intact."""
    return {CONFIG_OPTION: json.dumps({str(k): str(v) for k, v in properties.items()})}


def properties_from_options(options: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """The connector properties the options carry, and warnings about names whose case was lost.

    ``sparkcdc.config`` (JSON) wins over plain options of the same property.
    """
    plain = {key: value for key, value in options.items() if key.lower() != CONFIG_OPTION and key.lower() not in SPARK_OPTIONS}
    given: dict[str, str] = {}
    for key, value in options.items():
        if key.lower() == CONFIG_OPTION:
            given.update(json.loads(value))
    listed = given.get(_OVERRIDES)
    if listed is None:
        listed = next((value for key, value in plain.items() if key.lower() == _OVERRIDES), None)
    lowered = _lowers_names(options)
    properties: dict[str, str] = {}
    warnings: list[str] = []
    for key, value in plain.items():
        name = _CANONICAL.get(key.lower()) or _with_table_case(key, split_list(listed)) or key
        salt = _SALT.fullmatch(name)
        if lowered and salt and salt.group(1).lower() != salt.group(1).upper():
            warnings.append(f"{name}: Spark passes data source option names in lower case, so the salt here is the "
                            "lower-case one; if the salt has capitals, give this property in the sparkcdc.config "
                            "option (sparkcdc.spark.source.options.options_for), which keeps its case")
        properties[name] = value
    properties.update(given)
    return properties, warnings


def config_from_options(options: Mapping[str, str]) -> ConnectorConfig:
    properties, warnings = properties_from_options(options)
    config = ConnectorConfig(properties)
    config.warnings.extend(warnings)
    report_warnings(config)  # deprecated names, settings without effect here: once per process
    return config


def _with_table_case(key: str, listed: list[str]) -> str | None:
    """``snapshot.select.statement.overrides.<schema>.<table>`` with the case of its table as listed."""
    prefix = _OVERRIDES + "."
    if not key.lower().startswith(prefix):
        return None
    table = key[len(prefix):]
    matches = sorted({entry for entry in listed if entry.lower() == table.lower()})
    if len(matches) > 1:
        raise ConfigurationError(f"Spark passes option names in lower case, and {' and '.join(matches)} (listed in {_OVERRIDES}) "
                               "differ only in case: give these properties in the sparkcdc.config option, which keeps their case", prop=key)
    return prefix + matches[0] if matches else None


def _lowers_names(options: Mapping[str, str]) -> bool:
    """Whether ``options`` came through PySpark, which keeps option names in lower case."""
    from pyspark.sql.datasource import CaseInsensitiveDict

    return isinstance(options, CaseInsensitiveDict)
