"""``sparkcdc signal``: a Debezium signal built from options, checked, and sent through a channel.

The signal is built as Debezium documents it (``data-collections``, ``type``,
``additional-conditions``, ``surrogate-key``; ``message`` for ``log``) and parsed with the same
code the connector acts with (:func:`sparkcdc.engine.core.signals.parse_action`), so a signal the
connector would reject is refused here, before it is sent. It goes through a channel the
configuration enables (``signal.enabled.channels``): sending through one the connector does not read
would be a signal nobody acts on.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..debezium.config import ConnectorConfig
from ..engine.core.signals import Signal, SignalError, enabled_channels, parse_action
from ..engine.signal_channels import open_channel
from ..errors import ConfigurationError

__all__ = ["ACTIONS", "build_signal", "send"]

ACTIONS = ("execute-snapshot", "stop-snapshot", "pause-snapshot", "resume-snapshot", "log")


def build_signal(
    action: str, *, signal_id: str, tables: Sequence[str] = (), kind: str = "incremental", conditions: Sequence[str] = (),
    surrogate_key: str | None = None, message: str | None = None,
) -> Signal:
    """The signal the options ask for; :class:`ConfigurationError` naming the option at fault."""
    if action not in ACTIONS:
        raise ConfigurationError(f"unknown signal {action!r}; one of {', '.join(ACTIONS)}", prop="ACTION")
    data: dict[str, Any] = {}
    if action in ("execute-snapshot", "stop-snapshot"):
        if action == "execute-snapshot" and not tables:
            raise ConfigurationError("execute-snapshot needs the tables to snapshot (schema.table patterns)", prop="--tables")
        data["data-collections"] = list(tables)
        data["type"] = kind
        if conditions:
            data["additional-conditions"] = [_condition(text) for text in conditions]
        if surrogate_key:
            data["surrogate-key"] = surrogate_key
    elif action == "log":
        if message is None:
            raise ConfigurationError("a log signal needs its --message", prop="--message")
        data["message"] = message
    applies = (("--tables", tables, action in ("execute-snapshot", "stop-snapshot")),
               ("--condition", conditions, action == "execute-snapshot"),
               ("--surrogate-key", surrogate_key, action == "execute-snapshot"),
               ("--message", message, action == "log"))
    unused = [name for name, given, used in applies if given and not used]
    if unused:
        raise ConfigurationError(f"{', '.join(unused)} does not apply to a {action} signal", prop=unused[0])
    signal = Signal(signal_id, action, json.dumps(data), "cli")
    try:
        parse_action(signal)
    except SignalError as exc:
        raise ConfigurationError(str(exc)) from None
    return signal


def _condition(text: str) -> dict[str, str]:
    """``public.a=id > 5``: the table pattern, then the first ``=``, then the SQL predicate."""
    table, sep, predicate = text.partition("=")
    if not sep or not table.strip() or not predicate.strip():
        raise ConfigurationError(f"{text!r} must be <schema.table>=<SQL predicate>, e.g. 'public.a=id > 5'", prop="--condition")
    return {"data-collection": table.strip(), "filter": predicate.strip()}


def send(config: ConnectorConfig, signal: Signal, channel: str | None = None) -> tuple[str, str]:
    """Send ``signal`` through ``channel`` (default: the first enabled); returns (channel, where it went)."""
    enabled = enabled_channels(config)
    name = channel or (enabled[0] if enabled else None)
    if name is None or name not in enabled:
        raise ConfigurationError(f"the connector does not read the {name} channel (signal.enabled.channels={','.join(enabled)}); "
                                 "a signal sent there would not be acted on", prop="--channel")
    opened = open_channel(config, name)
    try:
        return name, opened.send(Signal(signal.id, signal.type, signal.data, name))
    finally:
        opened.close()
