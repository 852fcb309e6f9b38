"""What every signal channel is, and the JSON form signals take in the file and Kafka channels.

A channel the driver *polls* (:class:`PolledChannel`: ``file``, ``kafka``) answers
``poll(cursor) -> (signals, new_cursor)``. The cursor is a JSON-able position that the planner
keeps in the batch's end offset (``SourceOffset.signal_cursor[name]``), never anywhere else: the
signals a poll returned are acted on in the batch whose end offset holds the new cursor, so they
are acted on once when that offset is committed, and polled again (from the old cursor) when the
driver died before Spark logged it. ``acknowledge(cursor)`` is told once a batch holding the cursor
is committed. A channel a signal can be *sent* through (:class:`SignalChannel`, all three) has
``send(signal)`` for ``sparkcdc signal``.

A bad entry in a channel (not JSON, no ``type``) is logged and skipped, never raised: a signal must
not stop the pipeline (as in Debezium). Only a wrong configuration raises, when the channel is made.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from typing import Any

from ...errors import PipelineError
from ..core.signals import Signal, SignalError

__all__ = ["PolledChannel", "SignalChannel", "SignalSendError", "signal_from_json", "signal_to_json"]


class SignalSendError(PipelineError):
    """A signal could not be sent through its channel (the file cannot be written, Kafka refused it)."""


class SignalChannel(ABC):
    """A channel signals can be sent through (``sparkcdc signal``)."""

    name: str

    @abstractmethod
    def send(self, signal: Signal) -> str:
        """Send ``signal``; returns where it went, for the operator (``/path/signals.jsonl``)."""

    def close(self) -> None:
        """Release the channel's connections (none by default)."""
        return None


class PolledChannel(SignalChannel):
    """A channel the driver polls when it plans a batch."""

    @abstractmethod
    def poll(self, cursor: Any) -> tuple[list[Signal], Any]:
        """The signals after ``cursor`` (None: the channel's beginning), in order, and the cursor
        after them; the cursor given back unchanged when nothing was consumed. Never raises for
        what is in the channel, nor for a channel that cannot be reached now (it logs and waits)."""

    def acknowledge(self, cursor: Any) -> None:
        """A batch whose end offset holds ``cursor`` is committed (nothing to do by default)."""
        return None


def signal_from_json(text: str, *, channel: str, default_id: str) -> Signal:
    """A signal from one JSON object ``{"id": ..., "type": ..., "data": {...}}`` (Debezium's line of
    the file channel, and the value of a Kafka signal message).

    ``data`` is an object in Debezium's format; a string holding the JSON text is taken too (the
    signal table's form), and a missing ``data`` is none. ``id`` may be left out (Debezium's Kafka
    examples do): ``default_id`` names the signal's place in its channel then. :class:`SignalError`
    for anything else; what the data says is checked later, when the signal is acted on.
    """
    try:
        raw = json.loads(text)
    except ValueError as exc:
        raise SignalError(f"a signal from the {channel} channel is not valid JSON ({exc}): {text[:200]!r}") from None
    if not isinstance(raw, dict):
        raise SignalError(f"a signal from the {channel} channel must be a JSON object, not {type(raw).__name__}: {text[:200]!r}")
    kind = raw.get("type")
    if not isinstance(kind, str) or not kind.strip():
        raise SignalError(f"a signal from the {channel} channel has no \"type\": {text[:200]!r}")
    signal_id = raw.get("id")
    if signal_id is not None and not isinstance(signal_id, (str, int)):
        raise SignalError(f"a signal from the {channel} channel has an \"id\" that is not a string: {text[:200]!r}")
    data = raw.get("data")
    if data is not None and not isinstance(data, str):
        data = json.dumps(data)
    return Signal(default_id if signal_id in (None, "") else str(signal_id), kind, data, channel)


def signal_to_json(signal: Signal) -> str:
    """``signal`` as the file and Kafka channels carry it (and Debezium reads it): ``data`` an object."""
    data: Any = {}
    if signal.data is not None and signal.data.strip():
        try:
            data = json.loads(signal.data)
        except ValueError:
            data = signal.data
    return json.dumps({"id": signal.id, "type": signal.type, "data": data}, separators=(",", ":"))
