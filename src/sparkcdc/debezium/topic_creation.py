"""Kafka Connect's topic creation settings (``topic.creation.*``), read as a source connector reads them.

A Debezium configuration often says how Kafka Connect should create the topics it writes::

    topic.creation.default.replication.factor=3
    topic.creation.default.partitions=6
    topic.creation.default.cleanup.policy=compact
    topic.creation.groups=logs
    topic.creation.logs.include=srv\\.public\\.log_.*
    topic.creation.logs.partitions=1
    topic.creation.logs.retention.ms=86400000

sparkcdc's ``kafka`` layout creates the topics it does not find: a topic takes the settings of the
first group listed in ``topic.creation.groups`` whose ``include`` patterns match its whole name and
whose ``exclude`` patterns do not (a group without ``partitions`` or ``replication.factor`` takes the
default group's), else those of the default group. ``topic.creation.default.partitions`` and
``.replication.factor`` are the same settings as ``sparkcdc.output.kafka.topic.partitions`` and
``.replication.factor``: either may be given, not two different values. Every other key of a group is
a topic-level setting (``cleanup.policy``, ``retention.ms``, ``compression.type``...) given to the
broker as it is. ``topic.creation.enable=false`` (Kafka Connect's worker setting) leaves all of it
unused, as Connect does.

Everything is checked when the configuration is built (:class:`~sparkcdc.debezium.config.ConnectorConfig`),
before anything connects; errors name the property. Only the ``kafka`` layout creates topics: with
another layout these settings do nothing, and :func:`unused_without_kafka` says so.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..errors import ConfigurationError

__all__ = ["TopicCreation", "TopicGroup", "topic_creation", "unused_without_kafka"]

_PREFIX = "topic.creation."
_GROUPS, _ENABLE = "topic.creation.groups", "topic.creation.enable"  # settings, not groups
_DEFAULT = "default"
_SIZES = {"partitions": "sparkcdc.output.kafka.topic.partitions", "replication.factor": "sparkcdc.output.kafka.topic.replication.factor"}


@dataclass(frozen=True)
class TopicGroup:
    """One group's settings: ``None`` sizes are the default group's; ``config`` is topic-level settings."""

    name: str
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    partitions: int | None = None
    replication_factor: int | None = None
    config: Mapping[str, str] = field(default_factory=dict)

    def matches(self, topic: str) -> bool:
        """Kafka Connect's test: an include pattern matches the whole name and no exclude pattern does."""
        return (any(re.fullmatch(p, topic) for p in self.include)
                and not any(re.fullmatch(p, topic) for p in self.exclude))


@dataclass(frozen=True)
class TopicCreation:
    """The default group (sizes ``None``: the ``sparkcdc.output.kafka.topic.*`` settings) and the
    other groups in the order ``topic.creation.groups`` lists them."""

    default: TopicGroup = field(default_factory=lambda: TopicGroup(_DEFAULT))
    groups: tuple[TopicGroup, ...] = ()

    def group_for(self, topic: str) -> TopicGroup:
        """The group whose settings a new ``topic`` takes."""
        return next((group for group in self.groups if group.matches(topic)), self.default)


def _patterns(prop: str, raw: str) -> tuple[str, ...]:
    patterns = tuple(part.strip() for part in raw.split(",") if part.strip())
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigurationError(f"{pattern!r} is not a valid regular expression: {exc}", prop=prop) from None
    return patterns


def _size(prop: str, raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise ConfigurationError(f"{raw!r} is not an integer", prop=prop) from None
    if value == 0 or value < -1:
        raise ConfigurationError(f"must be positive, or -1 for the broker's default, not {raw}", prop=prop)
    return value


def _group(name: str, settings: Mapping[str, str]) -> TopicGroup:
    prefix = f"{_PREFIX}{name}."
    include = _patterns(prefix + "include", settings.get("include", ""))
    exclude = _patterns(prefix + "exclude", settings.get("exclude", ""))
    if name != _DEFAULT and not include:
        raise ConfigurationError(f"is required: the topics (regular expressions) group {name!r} of topic.creation.groups "
                                 "applies to", prop=prefix + "include")
    sizes = {key: _size(prefix + key, settings[key]) for key in _SIZES if settings.get(key, "").strip()}
    config = {key: value for key, value in settings.items() if key not in ("include", "exclude", *_SIZES)}
    return TopicGroup(name, include, exclude, sizes.get("partitions"), sizes.get("replication.factor"), config)


def _given(raw: Mapping[str, str]) -> dict[str, str]:
    return {name: value for name, value in raw.items() if name.startswith(_PREFIX) and value != ""}


def topic_creation(raw: Mapping[str, str], warnings: list[str] | None = None) -> TopicCreation:
    """The topic creation settings of a configuration (Debezium property names); ``warnings`` gets a
    group configured but not listed in ``topic.creation.groups`` (Kafka Connect ignores it too)."""
    given = _given(raw)
    if (given.get(_ENABLE) or "true").strip().lower() == "false":
        return TopicCreation()
    listed = [name.strip() for name in (given.get(_GROUPS) or "").split(",") if name.strip()]
    if _DEFAULT in listed:
        raise ConfigurationError("lists 'default', which is the group every topic no other group takes falls in: remove it", prop=_GROUPS)
    settings: dict[str, dict[str, str]] = {}
    for name, value in given.items():
        group, dot, key = name[len(_PREFIX):].partition(".")
        if not dot:
            continue  # topic.creation.groups / .enable
        if group == _DEFAULT or group in listed:
            settings.setdefault(group, {})[key] = value
        elif warnings is not None:
            warnings.append(f"{name}: configures topic creation group {group!r}, which topic.creation.groups does not list "
                            "(ignored)")
    default = _group(_DEFAULT, settings.get(_DEFAULT, {}))
    for key, ours in _SIZES.items():
        theirs = getattr(default, key.replace(".", "_"))
        mine = (raw.get(ours) or "").strip()
        if theirs is not None and mine and int(mine) != theirs:
            raise ConfigurationError(f"is {theirs}, but {ours} is {mine}: they are one setting, give one of them", prop=f"{_PREFIX}{_DEFAULT}.{key}")
    return TopicCreation(default, tuple(_group(name, settings.get(name, {})) for name in dict.fromkeys(listed)))


def unused_without_kafka(raw: Mapping[str, str], layout: str | None) -> list[str]:
    """What to warn about when ``topic.creation.*`` is set and the run's layout (one that creates no
    topics: the callers ask only then) is ``layout``: only the kafka layout creates topics (one
    message, naming the first such property)."""
    given = sorted(name for name in _given(raw) if name != _ENABLE)
    if not given:
        return []
    more = f" (and {len(given) - 1} more topic.creation.* properties)" if len(given) > 1 else ""
    return [f"{given[0]}: has no effect with sparkcdc.output.layout={layout}{more}: only the kafka layout creates topics "
            "(sparkcdc run --kafka)"]
