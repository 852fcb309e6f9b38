"""Signal channels (``signal.enabled.channels``): where signals come from, and where ``sparkcdc signal`` sends them.

* ``source``: rows of the signal table, through the WAL (read by the stream task, not polled here);
* ``file``: lines of ``signal.file`` (:mod:`.file`);
* ``kafka``: messages of ``signal.kafka.topic`` (:mod:`.kafka`).

The driver polls ``file`` and ``kafka`` when it plans a streaming batch, at most every
``signal.poll.interval.ms`` (Debezium's signal processor polls on that period too); their positions
travel in the batch's end offset (see :mod:`.base` for why that makes each signal act exactly once).
"""

from __future__ import annotations

from ...debezium.config import ConnectorConfig
from ..core.signals import enabled_channels
from .base import PolledChannel, SignalChannel, SignalSendError, signal_from_json, signal_to_json

__all__ = [
    "PolledChannel",
    "SignalChannel",
    "SignalSendError",
    "open_channel",
    "polled_channels",
    "signal_from_json",
    "signal_to_json",
]


def open_channel(config: ConnectorConfig, name: str) -> SignalChannel:
    """The channel ``name`` of this configuration (its settings checked; nothing connected yet)."""
    if name == "file":
        from .file import FileSignalChannel

        return FileSignalChannel(config.settings.signal_file)
    if name == "kafka":
        from .kafka import KafkaSignalChannel

        return KafkaSignalChannel(config)
    if name == "source":
        from .source import SourceSignalChannel

        return SourceSignalChannel(config)
    raise ValueError(f"no signal channel {name!r}")


def polled_channels(config: ConnectorConfig) -> dict[str, PolledChannel]:
    """The enabled channels the driver polls, by name, in ``signal.enabled.channels`` order."""
    out: dict[str, PolledChannel] = {}
    for name in enabled_channels(config):
        if name != "source":
            channel = open_channel(config, name)
            assert isinstance(channel, PolledChannel)
            out[name] = channel
    return out
