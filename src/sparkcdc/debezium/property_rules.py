"""Rules across properties: the combinations a configuration may not hold, declared in one table.

A property's own check (:mod:`.property_table`) sees only its value; these see the configuration.
Each rule names the property the error names (the one to change) and says why in words a user can
act on. :class:`~sparkcdc.debezium.config.ConnectorConfig` checks every rule as it is built, after
the values themselves passed, so a run, ``sparkcdc validate`` and a Spark source all refuse the same
configuration the same way, before anything connects. ``docs/properties.md`` lists them (generated
from :data:`RULES`, like the property table).

What depends on names sparkcdc derives (the slot and publication names of several streams) is
checked where those names are made (:mod:`sparkcdc.engine.core.stream_slots`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from .property_table import split_list

__all__ = ["RULES", "PropertyRule", "broken_rule"]

DECODE_PROCESSES = "sparkcdc.stream.decode.processes"
CHUNK_MESSAGES = "sparkcdc.stream.decode.chunk.messages"
SLOTS = "sparkcdc.stream.slots"
ASSIGNMENT = "sparkcdc.stream.slots.assignment"


class ConnectorConfig(Protocol):
    """What a rule reads of :class:`sparkcdc.debezium.config.ConnectorConfig` (which checks the
    rules as it is built, so this module cannot import it)."""

    @property
    def settings(self) -> Any: ...

    @property
    def post_processors(self) -> Any: ...

    def setting(self, name: str) -> Any: ...

    def given(self, name: str) -> bool: ...


@dataclass(frozen=True)
class PropertyRule:
    """A combination refused: when ``broken(config)``, the error names ``prop`` and says ``reason(config)``.

    ``summary`` is the rule as the docs list it."""

    prop: str
    summary: str
    broken: Callable[[ConnectorConfig], bool]
    reason: Callable[[ConnectorConfig], str]


def _listed(config: ConnectorConfig, name: str) -> list[str]:
    return [item.lower() for item in split_list(config.setting(name))]


def _decoders(config: ConnectorConfig) -> int | None:
    """The decoding processes asked for; None for auto (sparkcdc then leaves them at 1 where a rule would break)."""
    given = config.settings.sparkcdc_stream_decode_processes
    return None if given is None else int(given)


def _several_decoders(config: ConnectorConfig) -> bool:
    return (_decoders(config) or 1) > 1


def _slots(config: ConnectorConfig) -> int:
    return int(config.settings.sparkcdc_stream_slots)


def _signal_table(config: ConnectorConfig) -> bool:
    return bool((config.settings.signal_data_collection or "").strip())


def _autocreate(config: ConnectorConfig) -> str:
    return str(config.settings.publication_autocreate_mode)


def _include_and_exclude(prefix: str) -> PropertyRule:
    return PropertyRule(
        f"{prefix}.exclude.list", f"`{prefix}.include.list` and `{prefix}.exclude.list` exclude each other (as in Debezium)",
        lambda c: bool(c.setting(f"{prefix}.include.list")) and bool(c.setting(f"{prefix}.exclude.list")),
        lambda c: f"cannot be combined with {prefix}.include.list")


#: Every rule, in the order they are checked (the first broken one is the error).
RULES: tuple[PropertyRule, ...] = (
    *(_include_and_exclude(prefix) for prefix in ("table", "schema", "column", "message.prefix")),
    PropertyRule(
        "signal.kafka.bootstrap.servers", "the kafka signal channel needs `signal.kafka.bootstrap.servers`",
        lambda c: "kafka" in _listed(c, "signal.enabled.channels") and not c.setting("signal.kafka.bootstrap.servers"),
        lambda c: "is required with the kafka signal channel (signal.enabled.channels)"),
    PropertyRule(
        CHUNK_MESSAGES, f"`{CHUNK_MESSAGES}` not with `{DECODE_PROCESSES}=1`",
        lambda c: _decoders(c) == 1 and c.given(CHUNK_MESSAGES),
        lambda c: f"sizes what each decoding process is given, but {DECODE_PROCESSES}=1: there are none; set "
                  f"{DECODE_PROCESSES} or drop it"),
    PropertyRule(
        DECODE_PROCESSES, f"`{DECODE_PROCESSES}` above 1 not with the signal table (`signal.data.collection`)",
        lambda c: _several_decoders(c) and _signal_table(c),
        lambda c: f"{DECODE_PROCESSES}={_decoders(c)} cannot follow the signal table (signal.data.collection) and the "
                  "incremental snapshots' windows, which act on the stream in order: drop one of them"),
    PropertyRule(
        DECODE_PROCESSES, f"`{DECODE_PROCESSES}` above 1 not with `include.schema.changes=true`",
        lambda c: _several_decoders(c) and bool(c.settings.include_schema_changes),
        lambda c: f"{DECODE_PROCESSES}={_decoders(c)} cannot follow the tables' shapes for include.schema.changes=true "
                  "(each schema change is known only from the Relation messages before it, in WAL order): drop one of them"),
    PropertyRule(
        DECODE_PROCESSES, f"`{DECODE_PROCESSES}` above 1 not with `post.processors`",
        lambda c: _several_decoders(c) and bool(c.post_processors),
        lambda c: f"{DECODE_PROCESSES}={_decoders(c)} cannot run post.processors (they read rows again through the stream "
                  "task's connection, before the records are encoded): drop one of them"),
    PropertyRule(
        ASSIGNMENT, f"`{ASSIGNMENT}` only with `{SLOTS}` above 1",
        lambda c: _slots(c) == 1 and bool(c.settings.sparkcdc_stream_slots_assignment),
        lambda c: f"places tables on slots, but {SLOTS}=1: there is only one; set {SLOTS} or drop it"),
    PropertyRule(
        SLOTS, f"`{SLOTS}` above 1 needs `publication.autocreate.mode=filtered` or `disabled`",
        lambda c: _slots(c) > 1 and _autocreate(c) in ("all_tables", "no_tables"),
        lambda c: f"{SLOTS}={_slots(c)} splits the tables over {_slots(c)} publications, but publication.autocreate.mode="
                  f"{_autocreate(c)} publishes {'every' if _autocreate(c) == 'all_tables' else 'no'} table in each: use "
                  "publication.autocreate.mode=filtered (or disabled, with publications made by hand)"),
    PropertyRule(
        ASSIGNMENT, f"`{ASSIGNMENT}` not with `publication.autocreate.mode=disabled`",
        lambda c: _slots(c) > 1 and _autocreate(c) == "disabled" and bool(c.settings.sparkcdc_stream_slots_assignment),
        lambda c: "with publication.autocreate.mode=disabled the publications made by hand decide which table each slot "
                  "streams: drop the assignment"),
    PropertyRule(
        SLOTS, f"`{SLOTS}` above 1 not with the signal table (`signal.data.collection`)",
        lambda c: _slots(c) > 1 and _signal_table(c),
        lambda c: f"signals through the signal table (signal.data.collection) and the incremental and blocking snapshots "
                  f"they start are not supported with {SLOTS}={_slots(c)}: their watermarks and the tables' changes would "
                  "be in different streams"),
    PropertyRule(
        SLOTS, f"`{SLOTS}` above 1 only with the `source` signal channel",
        lambda c: _slots(c) > 1 and any(channel != "source" for channel in _listed(c, "signal.enabled.channels")),
        lambda c: f"signal.enabled.channels={c.settings.signal_enabled_channels}: signals (and the incremental and "
                  f"blocking snapshots they start) are not supported with {SLOTS}={_slots(c)}"),
)


def broken_rule(config: ConnectorConfig) -> tuple[PropertyRule, str] | None:
    """The first rule ``config`` breaks, with its reason; None when it keeps them all."""
    for rule in RULES:
        if rule.broken(config):
            return rule, rule.reason(config)
    return None
