"""What ``snapshot.mode`` decides: whether a snapshot is taken, and whether streaming follows it.

The planner asks at a new query's start (``fresh``), at a restart, and when a checkpointed slot is
found missing; the answers depend on the configuration and on whether the slot's changes can still
be read, nothing else, so they are decided here, without a server.
"""

from __future__ import annotations

from ...debezium.config import ConnectorConfig

__all__ = ["streams_after_snapshot", "takes_snapshot"]


def takes_snapshot(config: ConnectorConfig, *, fresh: bool, slot_lost: bool = True) -> bool:
    """Whether an initial snapshot is taken: for a new query (``fresh``), or at a restart, where
    ``slot_lost`` says a stream's slot is gone or invalidated (its changes since the checkpoint lost)."""
    mode = config.settings.snapshot_mode
    if mode == "configuration_based":
        return fresh and config.settings.snapshot_mode_configuration_based_snapshot_data
    if mode in ("initial", "initial_only"):
        return fresh
    if mode == "always":
        return True
    if mode == "when_needed":
        return fresh or slot_lost
    return False  # no_data


def streams_after_snapshot(config: ConnectorConfig) -> bool:
    """Whether the connector streams changes (after its snapshot, if it takes one)."""
    mode = config.settings.snapshot_mode
    if mode == "initial_only":
        return False
    if mode == "configuration_based":
        return config.settings.snapshot_mode_configuration_based_start_stream
    return True
