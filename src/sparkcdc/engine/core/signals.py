"""Debezium signals: what an operator asks a running connector to do, parsed and checked.

A signal is a row ``(id, type, data)`` wherever it comes from (the signal table through the WAL,
the ``signal.file``, a Kafka topic, ``sparkcdc signal``); ``data`` is JSON text. This module turns a
signal into one action or a :class:`SignalError` whose message names the signal and what is wrong
with it. A bad signal is never fatal: the planner logs the error, notifies, and goes on (as
Debezium does), so nothing here raises for anything but the signal itself.

Pure: no I/O; which tables a pattern matches is decided by the caller's list of captured tables.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Union

from ...debezium.property_table import split_list
from ...errors import PipelineError

__all__ = [
    "ACTION_TYPES",
    "READ_AGAIN",
    "WINDOW_CLOSE",
    "WINDOW_OPEN",
    "ExecuteSnapshot",
    "LogMessage",
    "PauseSnapshot",
    "ResumeSnapshot",
    "Signal",
    "SignalAction",
    "SignalError",
    "StopSnapshot",
    "enabled_channels",
    "match_collections",
    "parse_action",
    "signal_table_of",
]

#: Watermark rows the connector itself writes to the signal table (never acted on as actions).
WINDOW_OPEN = "snapshot-window-open"
WINDOW_CLOSE = "snapshot-window-close"

ACTION_TYPES = ("execute-snapshot", "stop-snapshot", "pause-snapshot", "resume-snapshot", "log")
SNAPSHOT_KINDS = ("incremental", "blocking")


class SignalError(PipelineError):
    """A signal that cannot be acted on; the message names the signal (its id and type)."""


@dataclass(frozen=True)
class Signal:
    """One signal as sent: ``channel`` is where it came from (``source``, ``file``, ``kafka``)."""

    id: str
    type: str
    data: str | None
    channel: str = "source"

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "type": self.type, "data": self.data, "channel": self.channel}

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Signal:
        return cls(str(raw["id"]), str(raw["type"]), None if raw.get("data") is None else str(raw["data"]), str(raw.get("channel", "source")))

    def describe(self) -> str:
        return f"signal {self.id!r} ({self.type}, from the {self.channel} channel)"


@dataclass(frozen=True)
class ExecuteSnapshot:
    """``execute-snapshot``: ``collections`` are regular expressions over ``schema.table``;
    ``conditions`` pairs a collection pattern with a SQL predicate (``additional-conditions``)."""

    collections: tuple[str, ...]
    kind: str = "incremental"
    conditions: tuple[tuple[str, str], ...] = ()
    surrogate_key: str | None = None
    #: ``"read-again": true`` (sparkcdc's, which Debezium ignores): a table whose incremental snapshot
    #: is under way is read once more from its start after it, rather than taken as already asked
    #: for. What the apply layer sends when a table's rows hold values no WAL record carries (a
    #: column added with a volatile default): the chunks read before that must be read again.
    again: bool = False

    def condition_for(self, table: str) -> str | None:
        """The additional condition of ``table`` (``schema.table``), the first matching entry's."""
        for pattern, predicate in self.conditions:
            if _pattern(pattern).fullmatch(table):
                return predicate
        return None


@dataclass(frozen=True)
class StopSnapshot:
    """``stop-snapshot``: no collections means all of them."""

    collections: tuple[str, ...] = ()
    kind: str = "incremental"


@dataclass(frozen=True)
class PauseSnapshot:
    pass


@dataclass(frozen=True)
class ResumeSnapshot:
    pass


@dataclass(frozen=True)
class LogMessage:
    message: str


SignalAction = Union[ExecuteSnapshot, StopSnapshot, PauseSnapshot, ResumeSnapshot, LogMessage]


def parse_action(signal: Signal) -> SignalAction:
    """The action ``signal`` asks for; :class:`SignalError` if it is unknown or malformed."""
    kind = signal.type.strip().lower()
    if kind not in ACTION_TYPES:
        raise SignalError(f"{signal.describe()}: unknown signal type {signal.type!r}; known types: {', '.join(ACTION_TYPES)}")
    data = _data(signal)
    if kind == "log":
        message = data.get("message")
        if not isinstance(message, str):
            raise SignalError(f"{signal.describe()}: a log signal needs a \"message\" string in its data")
        return LogMessage(message)
    if kind == "pause-snapshot":
        return PauseSnapshot()
    if kind == "resume-snapshot":
        return ResumeSnapshot()
    snapshot_kind = str(data.get("type") or "incremental").lower()
    if snapshot_kind not in SNAPSHOT_KINDS:
        raise SignalError(f"{signal.describe()}: snapshot type {data.get('type')!r} is not one of {', '.join(SNAPSHOT_KINDS)}")
    collections = _collections(signal, data.get("data-collections"), required=kind == "execute-snapshot")
    if kind == "stop-snapshot":
        return StopSnapshot(collections, snapshot_kind)
    conditions = _conditions(signal, data, collections)
    surrogate = data.get("surrogate-key")
    if surrogate is not None and (not isinstance(surrogate, str) or not surrogate.strip()):
        raise SignalError(f"{signal.describe()}: \"surrogate-key\" must be a column name")
    again = data.get(READ_AGAIN, False)
    if not isinstance(again, bool):
        raise SignalError(f"{signal.describe()}: \"{READ_AGAIN}\" must be true or false")
    return ExecuteSnapshot(collections, snapshot_kind, conditions, surrogate.strip() if surrogate else None, again)


#: The execute-snapshot data field of :attr:`ExecuteSnapshot.again`.
READ_AGAIN = "read-again"


def match_collections(patterns: Sequence[str], tables: Sequence[tuple[str, str]]) -> tuple[list[tuple[str, str]], list[str]]:
    """The captured ``tables`` the patterns name (in the patterns' order), and the patterns that
    name none of them."""
    matched: list[tuple[str, str]] = []
    unmatched: list[str] = []
    for pattern in patterns:
        compiled = _pattern(pattern)
        hits = [t for t in tables if compiled.fullmatch(f"{t[0]}.{t[1]}")]
        if not hits:
            unmatched.append(pattern)
        matched.extend(t for t in hits if t not in matched)
    return matched, unmatched


def _data(signal: Signal) -> dict[str, Any]:
    if signal.data is None or not signal.data.strip():
        return {}
    try:
        data = json.loads(signal.data)
    except ValueError as exc:
        raise SignalError(f"{signal.describe()}: its data is not valid JSON ({exc}): {signal.data[:200]!r}") from None
    if not isinstance(data, dict):
        raise SignalError(f"{signal.describe()}: its data must be a JSON object, not {type(data).__name__}")
    return data


def _collections(signal: Signal, raw: Any, *, required: bool) -> tuple[str, ...]:
    if raw is None:
        if required:
            raise SignalError(f"{signal.describe()}: \"data-collections\" is missing (a list of schema.table patterns)")
        return ()
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not all(isinstance(item, str) for item in raw):
        raise SignalError(f"{signal.describe()}: \"data-collections\" must be a list of schema.table patterns")
    for item in raw:
        _check_pattern(signal, item)
    if required and not raw:
        raise SignalError(f"{signal.describe()}: \"data-collections\" is empty: there is nothing to snapshot")
    return tuple(item.strip() for item in raw)


def _conditions(signal: Signal, data: dict[str, Any], collections: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    out: list[tuple[str, str]] = []
    legacy = data.get("additional-condition")  # Debezium 2.0-2.3: one predicate for every collection
    if legacy is not None:
        if not isinstance(legacy, str):
            raise SignalError(f"{signal.describe()}: \"additional-condition\" must be a SQL predicate string")
        if legacy.strip():
            out.extend((pattern, legacy) for pattern in collections)
    entries = data.get("additional-conditions") or []
    if not isinstance(entries, list):
        raise SignalError(f"{signal.describe()}: \"additional-conditions\" must be a list of {{data-collection, filter}} objects")
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("data-collection"), str) or not isinstance(entry.get("filter"), str):
            raise SignalError(f"{signal.describe()}: each additional condition needs a \"data-collection\" and a \"filter\" string: {entry!r}")
        out.append((_check_pattern(signal, entry["data-collection"]).strip(), entry["filter"]))
    return tuple(out)


def _check_pattern(signal: Signal, item: str) -> str:
    """``item``, a data collection pattern of ``signal``; :class:`SignalError` if it does not compile
    (every pattern is checked here, so acting on the signal never meets an ``re.error``)."""
    try:
        _pattern(item)
    except re.error as exc:
        raise SignalError(f"{signal.describe()}: data collection {item!r} is not a valid regular expression: {exc}") from None
    return item


_QUOTED = re.compile(r'"((?:[^"]|"")*)"')


def _pattern(text: str) -> re.Pattern[str]:
    """A data collection pattern: a regular expression over ``schema.table``, or a name whose parts
    are double-quoted (``"public"."My.Table"``), taken literally."""
    text = text.strip()
    if text.startswith('"'):
        parts = []
        rest = text
        while rest:
            match = _QUOTED.match(rest)
            if match is None:
                break
            parts.append(match.group(1).replace('""', '"'))
            rest = rest[match.end():]
            if rest.startswith("."):
                rest = rest[1:]
            elif rest:
                break
        else:
            return re.compile(re.escape(".".join(parts)))
    return re.compile(text, re.IGNORECASE)


def enabled_channels(config: Any) -> list[str]:
    """``signal.enabled.channels`` in the order given (the property's check refuses unknown names)."""
    return [name.lower() for name in split_list(config.settings.signal_enabled_channels)]


def signal_table_of(config: Any) -> tuple[str, str] | None:
    """``signal.data.collection`` as (schema, table): ``schema.table`` (a leading database name, as
    Debezium also accepts, is dropped); None when unset."""
    raw = (config.settings.signal_data_collection or "").strip()
    if not raw:
        return None
    parts = [p.strip().strip('"') for p in raw.split(".")]
    if len(parts) not in (2, 3) or not all(parts):
        from ...errors import ConfigurationError

        raise ConfigurationError(f"signal.data.collection {raw!r} must name a table as <schema>.<table>", prop="signal.data.collection")
    return parts[-2], parts[-1]
