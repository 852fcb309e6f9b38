"""The streaming step: decoded pgoutput messages in, Debezium change records out.

A deterministic function of the message sequence (plus the wall clock for the envelope's own
timestamps): the same messages give the same records, which is what lets a Spark batch be replayed.
Transactions arrive whole and in commit order (sparkcdc reads with ``streaming`` off, so the server
spills large transactions to its own disk), so every record knows its transaction's commit LSN;
(commit LSN, ordinal) is the record's position.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...debezium.config import ConnectorConfig
from ...debezium.events import EventFactory, sequence_text
from ...debezium.records import ChangeRecord
from ...debezium.schema_changes import schema_change_record
from ...debezium.table import TableSchema
from ...debezium.types.hstore import java_hashmap_order
from ...lsn import format_lsn
from ...pgoutput.messages import (
    UNCHANGED_TOAST,
    Begin,
    BeginPrepare,
    Commit,
    CommitPrepared,
    Delete,
    Insert,
    LogicalMessage,
    Origin,
    Prepare,
    Relation,
    RollbackPrepared,
    StreamPrepare,
    Truncate,
    TypeMessage,
    Update,
)
from ...pgoutput.wal import WalMessage
from .errors import UnexpectedMessageError
from .schema_changes import RelationShapes
from .tables import TableResolver

__all__ = ["SIGNAL_OP", "StreamingProcessor", "UnexpectedMessageError"]

#: ``op`` of the marker records :class:`StreamingProcessor` puts in its output where a row of the
#: signal table was inserted or deleted (``signal.data.collection``). Markers are not change events:
#: the stream reader acts on them (signals, snapshot windows) and drops them.
SIGNAL_OP = "~signal"


@dataclass
class _Transaction:
    xid: int
    commit_lsn: int
    commit_ts_us: int
    origin: str | None = None
    origin_lsn: int | None = None
    ordinal: int = 0
    data_events: int = 0
    # Per data collection event counts in first-seen order (Debezium's END record lists them so);
    # each transactional logical decoding message counts as a collection of its own, as in Debezium.
    per_collection: dict[str, int] = field(default_factory=dict)
    begin_emitted: bool = False


class StreamingProcessor:
    """Feeds on :class:`WalMessage` items; see the module docstring."""

    def __init__(self, config: ConnectorConfig, resolver: TableResolver, events: EventFactory) -> None:
        self.config = config
        self.resolver = resolver
        self.events = events
        self.skipped = config.skipped_operations
        self.tombstones = config.tombstones_on_delete
        self.transaction_metadata = config.provide_transaction_metadata
        self.skip_unchanged = config.settings.skip_messages_without_change
        #: End LSN of the last COMMIT (or non-transactional message) processed: ``source.sequence[0]``.
        self.last_commit_lsn: int | None = None
        self.last_commit_ts_us: int | None = None
        #: Changes skipped by event.processing.failure.handling.mode=warn/skip (the NumberOfErroneousEvents metric).
        self.erroneous_events = 0
        #: Row changes of tables the include/exclude lists leave out (the NumberOfEventsFiltered metric).
        self.filtered_events = 0
        self._tx: _Transaction | None = None
        #: The signal table (``signal.data.collection``) to watch, and its relation id once a Relation named it.
        self.signal_table: tuple[str, str] | None = None
        self.signal_relation_id = -1
        self._signal_columns: tuple[str, ...] = ()
        #: include.schema.changes: the last Relation content known of each captured table (the
        #: batch's reader loads the state's at the batch's start); None: no schema change records.
        self.shapes: RelationShapes | None = RelationShapes() if config.settings.include_schema_changes else None
        self._schema_pending: list[tuple[str, TableSchema]] = []  # (change type, table) of Relation messages not placed yet
        self._schema_ready: list[ChangeRecord] = []  # placed, to be handed on before the next message's records
        #: post.processors: called with each create or update event, its table and the row's text values
        #: (``engine.core.reselect.Reselector.consider``); None: no post processor.
        self.post: Any = None

    @property
    def in_transaction(self) -> bool:
        """Between a BEGIN and its COMMIT."""
        return self._tx is not None

    # -- dispatch --------------------------------------------------------------------------------
    def process_batch(self, items: list[WalMessage]) -> list[ChangeRecord]:
        """:meth:`process` for many messages; an INSERT without transaction metadata, the commonest
        message there is, is handled inline (the same records :meth:`process` makes, with fewer calls)."""
        out: list[ChangeRecord] = []
        inline = not self.transaction_metadata and "c" not in self.skipped and self.post is None
        tables = self.resolver.captured_by_relation
        events = self.events  # (methods called through their object, not bound once: compiled, that is a direct call)
        for item in items:
            message = item.message
            tx = self._tx
            if inline and type(message) is Insert and tx is not None and not self._schema_pending and not self._schema_ready:
                table = tables.get(message.relation_id)  # None: not captured, or unknown (process() raises)
                if table is not None and message.relation_id != self.signal_relation_id:
                    key, after = table.key_and_row(message.new_tuple)
                    out.append(events.streamed_change(
                        table, "c", key, None, after, item.data_start, self.last_commit_lsn, tx.xid,
                        tx.commit_ts_us, tx.commit_lsn, tx.ordinal, tx.origin, tx.origin_lsn, None, (),
                    ))
                    tx.ordinal += 1
                    continue
            out.extend(self.process(item))
        return out

    def process(self, item: WalMessage) -> list[ChangeRecord]:
        if self._schema_pending and not isinstance(item.message, (Relation, TypeMessage)):
            self._place_schema_changes(item.data_start)
        if self._schema_ready:
            records = self._dispatch(item)  # if it raises, the schema changes go out with the next message
            out, self._schema_ready = self._schema_ready, []
            out.extend(records)
            return out
        return self._dispatch(item)

    def _dispatch(self, item: WalMessage) -> list[ChangeRecord]:
        message = item.message
        if isinstance(message, (Insert, Update, Delete)):
            return self._row_change(message, item.data_start)
        if isinstance(message, Begin):
            if self._tx is not None:
                raise UnexpectedMessageError(f"BEGIN of xid {message.xid} inside transaction {self._tx.xid}")
            self._tx = _Transaction(message.xid, message.final_lsn, message.commit_ts_us)
            return []
        if isinstance(message, Commit):
            return self._commit(message)
        if isinstance(message, Relation):
            table = self.resolver.on_relation(message)
            if self.signal_table is not None and (message.namespace, message.name) == self.signal_table:
                self.signal_relation_id = message.relation_id
                self._signal_columns = tuple(c.name for c in message.columns)
            shapes = self.shapes
            if shapes is not None and table is not None:
                kind = shapes.change(message)
                if kind is not None:
                    self._schema_pending.append((kind, table))  # placed at the change it was sent for
            return []
        if isinstance(message, TypeMessage):
            return []
        if isinstance(message, Origin):
            tx = self._require_tx("ORIGIN")
            tx.origin, tx.origin_lsn = message.name, message.origin_lsn
            return []
        if isinstance(message, Truncate):
            return self._truncate(message, item.data_start)
        if isinstance(message, LogicalMessage):
            return self._logical_message(message)
        if isinstance(message, (BeginPrepare, Prepare, CommitPrepared, RollbackPrepared, StreamPrepare)):
            # Refused rather than buffered: a prepared transaction's rows come before its outcome, so
            # buffering them would hold whole transactions in memory and carry them across batches.
            raise UnexpectedMessageError(
                f"{type(message).__name__} message (xid {message.xid}, gid {message.gid!r}) at LSN {format_lsn(item.data_start)}: "
                "the replication slot was created with two_phase, which sparkcdc never asks for; "
                "use a slot created without two_phase"
            )
        raise UnexpectedMessageError(
            f"{type(message).__name__} message at LSN {format_lsn(item.data_start)}: the connector reads with streaming off"
        )

    def _require_tx(self, what: str) -> _Transaction:
        if self._tx is None:
            raise UnexpectedMessageError(f"{what} outside a transaction")
        return self._tx

    # -- rows ------------------------------------------------------------------------------------
    def _row_change(self, message: Insert | Update | Delete, lsn: int) -> list[ChangeRecord]:
        tx = self._tx
        if tx is None:
            raise UnexpectedMessageError(f"{type(message).__name__.upper()} at LSN {lsn} outside a transaction")
        table = self.resolver.for_relation_id(message.relation_id)
        out: list[ChangeRecord] = []
        if message.relation_id == self.signal_relation_id:
            self._signal_marker(out, message, tx, lsn)
        if table is None:
            if message.relation_id != self.signal_relation_id:
                self.filtered_events += 1  # a table the publication carries but the filters exclude
            return out
        if isinstance(message, Insert):
            if "c" not in self.skipped:
                key, after = table.key_and_row(message.new_tuple)
                self._data(out, table, tx, lsn, "c", key, None, after, (), message.new_tuple)
        elif isinstance(message, Update):
            old, new = message.old_tuple, message.new_tuple
            if old is not None and UNCHANGED_TOAST in new:
                new = _resolve_unchanged_toast(old, new)
            if self.skip_unchanged and old is not None and table.row(old) == table.row(new):
                return out  # skip.messages.without.change: no captured column changed (Debezium compares the values)
            if old is not None and table.has_key and table.key_changed(old, new):
                self._key_change(out, table, tx, lsn, old, new)
            elif "u" not in self.skipped:
                if old is None:
                    key, after = table.key_and_row(new)
                    self._data(out, table, tx, lsn, "u", key, None, after, (), new)
                else:
                    self._data(out, table, tx, lsn, "u", table.key(new), table.row(old), table.row(new), (), new)
        elif "d" not in self.skipped:
            old = message.old_tuple
            key = table.key(old)
            self._data(out, table, tx, lsn, "d", key, table.row(old), None)
            if self.tombstones:
                out.append(self._positioned(self.events.tombstone(table, key), tx, lsn))
        return out

    def _signal_marker(self, out: list[ChangeRecord], message: Insert | Update | Delete, tx: _Transaction, lsn: int) -> None:
        """A :data:`SIGNAL_OP` marker for an insert or delete of a signal table row (id, type, data)."""
        if isinstance(message, Insert):
            op, values = "c", message.new_tuple
        elif isinstance(message, Delete):
            op, values = "d", message.old_tuple
        else:
            return
        row = dict(zip(self._signal_columns, values, strict=False))
        # The sequence the row's own change event has: an incremental snapshot's read events carry
        # their close watermark's (as Debezium's do).
        value = {"op": op, "id": row.get("id"), "type": row.get("type"), "data": row.get("data"),
                 "sequence": sequence_text(self.last_commit_lsn, lsn)}
        marker = ChangeRecord("", None, None, value, None, (), SIGNAL_OP, self.signal_table[0] if self.signal_table else None,
                              self.signal_table[1] if self.signal_table else None)
        marker.lsn = lsn
        marker.commit_lsn = tx.commit_lsn
        marker.ordinal = tx.ordinal
        marker.tx_id = tx.xid
        marker.source_ts_us = tx.commit_ts_us
        out.append(marker)

    def _key_change(self, out: list[ChangeRecord], table: TableSchema, tx: _Transaction, lsn: int, old: tuple, new: tuple) -> None:
        """An UPDATE that changes the key: DELETE (old key) + tombstone + CREATE (new key)."""
        old_key, new_key = table.key(old), table.key(new)
        if "d" not in self.skipped:
            header = (self.events.key_header("__debezium.newkey", table, new_key),)
            self._data(out, table, tx, lsn, "d", old_key, table.row(old), None, header)
            if self.tombstones:
                out.append(self._positioned(self.events.tombstone(table, old_key, header), tx, lsn))
        if "c" not in self.skipped:
            header = (self.events.key_header("__debezium.oldkey", table, old_key),)
            self._data(out, table, tx, lsn, "c", new_key, None, table.row(new), header, new)

    def _data(
        self, out: list[ChangeRecord], table: TableSchema, tx: _Transaction, lsn: int, op: str, key: Any, before: Any,
        after: Any, headers: tuple = (), values: tuple | None = None,
    ) -> None:
        """Appends the record of one data event, preceded by the transaction's BEGIN if it is the first;
        ``values``: the row's text values ``after`` was made from (for the post processors)."""
        block = None
        if self.transaction_metadata:
            if not tx.begin_emitted:
                out.append(self._begin(tx, lsn))
            block = self._transaction_block(tx, f"{table.schema_name}.{table.table_name}", lsn)
        record = self.events.streamed_change(
            table, op, key, before, after, lsn, self.last_commit_lsn, tx.xid, tx.commit_ts_us, tx.commit_lsn,
            tx.ordinal, tx.origin, tx.origin_lsn, block, headers,
        )
        out.append(record)
        tx.ordinal += 1
        if self.post is not None and values is not None:
            self.post(record, table, values)

    def _positioned(self, record: ChangeRecord, tx: _Transaction, lsn: int) -> ChangeRecord:
        record.lsn = lsn
        record.commit_lsn = tx.commit_lsn
        record.tx_id = tx.xid
        record.source_ts_us = tx.commit_ts_us
        record.ordinal = tx.ordinal
        tx.ordinal += 1
        return record

    # -- schema changes --------------------------------------------------------------------------
    def _place_schema_changes(self, lsn: int) -> None:
        """The pending Relation messages' schema change records, placed at ``lsn``.

        pgoutput sends a Relation message (after the Type messages of its types) just before the
        change it was sent for, and the walsender sends it without an LSN of its own (0: it does so
        for every message but the last of a change's). So the message is placed at that change: its
        LSN, in its transaction, at the ordinals just before the change's records."""
        for kind, table in self._schema_pending:
            self._schema_ready.append(self._schema_change(kind, table, lsn))
        self._schema_pending = []

    def _schema_change(self, kind: str, table: TableSchema, lsn: int) -> ChangeRecord:
        """The schema change record of a Relation message placed at ``lsn``: in its transaction (its
        commit LSN, the next ordinal), with the source block the table's row events there carry.
        (pgoutput sends Relation messages inside transactions; one outside is placed at ``lsn`` alone.)"""
        tx = self._tx
        events = self.events
        selected = self.resolver.factory.rules.selected
        if tx is None:
            ts_us = self.last_commit_ts_us if self.last_commit_ts_us is not None else events.clock_ns() // 1000
            source = events.source(schema=table.schema_name, table=table.table_name, ts_us=ts_us, lsn=lsn,
                                   last_commit_lsn=self.last_commit_lsn)
            record = schema_change_record(events, kind, table.description, source, selected=selected)
            record.lsn = record.commit_lsn = lsn
            record.source_ts_us = ts_us
            return record
        source = events.source(
            schema=table.schema_name, table=table.table_name, ts_us=tx.commit_ts_us, tx_id=tx.xid, lsn=lsn,
            last_commit_lsn=self.last_commit_lsn, origin=tx.origin, origin_lsn=tx.origin_lsn,
        )
        return self._positioned(schema_change_record(events, kind, table.description, source, selected=selected), tx, lsn)

    # -- transaction metadata --------------------------------------------------------------------
    def _begin(self, tx: _Transaction, lsn: int) -> ChangeRecord:
        """BEGIN is emitted lazily, before the first event: a transaction with no captured events has none."""
        tx.begin_emitted = True
        record = self.events.transaction_record("BEGIN", f"{tx.xid}:{lsn}", tx.commit_ts_us // 1000)
        return self._positioned(record, tx, lsn)

    def _transaction_block(self, tx: _Transaction, collection: str, lsn: int) -> dict[str, Any] | None:
        if not self.transaction_metadata:
            return None
        tx.data_events += 1
        tx.per_collection[collection] = tx.per_collection.get(collection, 0) + 1
        return {
            "id": f"{tx.xid}:{lsn}",
            "total_order": tx.data_events,
            "data_collection_order": tx.per_collection[collection],
        }

    # -- other messages --------------------------------------------------------------------------
    def _truncate(self, message: Truncate, lsn: int) -> list[ChangeRecord]:
        tx = self._require_tx("TRUNCATE")
        if "t" in self.skipped:
            return []
        out: list[ChangeRecord] = []
        for relation_id in message.relation_ids:
            table = self.resolver.for_relation_id(relation_id)
            if table is not None:
                self._data(out, table, tx, lsn, "t", None, None, None)
        return out

    def _logical_message(self, message: LogicalMessage) -> list[ChangeRecord]:
        if not self.events.accepts_message_prefix(message.prefix):
            return []
        if message.transactional:
            tx = self._require_tx("transactional MESSAGE")
            source = self.events.source(
                schema="", table="", ts_us=tx.commit_ts_us, tx_id=tx.xid, lsn=message.lsn,
                last_commit_lsn=self.last_commit_lsn, origin=tx.origin, origin_lsn=tx.origin_lsn,
            )
            out = [self._begin(tx, message.lsn)] if self.transaction_metadata and not tx.begin_emitted else []
            block = self._transaction_block(tx, f"message:{message.prefix}#{tx.ordinal}", message.lsn)
            record = self.events.message(message.prefix, message.content, source, block)
            out.append(self._positioned(record, tx, message.lsn))
            return out
        # Debezium treats a non-transactional message as its own committed unit: the position moves
        # to it first, and its time is the last commit's (it has none of its own).
        self.last_commit_lsn = message.lsn
        ts_us = self.last_commit_ts_us if self.last_commit_ts_us is not None else self.events.clock_ns() // 1000
        source = self.events.source(schema="", table="", ts_us=ts_us, lsn=message.lsn, last_commit_lsn=self.last_commit_lsn)
        record = self.events.message(message.prefix, message.content, source)
        record.lsn = record.commit_lsn = message.lsn
        return [record]

    def _commit(self, message: Commit) -> list[ChangeRecord]:
        tx = self._require_tx("COMMIT")
        self._tx = None
        self.last_commit_lsn = message.end_lsn
        self.last_commit_ts_us = tx.commit_ts_us
        if not tx.begin_emitted:
            return []
        # Debezium counts per collection in a java.util.HashMap keyed by name, and lists them in
        # that map's iteration order.
        names = list(tx.per_collection)
        collections = [(names[i].split("#", 1)[0], tx.per_collection[names[i]]) for i in java_hashmap_order(names)]
        record = self.events.transaction_record(
            "END", f"{tx.xid}:{message.end_lsn}", tx.commit_ts_us // 1000, tx.data_events, collections
        )
        return [self._positioned(record, tx, message.end_lsn)]


def _resolve_unchanged_toast(old: Any, new: Any) -> tuple[Any, ...]:
    """An UPDATE's new tuple with unchanged TOAST values taken from the old tuple where it has them.

    Debezium caches the old row's values of TOAST-able columns and uses them for the new row's
    unchanged ones: with REPLICA IDENTITY FULL the after-image is complete; with a key-only old
    tuple the other columns stay unchanged (placeholders).
    """
    return tuple(
        o if n is UNCHANGED_TOAST and o is not None and o is not UNCHANGED_TOAST else n for o, n in zip(old, new, strict=True)
    )
