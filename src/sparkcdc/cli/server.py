"""The read-only connection of ``validate --connect`` and ``status``, from a connector configuration.

What they read, its SQL and why the connection is read-only: :mod:`sparkcdc.postgres.server_facts`.
"""

from __future__ import annotations

import math

import psycopg

from ..debezium.config import ConnectorConfig
from ..engine.connection import conninfo_from_config
from ..postgres import server_facts
from ..postgres.connections import setting_error

__all__ = ["connect_read_only"]


def connect_read_only(config: ConnectorConfig, *, connect_timeout: int | None = None) -> psycopg.Connection:
    """An autocommit connection to the configured database in which every transaction is read-only.

    It waits ``connect_timeout`` seconds for the server, by default ``connection.validation.timeout.ms``
    (what Debezium waits for its connection check when a connector is validated), in whole seconds:
    libpq's ``connect_timeout`` has no finer unit."""
    if connect_timeout is None:
        connect_timeout = max(1, math.ceil(config.settings.connection_validation_timeout_ms / 1000))
    conninfo = conninfo_from_config(config)
    try:
        return server_facts.connect_read_only(conninfo, connect_timeout=connect_timeout)
    except psycopg.OperationalError as exc:  # refused for a setting: an error naming its property
        raise setting_error(str(exc), conninfo) or exc from None
