"""Sending through the ``source`` channel: a row in the signal table (``signal.data.collection``).

The driver does not poll this channel: the row reaches the connector through the WAL, where the
stream task collects it (:mod:`sparkcdc.engine.core.snapshot_window`) and the planner acts on it.
"""

from __future__ import annotations

import psycopg

from ...debezium.config import ConnectorConfig
from ...errors import ConfigurationError
from ...postgres.incremental import insert_signal
from ...postgres.privileges import InsufficientPrivilegeError, describe_missing, table_access
from ...postgres.publications import qualified_name
from ..connection import sql_connection
from ..core.signals import Signal, signal_table_of
from .base import SignalChannel

__all__ = ["SourceSignalChannel"]


class SourceSignalChannel(SignalChannel):
    name = "source"

    def __init__(self, config: ConnectorConfig) -> None:
        table = signal_table_of(config)
        if table is None:
            raise ConfigurationError("is required to send through the source signal channel (the signal table)", prop="signal.data.collection")
        self.config = config
        self.table = table

    def send(self, signal: Signal) -> str:
        with sql_connection(self.config, autocommit=True, application_name="sparkcdc-signal") as conn:
            try:
                insert_signal(conn, self.table, signal.id, signal.type, signal.data)
            except psycopg.errors.InsufficientPrivilege:
                # The sender (database.user) writes the row: name what it lacks and the GRANT.
                access = table_access(conn, *self.table, ("INSERT",))
                if access is None or not access.missing:
                    raise
                raise InsufficientPrivilegeError(
                    f"the source channel inserts the signal into {access.sql_name}, and {describe_missing(access.missing)}: "
                    f"{' '.join(m.fix for m in access.missing)} (or send it through the file or kafka channel)",
                    fix=" ".join(m.fix for m in access.missing), prop="signal.data.collection", table=access.sql_name) from None
        return f"table {qualified_name(*self.table)}"
