"""Building Debezium records: envelopes, source blocks, tombstones, key-change triples, truncates,
logical decoding messages, heartbeats, transaction metadata and notifications.

Pure functions of their inputs plus a clock, so a replay of the same changes builds the same records
except for the wall-clock fields (envelope ``ts_ms/ts_us/ts_ns``, and the heartbeat's ``ts_ms``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Final

from .config import ConnectorConfig
from .connect import string
from .names import TopicNamer
from .records import ChangeRecord, Header
from .schemas import (
    heartbeat_key_schema,
    heartbeat_value_schema,
    message_key_schema,
    message_value_schema,
    notification_key_schema,
    notification_value_schema,
    transaction_key_schema,
    transaction_value_schema,
)
from .table import TableSchema
from .types.text import encode_binary

__all__ = ["DEBEZIUM_COMPATIBLE_VERSION", "SOURCE_VERSION", "EventFactory", "notification_record", "sequence_text"]

DEBEZIUM_COMPATIBLE_VERSION = "3.6.3.Final"


def _source_version() -> str:
    from .. import __version__

    return f"{DEBEZIUM_COMPATIBLE_VERSION}-sparkcdc.{__version__}"


#: ``source.version``: the Debezium release whose events ours match, tagged with sparkcdc's version.
SOURCE_VERSION: Final = _source_version()


def sequence_text(last_commit_lsn: int | None, lsn: int | None) -> str:
    """``source.sequence``: a JSON array of two decimal strings (either may be null)."""
    first = "null" if last_commit_lsn is None else f'"{last_commit_lsn}"'
    second = "null" if lsn is None else f'"{lsn}"'
    return f"[{first},{second}]"


def notification_record(
    topic: str, id: str, kind: str, aggregate_type: str, additional_data: dict[str, str], timestamp: int,  # noqa: A002
    *, commit_lsn: int, ordinal: int,
) -> ChangeRecord:
    """A notification as Debezium's ``sink`` channel sends it: key ``{id}``, the notification as the
    value, no headers (not even the context headers every change event carries).

    A notification is no change: ``lsn`` is 0, and ``commit_lsn``/``ordinal`` are where the caller
    places it among the changes (sparkcdc: the start of the micro-batch that emits it).
    """
    value = {"id": id, "type": kind, "aggregate_type": aggregate_type, "additional_data": additional_data, "timestamp": timestamp}
    return ChangeRecord(
        topic, {"id": id}, notification_key_schema(), value, notification_value_schema(), commit_lsn=commit_lsn, ordinal=ordinal,
    )


class EventFactory:
    """Record construction for one connector configuration and database."""

    def __init__(
        self, config: ConnectorConfig, database: str, topics: TopicNamer, *, clock_ns: Callable[[], int] = time.time_ns
    ) -> None:
        self.config = config
        self.database = database
        self.topics = topics
        self.clock_ns = clock_ns
        self.server_name = config.topic_prefix
        self.tombstones = config.tombstones_on_delete
        self.context_headers: tuple[Header, ...] = ()
        self.binary_mode = config.text("binary.handling.mode")
        include = config.get_patterns("message.prefix.include.list")
        exclude = config.get_patterns("message.prefix.exclude.list")
        self._message_filter: Callable[[str], bool] = (
            (lambda prefix: any(p.fullmatch(prefix) for p in include)) if include
            else (lambda prefix: not any(p.fullmatch(prefix) for p in exclude))
        )
        # streamed_change's source block for the table and transaction of the last call, with its
        # two per-event fields (sequence, lsn) left None: each event copies it and fills them in.
        self._source_template: dict[str, Any] = {}
        self._source_table: TableSchema | None = None
        self._source_tx_id = -1
        self._source_ts_us = -1
        self._source_origin: str | None = None
        self._source_origin_lsn: int | None = None
        self._source_last_commit_lsn: int | None = None
        self._sequence_head = ""  # the source.sequence text up to the event's own LSN

    def set_run_id(self, run_id: str) -> None:
        """Debezium's ``__debezium.context.*`` headers (``extended.headers.enabled``) name the run."""
        if not self.config.get_bool("extended.headers.enabled"):
            self.context_headers = ()
            return
        schema = string()
        self.context_headers = (
            Header("__debezium.context.connectorLogicalName", self.server_name, schema, constant=True),
            Header("__debezium.context.taskId", "0", schema, constant=True),
            Header("__debezium.context.connectorName", "postgresql", schema, constant=True),
            Header("__debezium.context.runId", run_id, schema, constant=True),
        )

    # -- source block ----------------------------------------------------------------------------
    def source(
        self,
        *,
        schema: str,
        table: str,
        ts_us: int,
        snapshot: str | None = None,
        tx_id: int | None = None,
        lsn: int | None = None,
        last_commit_lsn: int | None = None,
        origin: str | None = None,
        origin_lsn: int | None = None,
        with_sequence: bool = True,
    ) -> dict[str, Any]:
        return {
            "version": SOURCE_VERSION,
            "connector": "postgresql",
            "name": self.server_name,
            "ts_ms": ts_us // 1000,
            "snapshot": snapshot or "false",
            "db": self.database,
            "sequence": sequence_text(last_commit_lsn, lsn) if with_sequence else None,
            "ts_us": ts_us,
            "ts_ns": ts_us * 1000,
            "schema": schema,
            "table": table,
            "txId": tx_id,
            "lsn": lsn,
            "xmin": None,
            "origin": origin,
            "origin_lsn": origin_lsn,
        }

    # -- data change events ----------------------------------------------------------------------
    def _envelope(self, op: str, before: Any, after: Any, source: dict[str, Any], transaction: Any) -> dict[str, Any]:
        now_ns = self.clock_ns()
        return {
            "before": before,
            "after": after,
            "source": source,
            "transaction": transaction,
            "op": op,
            "ts_ms": now_ns // 1_000_000,
            "ts_us": now_ns // 1000,
            "ts_ns": now_ns,
        }

    def change(
        self,
        table: TableSchema,
        op: str,
        key: Any,
        before: Any,
        after: Any,
        source: dict[str, Any],
        *,
        transaction: Any = None,
        headers: tuple[Header, ...] = (),
    ) -> ChangeRecord:
        """A c/u/d/r/t record. Truncates carry no key (Debezium sends a null key for them)."""
        return ChangeRecord(
            topic=table.topic,
            key=key,
            key_schema=None if op == "t" else table.key_schema,
            value=self._envelope(op, before, after, source, transaction),
            value_schema=table.envelope_schema,
            headers=headers + self.context_headers,
            op=op,
            schema=table.schema_name,
            table=table.table_name,
            table_schema=table,
        )

    def streamed_change(
        self,
        table: TableSchema,
        op: str,
        key: Any,
        before: Any,
        after: Any,
        lsn: int,
        last_commit_lsn: int | None,
        tx_id: int,
        ts_us: int,
        commit_lsn: int,
        ordinal: int,
        origin: str | None,
        origin_lsn: int | None,
        transaction: Any,
        headers: tuple[Header, ...],
    ) -> ChangeRecord:
        """:meth:`change` for a streamed event, positioned, in one call: this is the per-row hot path."""
        if (
            table is not self._source_table or tx_id != self._source_tx_id or ts_us != self._source_ts_us
            or origin != self._source_origin or origin_lsn != self._source_origin_lsn
            or last_commit_lsn != self._source_last_commit_lsn
        ):
            self._new_source_template(table, tx_id, ts_us, origin, origin_lsn, last_commit_lsn)
        source = self._source_template.copy()  # a copy keeps the keys' order
        source["sequence"] = f'{self._sequence_head}{lsn}"]'  # ["<last commit LSN>","<LSN>"] or [null,"<LSN>"]
        source["lsn"] = lsn
        now_ns = self.clock_ns()
        value = {
            "before": before,
            "after": after,
            "source": source,
            "transaction": transaction,
            "op": op,
            "ts_ms": now_ns // 1_000_000,
            "ts_us": now_ns // 1000,
            "ts_ns": now_ns,
        }
        return ChangeRecord(
            table.topic, key, None if op == "t" else table.key_schema, value, table.envelope_schema,
            headers + self.context_headers if headers else self.context_headers, op, table.schema_name, table.table_name,
            lsn, commit_lsn, ordinal, tx_id, ts_us, None, table,
        )

    def _new_source_template(
        self, table: TableSchema, tx_id: int, ts_us: int, origin: str | None, origin_lsn: int | None, last_commit_lsn: int | None
    ) -> None:
        self._source_template = {
            "version": SOURCE_VERSION,
            "connector": "postgresql",
            "name": self.server_name,
            "ts_ms": ts_us // 1000,
            "snapshot": "false",
            "db": self.database,
            "sequence": None,
            "ts_us": ts_us,
            "ts_ns": ts_us * 1000,
            "schema": table.schema_name,
            "table": table.table_name,
            "txId": tx_id,
            "lsn": None,
            "xmin": None,
            "origin": origin,
            "origin_lsn": origin_lsn,
        }
        self._source_table = table
        self._source_tx_id = tx_id
        self._source_ts_us = ts_us
        self._source_origin = origin
        self._source_origin_lsn = origin_lsn
        self._source_last_commit_lsn = last_commit_lsn
        self._sequence_head = f'["{last_commit_lsn}","' if last_commit_lsn is not None else '[null,"'

    def tombstone(self, table: TableSchema, key: Any, headers: tuple[Header, ...] = ()) -> ChangeRecord:
        return ChangeRecord(
            table.topic, key, table.key_schema, None, None, headers + self.context_headers,
            schema=table.schema_name, table=table.table_name,
        )

    def key_header(self, name: str, table: TableSchema, key: Any) -> Header:
        return Header(name, key, table.key_schema)

    # -- logical decoding messages ---------------------------------------------------------------
    def accepts_message_prefix(self, prefix: str) -> bool:
        return self._message_filter(prefix)

    def message(self, prefix: str, content: bytes, source: dict[str, Any], transaction: Any = None) -> ChangeRecord:
        value_schema = message_value_schema(self.binary_mode)
        now_ms = self.clock_ns() // 1_000_000
        value = {
            "op": "m",
            "ts_ms": now_ms,
            "source": source,
            "transaction": transaction,
            "message": {"prefix": prefix, "content": encode_binary(content, self.binary_mode)},
        }
        return ChangeRecord(
            topic=self.topics.message_topic(), key={"prefix": prefix}, key_schema=message_key_schema(), value=value,
            value_schema=value_schema, op="m", schema="", table="",
        )

    # -- heartbeats and transaction metadata -----------------------------------------------------
    def heartbeat(self) -> ChangeRecord:
        return ChangeRecord(
            topic=self.topics.heartbeat_topic(),
            key={"serverName": self.server_name},
            key_schema=heartbeat_key_schema(),
            value={"ts_ms": self.clock_ns() // 1_000_000},
            value_schema=heartbeat_value_schema(),
        )

    def transaction_record(
        self,
        status: str,
        tx_id: str,
        ts_ms: int,
        event_count: int | None = None,
        collections: list[tuple[str, int]] | None = None,
    ) -> ChangeRecord:
        value = {
            "status": status,
            "id": tx_id,
            "event_count": event_count,
            "data_collections": None if collections is None
            else [{"data_collection": name, "event_count": count} for name, count in collections],
            "ts_ms": ts_ms,
        }
        return ChangeRecord(
            topic=self.topics.transaction_topic(),
            key={"id": tx_id},
            key_schema=transaction_key_schema(),
            value=value,
            value_schema=transaction_value_schema(),
        )

