"""The post processors of a stream reader: the events of a batch, read again from the tables.

The streaming processor hands over each create and update event it makes (:meth:`PostProcessing.candidate`,
its ``post`` hook); after each run of messages the reader calls :meth:`PostProcessing.run`, which
passes the events through the configured post processors in order, as Debezium does (a later one
sees what an earlier one read): each decides which events need columns read again
(:class:`~.core.reselect.Reselector`), and their rows are read in one query per table, key columns and
run (:func:`sparkcdc.postgres.reselect.reselect_rows`), through the stream's own catalog connection.
The records are changed in place before they leave the reader, so everything after (transforms,
the layouts, views, apply_changes) sees the values read.
"""

from __future__ import annotations

import logging
from typing import Any

import psycopg

from ..debezium.config import ConnectorConfig
from ..debezium.records import ChangeRecord
from ..debezium.table import TableSchema, TableSchemaFactory
from ..errors import ServerError
from ..postgres.reselect import reselect_rows
from .core.reselect import Pending, Reselector

__all__ = ["PostProcessing", "post_processing"]

log = logging.getLogger(__name__)


def post_processing(config: ConnectorConfig, factory: TableSchemaFactory, conn: psycopg.Connection) -> PostProcessing | None:
    """The configured post processors (``post.processors``), or None when there are none."""
    specs = config.post_processors
    return PostProcessing([Reselector(spec, config, factory) for spec in specs], conn) if specs else None


class PostProcessing:
    def __init__(self, steps: list[Reselector], conn: psycopg.Connection) -> None:
        self.steps = steps
        self.conn = conn
        self._candidates: list[tuple[ChangeRecord, TableSchema, tuple[Any, ...]]] = []

    def candidate(self, record: ChangeRecord, table: TableSchema, values: tuple[Any, ...]) -> None:
        """The streaming processor's hook: an event just made, from the row ``values``."""
        self._candidates.append((record, table, values))

    def run(self) -> None:
        """Every post processor on the events handed over since the last run, in order."""
        candidates, self._candidates = self._candidates, []
        if not candidates:
            return
        for step in self.steps:
            for record, table, values in candidates:
                step.consider(record, table, values)
            self._read_again(step, step.take())

    def _read_again(self, step: Reselector, pending: list[Pending]) -> None:
        groups: dict[tuple[str, str, tuple[Any, ...]], list[Pending]] = {}
        for event in pending:
            if not event.key:
                step.not_found(event, "the table has no primary key (Debezium's query then has no condition and fails); "
                                      "set reselect.use.event.key=true with message.key.columns")
            elif any(value is None for value in event.key_values):
                step.not_found(event, "no row has a null key")
            else:
                groups.setdefault((event.table.schema_name, event.table.table_name, event.key), []).append(event)
        for (schema, table, key), events in groups.items():
            columns = list(dict.fromkeys(column for event in events for column in event.columns))
            keys = list(dict.fromkeys(event.key_values for event in events))
            try:
                rows = reselect_rows(self.conn, schema, table, [(k.name, k.type) for k in key], columns, keys)
            except ServerError as exc:
                for event in events:
                    step.not_found(event, str(exc))
                continue
            index = {values: position for position, values in enumerate(keys)}
            for event in events:
                found = rows.get(index[event.key_values])
                if not found:
                    step.not_found(event, "no such row in the table now")
                    continue
                if len(found) > 1:
                    log.warning("post processor %r: %d rows of %s.%s have the key %s; the first is used (as Debezium does)",
                                step.spec.name, len(found), schema, table, event.describe_key())
                step.fill(event, dict(zip(columns, found[0], strict=True)))
