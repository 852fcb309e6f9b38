"""The logical replication reader: START_REPLICATION over pgoutput, keepalives and feedback.

Transport is libpq through psycopg's low-level ``pq`` binding, so authentication, TLS and
connection options behave exactly as for every other libpq client; the protocol on top (frames,
feedback) is ours (see :mod:`.replication_protocol`) because the feedback rule matters too much to
leave to a driver: the flush position we report is exactly the LSN the caller passed to
:meth:`LogicalReplicationReader.confirm`, never more. (psycopg2, for instance, moves the flush
position forward on server keepalives by itself.)

A lost connection is re-established with backoff; replication then restarts from the confirmed LSN
(or the start LSN if nothing was confirmed), so the server sends every unconfirmed transaction
again. The reader reports that with a :class:`StreamRestarted` item so the consumer can drop any
partial transaction and skip what it already holds.

A connection that goes silent without closing (a network path that drops packets, a proxy or NAT
that stopped forwarding: no FIN, no RST, so the socket never errors) is detected by a receive
timeout, not left to hang: when nothing has arrived for a status interval the reader asks the
walsender to answer (a status update with ``reply_requested``), and a request left unanswered for
the receive timeout counts as a lost connection. The timeout is the server's ``wal_sender_timeout``
(read with ``SHOW`` on the replication connection; the server gives up on a silent client after as
long) and at least twice the status interval; 60 s when the server's is 0 (off). TCP keepalives
cannot see this case: the path's far end (the proxy, the NAT) still acknowledges them.
"""

from __future__ import annotations

import re
import select
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import psycopg
from psycopg import pq
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from ..errors import ConfigurationError
from ..lsn import format_lsn
from ..pgoutput import Decoder
from ..text_format import TEXT_OUTPUT_SETTINGS, libpq_options
from .connections import setting_error
from .errors import (
    ReplicationConnectionLost,
    ReplicationError,
    ReplicationProtocolError,
    ServerFeatureError,
    SlotInUseError,
    SlotLostError,
    SlotNotFoundError,
    server_error,
)
from .replication_protocol import (
    WalMessage,
    XLogDataDecoder,
    build_standby_status_update,
    parse_keepalive,
)

__all__ = [
    "LogicalReplicationReader",
    "ReconnectPolicy",
    "ReplicationOptions",
    "StreamRestarted",
    "WalMessage",
    "quote_ident",
    "quote_literal",
]

def quote_ident(name: str) -> str:
    """A PostgreSQL identifier, double-quoted (so case and any character are kept)."""
    return '"' + name.replace('"', '""') + '"'


def quote_literal(value: str) -> str:
    """A PostgreSQL string literal (standard_conforming_strings: only quotes are doubled)."""
    return "'" + value.replace("'", "''") + "'"


@dataclass(frozen=True, slots=True)
class ReplicationOptions:
    """What START_REPLICATION asks of pgoutput.

    ``streaming`` is ``"off"``, ``"on"`` (protocol >= 2) or ``"parallel"`` (protocol >= 4, server
    16+). ``origin`` is ``"any"`` or ``"none"`` (server 16+); ``None`` leaves the server default.
    """

    slot_name: str
    publication_names: tuple[str, ...]
    proto_version: int = 1
    messages: bool = True
    streaming: str = "off"
    binary: bool = False
    two_phase: bool = False
    origin: str | None = None
    status_interval: float = 10.0
    #: Seconds a reply the reader asked for may take before the connection counts as lost: ``None``
    #: derives it from the server (see the module docstring), ``0`` turns the check off.
    receive_timeout: float | None = None

    def __post_init__(self) -> None:
        if not self.slot_name:
            raise ConfigurationError("slot_name must not be empty")
        if not self.publication_names:
            raise ConfigurationError("publication_names must name at least one publication")
        if self.streaming not in ("off", "on", "parallel"):
            raise ConfigurationError(f"streaming must be off, on or parallel, not {self.streaming!r}")
        if self.streaming == "on" and self.proto_version < 2:
            raise ConfigurationError("streaming=on needs proto_version >= 2")
        if self.streaming == "parallel" and self.proto_version < 4:
            raise ConfigurationError("streaming=parallel needs proto_version >= 4")
        if self.two_phase and self.proto_version < 3:
            raise ConfigurationError("two_phase needs proto_version >= 3")
        if self.origin not in (None, "any", "none"):
            raise ConfigurationError(f"origin must be 'any' or 'none', not {self.origin!r}")
        if self.status_interval <= 0:
            raise ConfigurationError("status_interval must be positive")
        if self.receive_timeout is not None and self.receive_timeout < 0:
            raise ConfigurationError("receive_timeout must be 0 (off), positive, or None (from the server)")

    def start_replication_command(self, start_lsn: int, server_version: int) -> str:
        if self.two_phase and server_version < 150000:
            raise ServerFeatureError("two_phase needs PostgreSQL 15 or later")
        if (self.streaming == "parallel" or self.origin is not None) and server_version < 160000:
            raise ServerFeatureError("streaming=parallel and origin need PostgreSQL 16 or later")
        options = [
            ("proto_version", str(self.proto_version)),
            ("publication_names", ",".join(quote_ident(name) for name in self.publication_names)),
            ("messages", "true" if self.messages else "false"),
            ("binary", "true" if self.binary else "false"),
        ]
        if self.proto_version >= 2:
            options.append(("streaming", self.streaming))
        if self.two_phase:
            options.append(("two_phase", "true"))
        if self.origin is not None:
            options.append(("origin", self.origin))
        rendered = ", ".join(f"{quote_ident(key)} {quote_literal(value)}" for key, value in options)
        return f"START_REPLICATION SLOT {quote_ident(self.slot_name)} LOGICAL {format_lsn(start_lsn)} ({rendered})"


@dataclass(frozen=True, slots=True)
class ReconnectPolicy:
    """How hard to try when the replication connection breaks (``attempts=0``: never)."""

    attempts: int = 6
    initial_delay: float = 0.2
    max_delay: float = 10.0


@dataclass(frozen=True, slots=True)
class StreamRestarted:
    """The connection was re-established; the server now re-sends everything after ``start_lsn``."""

    start_lsn: int
    reason: str


class LogicalReplicationReader:
    """Reads one logical slot with pgoutput; see the module docstring for the guarantees."""

    def __init__(
        self,
        conninfo: str,
        options: ReplicationOptions,
        *,
        start_lsn: int = 0,
        reconnect: ReconnectPolicy | None = None,
        application_name: str = "sparkcdc",
        server_settings: Mapping[str, str] | None = None,
    ) -> None:
        """``server_settings`` are set on the walsender, and so shape the text of every value;
        by default :data:`~sparkcdc.text_format.TEXT_OUTPUT_SETTINGS`."""
        params = conninfo_to_dict(conninfo)
        params.setdefault("connect_timeout", "10")
        params.setdefault("application_name", application_name)
        params.update(replication="database", client_encoding="UTF8")
        settings = TEXT_OUTPUT_SETTINGS if server_settings is None else server_settings
        if settings:
            params["options"] = libpq_options(settings, params.get("options"))
        self._conninfo = make_conninfo(**params)
        self.options = options
        self.reconnect_policy = reconnect or ReconnectPolicy()
        self._start_lsn = start_lsn
        self._confirmed_lsn = 0
        self._pgconn: pq.abc.PGconn | None = None
        #: The pgoutput decoder, and the highest WAL position received (``received_lsn``).
        self._frames = XLogDataDecoder(options.proto_version)
        self._last_status = 0.0
        #: When the reader asked the server for a reply still unanswered (``None``: none pending), when a
        #: frame last arrived, and the receive timeout of the current connection (0: off).
        self._asked_at: float | None = None
        self._last_received = 0.0
        self._receive_timeout = 0.0
        self._lock = threading.RLock()
        self._restart_reason: str | None = None
        self._started = False
        #: Counters for monitoring (and for tests that wait on them rather than on time).
        self.restarts = 0
        self.keepalives_received = 0
        self.status_updates_sent = 0
        self.server_version = 0
        #: Connections dropped because the server left a reply request unanswered (see the module docstring).
        self.receive_timeouts = 0

    # -- public API ------------------------------------------------------------------------------
    @property
    def confirmed_lsn(self) -> int:
        """The highest LSN the caller confirmed (0 when nothing was)."""
        return self._confirmed_lsn

    @property
    def received_lsn(self) -> int:
        """The highest WAL position seen in a frame from the server."""
        return self._frames.received_lsn

    @property
    def connected(self) -> bool:
        return self._pgconn is not None

    def start(self) -> LogicalReplicationReader:
        """Connect and issue START_REPLICATION (retrying per the reconnect policy)."""
        with self._lock:
            if not self._started:
                self._connect_with_retries(first=True)
                self._started = True
        return self

    def confirm(self, lsn: int) -> None:
        """Allow the slot to move to ``lsn``: the caller has durably processed everything before it.

        Confirmations only move forward; a lower value than an earlier one is ignored.
        """
        with self._lock:
            if lsn <= self._confirmed_lsn:
                return
            self._confirmed_lsn = lsn
            if self._pgconn is not None:
                try:
                    self._send_status(reply_requested=False)
                except ReplicationConnectionLost as exc:
                    self._drop_connection(str(exc))

    def read(self, timeout: float | None = None, *, raw: bool = False) -> Any:
        """The next message, a :class:`StreamRestarted` after a reconnect, or ``None`` on timeout.
        ``raw``: an XLogData frame is returned as the buffer it came in, not decoded."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            if not self._started:
                self.start()
            while True:
                if self._pgconn is None:
                    self._connect_with_retries(first=False)
                    reason, self._restart_reason = self._restart_reason, None
                    self.restarts += 1
                    return StreamRestarted(self._resume_lsn(), reason or "reconnected")
                try:
                    frame = self._next_frame(deadline)
                except ReplicationConnectionLost as exc:
                    if self.reconnect_policy.attempts <= 0:
                        self._drop_connection(str(exc))
                        raise
                    self._drop_connection(str(exc))
                    continue
                if frame is None:
                    return None
                item = self._item(frame, raw)
                if item is not None:
                    return item

    def read_batch(self, max_items: int = 2048, timeout: float | None = None, *, raw: bool = False) -> list[Any]:
        """Up to ``max_items`` items: waits (up to ``timeout``) for the first, then takes only what has
        already arrived. Per item this costs far less than :meth:`read`, which is what the hot path needs.
        ``raw``: XLogData frames come as the buffers they arrived in, for a decoder elsewhere
        (:mod:`sparkcdc.engine.parallel_stream`); keepalives are handled all the same."""
        first = self.read(timeout, raw=raw)
        if first is None:
            return []
        items: list[WalMessage | StreamRestarted] = [first]
        if isinstance(first, StreamRestarted):
            return items
        with self._lock:
            pgconn = self._pgconn
            if pgconn is None:
                return items
            get, take = pgconn.get_copy_data, self._frames.take_raw if raw else self._frames.take
            consumed = False
            while len(items) < max_items:
                try:
                    size, data = take(get, items, max_items)  # XLogData frames, decoded in one loop
                except psycopg.OperationalError as exc:
                    self._drop_connection(f"connection lost: {exc}")
                    break
                if size > 0:
                    item = self._item(data, raw)  # another kind of frame: a keepalive
                    if item is not None:
                        items.append(item)
                elif len(items) >= max_items:
                    break
                elif size == 0 and not consumed:
                    consumed = True  # look once more at what the socket already holds, without waiting
                    try:
                        pgconn.consume_input()
                    except psycopg.OperationalError as exc:
                        self._drop_connection(f"connection lost: {exc}")
                        break
                else:
                    break  # nothing more buffered (or COPY ended: the next read() reports it)
        return items

    def _item(self, frame: memoryview | bytes, raw: bool = False) -> Any:
        """A data frame as a WalMessage (``raw``: as it came); a keepalive is answered (if asked) and gives ``None``."""
        kind = frame[0]
        if kind == 119:  # 'w' XLogData
            return self._frames.received(frame) if raw else self._frames.decode(frame)
        if kind == 107:  # 'k' keepalive
            keepalive = parse_keepalive(frame)
            self.keepalives_received += 1
            if keepalive.wal_end > self._frames.received_lsn:
                self._frames.received_lsn = keepalive.wal_end
            if keepalive.reply_requested:
                self._send_status_or_drop()
            return None
        raise ReplicationProtocolError(f"unknown replication frame type 0x{kind:02x}")

    def request_reply(self) -> None:
        """Ask the walsender to answer with a keepalive at once.

        A logical walsender's keepalive carries how far decoding has read the WAL, which is the only
        way to learn that nothing more is coming below some LSN when no data arrives
        (:attr:`received_lsn` moves when the answer is read).
        """
        with self._lock:
            if self._pgconn is not None:
                try:
                    self._send_status(reply_requested=True)
                except ReplicationConnectionLost as exc:
                    self._drop_connection(str(exc))

    def __iter__(self) -> Iterator[WalMessage | StreamRestarted]:
        while True:
            item = self.read()
            if item is not None:
                yield item

    def close(self) -> None:
        """Send a last status update with the confirmed position, then disconnect."""
        with self._lock:
            if self._pgconn is not None:
                try:
                    self._send_status(reply_requested=False)
                except ReplicationError:
                    pass
                self._drop_connection("closed")

    def __enter__(self) -> LogicalReplicationReader:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def backend_pid(self) -> int | None:
        """PID of the walsender serving us (handy for tests and for diagnosing a stuck slot)."""
        return self._pgconn.backend_pid if self._pgconn is not None else None

    # -- connection handling ---------------------------------------------------------------------
    def _resume_lsn(self) -> int:
        return max(self._start_lsn, self._confirmed_lsn)

    def _connect_with_retries(self, *, first: bool) -> None:
        policy = self.reconnect_policy
        attempts = max(1, policy.attempts)
        delay = policy.initial_delay
        last_error: ReplicationError | None = None
        for attempt in range(attempts):
            if attempt:
                time.sleep(delay)  # backoff between connection attempts, not synchronisation
                delay = min(delay * 2, policy.max_delay)
            try:
                self._connect_and_start()
                return
            except (ReplicationConnectionLost, SlotInUseError) as exc:
                last_error = exc
            except SlotNotFoundError as exc:
                if first:
                    raise
                # It streamed before the connection broke: the server we came back to lacks it.
                raise SlotLostError(f"slot {self.options.slot_name!r} is gone after the replication connection was "
                                    f"re-established (dropped, or a failover to a server it was not synchronised to): "
                                    f"{exc}", sqlstate=exc.sqlstate, slot=self.options.slot_name) from exc
        assert last_error is not None
        what = "connect" if first else "reconnect"
        raise type(last_error)(
            f"could not {what} to slot {self.options.slot_name!r} after {attempts} attempts: {last_error}",
            sqlstate=last_error.sqlstate,
            slot=self.options.slot_name,
        ) from last_error

    def _connect_and_start(self) -> None:
        pgconn = pq.PGconn.connect(self._conninfo.encode())
        if pgconn.status != pq.ConnStatus.OK:
            message = pgconn.get_error_message()
            pgconn.finish()
            # refused for a setting (a wrong CA, password...): an error naming it, not a lost server to retry
            raise setting_error(message, self._conninfo) or ReplicationConnectionLost(
                f"connection failed: {message.strip()}", slot=self.options.slot_name)
        self.server_version = pgconn.server_version
        self._receive_timeout = self._receive_timeout_of(pgconn)
        command = self.options.start_replication_command(self._resume_lsn(), self.server_version)
        pgconn.send_query(command.encode())
        result = self._wait_result(pgconn)
        if result.status != pq.ExecStatus.COPY_BOTH:
            error = self._error_from_result(result, pgconn, f"START_REPLICATION on slot {self.options.slot_name!r}", slot_request=True)
            pgconn.finish()
            raise error
        self._pgconn = pgconn
        self._frames.decoder = Decoder(self.options.proto_version)
        self._asked_at, self._last_received = None, time.monotonic()
        # Report the confirmed position at once: a reconnect must not leave the slot behind it.
        if self._confirmed_lsn:
            self._send_status_or_drop()
        else:
            self._last_status = time.monotonic()

    @staticmethod
    def _wait_result(pgconn: pq.abc.PGconn) -> pq.abc.PGresult:
        try:
            while True:
                pgconn.consume_input()
                if not pgconn.is_busy():
                    break
                select.select([pgconn.socket], [], [], 1.0)
            result = pgconn.get_result()
        except psycopg.OperationalError as exc:
            raise ReplicationConnectionLost(f"connection lost: {exc}") from None
        if result is None:
            raise ReplicationConnectionLost("connection lost: no result for START_REPLICATION")
        return result

    def _error_from_result(
        self, result: pq.abc.PGresult, pgconn: pq.abc.PGconn, what: str, *, slot_request: bool = False
    ) -> ReplicationError:
        """The server's error (its ErrorResponse fields) as an exception, by SQLSTATE. ``slot_request``:
        the failed command was START_REPLICATION itself, so an undefined object is our slot."""
        fields = pq.DiagnosticField
        sqlstate, schema, table = (
            raw.decode(errors="replace") if raw else None
            for raw in (result.error_field(fields.SQLSTATE), result.error_field(fields.SCHEMA_NAME), result.error_field(fields.TABLE_NAME))
        )
        message = (result.error_message or pgconn.error_message or b"").decode(errors="replace").strip()
        text = f"{what} failed: {message}" if message else f"{what} failed with status {result.status.name}"
        error = server_error(text, sqlstate, slot=self.options.slot_name, slot_request=slot_request, replication=True,
                             table=f"{schema}.{table}" if schema and table else table, connected=pgconn.status == pq.ConnStatus.OK)
        assert isinstance(error, ReplicationError)  # replication=True gives nothing else
        return error

    def _drop_connection(self, reason: str) -> None:
        pgconn, self._pgconn = self._pgconn, None
        if pgconn is not None:
            pgconn.finish()
            self._restart_reason = reason

    def _next_frame(self, deadline: float | None) -> memoryview | bytes | None:
        pgconn = self._pgconn
        assert pgconn is not None
        interval = self.options.status_interval
        while True:
            try:
                size, data = pgconn.get_copy_data(1)
            except psycopg.OperationalError as exc:
                raise ReplicationConnectionLost(f"connection lost: {exc}") from None
            if size > 0:
                self._asked_at, self._last_received = None, time.monotonic()
                return data
            if size == -1:
                self._raise_copy_end(pgconn)
            now = time.monotonic()
            if now - self._last_status >= interval:
                # Silent for a status interval: ask the walsender to answer, which a live one does at once.
                self._send_status(reply_requested=now - self._last_received >= interval)
            wait = self._last_status + interval - now
            if self._asked_at is not None and self._receive_timeout:
                overdue = self._asked_at + self._receive_timeout - now
                if overdue <= 0:
                    self._check_silence(pgconn, now)
                    continue  # something had arrived after all: the loop takes it
                wait = min(wait, overdue)
            if deadline is not None:
                if now >= deadline:
                    return None
                wait = min(wait, deadline - now)
            select.select([pgconn.socket], [], [], max(wait, 0.0))
            try:
                pgconn.consume_input()
            except psycopg.OperationalError as exc:
                raise ReplicationConnectionLost(f"connection lost: {exc}") from None

    def _check_silence(self, pgconn: pq.abc.PGconn, now: float) -> None:
        """The reply asked for is overdue. What the socket holds is read first (the caller may have been
        away, not the server); if something came, the caller's loop takes it. Otherwise the connection
        is lost: ReplicationConnectionLost."""
        if select.select([pgconn.socket], [], [], 0)[0]:
            try:
                pgconn.consume_input()  # data, or the connection's end (an error here)
            except psycopg.OperationalError as exc:
                raise ReplicationConnectionLost(f"connection lost: {exc}") from None
            return
        assert self._asked_at is not None
        self.receive_timeouts += 1
        raise ReplicationConnectionLost(
            f"no reply from the server for {now - self._asked_at:.1f} s after asking for one (receive timeout "
            f"{self._receive_timeout:g} s: wal_sender_timeout, at least twice the status interval); the connection "
            f"is open but silent (a network path or proxy that stopped forwarding)", slot=self.options.slot_name)

    def _receive_timeout_of(self, pgconn: pq.abc.PGconn) -> float:
        """This connection's receive timeout, in seconds (0: off): see the module docstring."""
        configured = self.options.receive_timeout
        if configured is not None:
            return configured
        result = pgconn.exec_(b"SHOW wal_sender_timeout")
        if result.status != pq.ExecStatus.TUPLES_OK or result.ntuples != 1:
            raise self._error_from_result(result, pgconn, "SHOW wal_sender_timeout")
        raw = result.get_value(0, 0)
        server = parse_duration((raw or b"").decode())
        return max(server or _UNSET_RECEIVE_TIMEOUT, 2 * self.options.status_interval)

    def _raise_copy_end(self, pgconn: pq.abc.PGconn) -> None:
        """The server ended COPY BOTH: an error (or a shutdown); never a normal end for us."""
        try:
            result = pgconn.get_result()
        except psycopg.OperationalError as exc:
            raise ReplicationConnectionLost(f"connection lost: {exc}") from None
        if result is None or result.status == pq.ExecStatus.COMMAND_OK:
            raise ReplicationConnectionLost("the server ended the replication stream")
        raise self._error_from_result(result, pgconn, f"replication from slot {self.options.slot_name!r}")

    def _send_status(self, *, reply_requested: bool) -> None:
        pgconn = self._pgconn
        assert pgconn is not None
        confirmed = self._confirmed_lsn
        frame = build_standby_status_update(
            max(self._frames.received_lsn, confirmed), confirmed, confirmed, reply_requested=reply_requested
        )
        try:
            pgconn.put_copy_data(frame)
            pgconn.flush()
        except psycopg.OperationalError as exc:
            raise ReplicationConnectionLost(f"connection lost while sending feedback: {exc}") from None
        self._last_status = time.monotonic()
        if reply_requested and self._asked_at is None:
            self._asked_at = self._last_status  # the first unanswered request starts the receive timeout
        self.status_updates_sent += 1

    def _send_status_or_drop(self) -> None:
        try:
            self._send_status(reply_requested=False)
        except ReplicationConnectionLost as exc:
            self._drop_connection(str(exc))



#: The receive timeout when the server's wal_sender_timeout is 0 (off): PostgreSQL's default for it.
_UNSET_RECEIVE_TIMEOUT = 60.0

_DURATION = re.compile(r"\s*(\d+)\s*(us|ms|s|min|h|d)?\s*")
_UNIT_SECONDS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str) -> float:
    """A time setting as ``SHOW`` prints it (``60s``, ``1min``, ``500ms``, ``0``), in seconds; a bare
    number is milliseconds (wal_sender_timeout's unit)."""
    match = _DURATION.fullmatch(text)
    if match is None:
        raise ReplicationProtocolError(f"cannot read the duration {text!r} the server showed")
    return int(match.group(1)) * _UNIT_SECONDS[match.group(2) or "ms"]
