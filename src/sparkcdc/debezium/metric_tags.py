"""``custom.metric.tags``: tags Debezium appends to its metrics MBean names, here labels of the metrics.

Debezium reads ``k1=v1,k2=v2`` (entries split at commas, key and value at ``=``, both trimmed) and
appends the pairs, in order, to each MBean name::

    debezium.postgres:type=connector-metrics,context=streaming,server=<topic.prefix>,k1=v1,k2=v2

so that monitoring can find a connector by tags that do not change with its configuration. sparkcdc
has no MBeans: its metrics are the Prometheus exposition and the JSON attributes
(:mod:`sparkcdc.spark.metrics`). A JMX exporter turns an MBean name's key properties into labels, so
each tag becomes a label of every sample there, named as the exporter names labels (characters a
label name cannot hold become ``_``); the JSON carries the tags and the MBean names as Debezium
builds them.

Refused here, naming the property: an entry that is not one ``key=value`` pair (Debezium's own check);
a key that an MBean name cannot hold (``:``, ``*``, ``?``, quotes, ...) or that would become a label
sparkcdc's samples already have (``plugin``, ``name``, ``context``, ``table``, ``wal_status``), or two
keys that would become one label. A key given twice keeps its last value with a warning, as Debezium.
"""

from __future__ import annotations

import re

from ..errors import ConfigurationError

__all__ = ["PROPERTY", "RESERVED_LABELS", "mbean_name", "metric_tags", "metric_tags_problem", "prometheus_labels"]

PROPERTY = "custom.metric.tags"
#: The labels sparkcdc's own samples carry: a tag may not take one of their names.
RESERVED_LABELS = frozenset({"plugin", "name", "context", "table", "wal_status"})
_MBEAN_KEY_FORBIDDEN = re.compile(r"[:,=*?\"\n]")


def metric_tags(raw: str | None, warnings: list[str] | None = None) -> dict[str, str]:
    """The tags in order (a key given twice: its last value, with a warning in ``warnings``); raises
    :class:`ConfigurationError` naming the property for what the module docstring says is refused."""
    tags, problem, notes = _parse(raw)
    if problem is not None:
        raise ConfigurationError(problem, prop=PROPERTY)
    if warnings is not None:
        warnings.extend(notes)
    return tags


def metric_tags_problem(raw: str) -> str | None:
    """The property table's check: what is wrong with ``raw``, or None."""
    return _parse(raw)[1]


def prometheus_labels(tags: dict[str, str]) -> dict[str, str]:
    """Label name -> value for each tag, in order (the names checked by :func:`metric_tags`)."""
    return {_label_name(key): value for key, value in tags.items()}


def mbean_name(context: str, server: str, tags: dict[str, str]) -> str:
    """Debezium's MBean name of the connector metrics of ``context`` (snapshot, streaming), tags appended."""
    return ",".join([f"debezium.postgres:type=connector-metrics,context={context},server={server}",
                     *(f"{key}={value}" for key, value in tags.items())])


def _label_name(key: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_]", "_", key)
    return f"_{name}" if name[:1].isdigit() else name


def _parse(raw: str | None) -> tuple[dict[str, str], str | None, list[str]]:
    tags: dict[str, str] = {}
    notes: list[str] = []
    for entry in (raw or "").split(","):
        if not entry.strip():
            continue
        parts = [part.strip() for part in entry.split("=")]
        if len(parts) != 2 or not parts[0]:
            return tags, f"{entry.strip()!r} is not a key=value pair (the format is k1=v1,k2=v2)", notes
        key, value = parts
        bad = _MBEAN_KEY_FORBIDDEN.search(key)
        if bad is not None:
            return tags, f"the key {key!r} cannot be part of an MBean name (it holds {bad.group()!r})", notes
        label = _label_name(key)
        if label in RESERVED_LABELS or label.startswith("__"):
            return tags, f"the key {key!r} would be the label {label!r}, which the metrics already have or Prometheus reserves", notes
        if key in tags:
            notes.append(f"{PROPERTY}: the key {key!r} is given twice; its last value, {value!r}, is used (as Debezium does)")
        else:
            clash = next((other for other in tags if _label_name(other) == label), None)
            if clash is not None:
                return tags, f"the keys {clash!r} and {key!r} would both be the label {label!r}", notes
        tags[key] = value
    return tags, None, notes
