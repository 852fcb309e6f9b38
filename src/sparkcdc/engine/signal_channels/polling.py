"""The driver's polling of the signal channels it reads itself (``file``, ``kafka``): from the
position an offset's cursor holds, at most every ``signal.poll.interval.ms``.

A replayed batch is not planned again, so what a poll returned is acted on once: in the batch whose
end offset holds the new positions; a channel is acknowledged up to a position only when the batch
holding it commits.
"""

from __future__ import annotations

import time
from typing import Any

from ...debezium.config import ConnectorConfig
from ..core.signals import Signal
from . import polled_channels

__all__ = ["ChannelPolling"]


class ChannelPolling:
    """The polled channels of a configuration, by name, in ``signal.enabled.channels`` order."""

    def __init__(self, config: ConnectorConfig) -> None:
        self.channels = polled_channels(config)
        self.interval = config.settings.signal_poll_interval_ms / 1000
        self._due = 0.0

    def poll(self, cursor: dict[str, Any]) -> list[Signal]:
        """The signals of the channels after their positions in ``cursor`` (moved past them), in
        ``signal.enabled.channels`` order; nothing before ``signal.poll.interval.ms`` has passed."""
        if not self.channels or time.monotonic() < self._due:
            return []
        self._due = time.monotonic() + self.interval
        signals: list[Signal] = []
        for name, channel in self.channels.items():
            polled, position = channel.poll(cursor.get(name))
            if position is None:
                cursor.pop(name, None)
            else:
                cursor[name] = position
            signals += polled
        return signals

    def acknowledge(self, cursor: dict[str, Any] | None) -> None:
        """The positions of a committed batch's end: each channel may forget what is before its own."""
        for name, channel in self.channels.items():
            channel.acknowledge((cursor or {}).get(name))

    def close(self) -> None:
        for channel in self.channels.values():
            channel.close()
