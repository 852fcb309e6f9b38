"""Differential conformance: the same workload captured by real Debezium and by sparkcdc, compared.

``capture_both`` runs Debezium (the oracle) and sparkcdc's in-process connector side by side, each
with its own slot, against the session cluster; the workload runs once both stream; a closing
logical decoding message marks the end for both. ``assert_same_records`` then compares every
record of every topic in order: key, value and headers after JSON parsing, with only these fields
ignored:

* the envelope's ``ts_ms``/``ts_us``/``ts_ns`` (processing time) and ``source.version``;
* for snapshot rows, ``source.ts_*`` (each connector's snapshot start) and ``source.txId``,
  ``source.lsn``, ``source.sequence``: each connector snapshots through its own slot, so these are
  the two slots' consistent points and the two snapshot transactions, which cannot coincide;
* the ``__debezium.context.runId`` header (a new UUID per run, by design);
* the ``data_collection`` names Debezium gives transactional logical decoding messages in END
  records (a Java object identity string, ``...LogicalDecodingMessageId@<hash>``), and so the order
  of ``data_collections`` when such an entry is among them (Debezium's order follows the names'
  Java hash codes).
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest

from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.engine.connector import LocalConnector
from sparkcdc.engine.core.encoded import EncodedRecord

from ..support.waiting import wait_until
from .oracle import SNAPSHOT_MARKERS, DebeziumOracle, OracleRecord, debezium_properties

END_PREFIX = "conformance-end"


class SparkcdcSession:
    """sparkcdc's :class:`LocalConnector` in a thread, with the oracle session's API.

    The loop runs the Spark source's own planner and reader (tests/engine/test_one_driver.py
    checks they are the same objects), so what this compares is what ``postgres-cdc`` emits.
    """

    def __init__(self, properties: Mapping[str, str]) -> None:
        self.config = ConnectorConfig(properties)
        self.connector = LocalConnector(self.config)
        self._records: list[OracleRecord] = []
        self._lock = threading.Condition()
        self._stop = threading.Event()
        self._streaming = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="sparkcdc-conformance", daemon=True)

    def start(self) -> None:
        self.connector.start()  # the slot exists from here on: every later change is streamed
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                batch = self.connector.poll(0.05)
                if not self.connector.snapshot_pending:
                    # As the old in-process snapshot did, the workload starts once the snapshot is
                    # read: a TRUNCATE is not MVCC-safe, an earlier one would empty the snapshot.
                    self._streaming.set()
                if batch:
                    converted = [self._convert(r) for r in batch]
                    with self._lock:
                        self._records.extend(converted)
                        self._lock.notify_all()
        except BaseException as exc:  # noqa: BLE001 - surfaced to the waiting test
            self._error = exc
            self._streaming.set()
            with self._lock:
                self._lock.notify_all()

    def _convert(self, record: EncodedRecord) -> OracleRecord:
        headers = tuple((name, None if raw is None else raw.decode()) for name, raw in record.headers)
        key = None if record.key is None else record.key.decode()
        value = None if record.value is None else record.value.decode()
        return OracleRecord(record.topic, key, value, headers, record.partition)

    @property
    def records(self) -> list[OracleRecord]:
        with self._lock:
            return list(self._records)

    def wait_streaming(self, timeout: float = 60) -> None:
        started = self._streaming.wait(timeout)
        if self._error is not None:
            raise AssertionError(f"sparkcdc failed: {self._error!r}") from self._error
        if not started:
            raise AssertionError(f"sparkcdc did not finish its snapshot and start streaming within {timeout} s")

    def wait_for(self, predicate: Callable[[list[OracleRecord]], Any], timeout: float = 60) -> list[OracleRecord]:
        def ready() -> Any:
            if self._error is not None:
                raise AssertionError(f"sparkcdc failed: {self._error!r}") from self._error
            return predicate(self.records)

        wait_until(ready, timeout=timeout, what="sparkcdc records")
        return self.records

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        self.connector.close()


def _is_end(record: OracleRecord) -> bool:
    return record.op == "m" and record.key_payload == {"prefix": END_PREFIX}


def _ends(records: list[OracleRecord]) -> bool:
    return any(_is_end(r) for r in records)


class Capture:
    """Both running sessions; ``finish()`` ends the capture and returns (Debezium's, sparkcdc's) records.

    ``is_end`` tells the closing message's record (by default: the logical decoding message with
    prefix ``END_PREFIX``); a test whose transforms reshape or reroute that record passes its own."""

    def __init__(self, debezium: Any, ours: SparkcdcSession, db: psycopg.Connection,
                 is_end: Callable[[OracleRecord], bool] | None = None) -> None:
        self.debezium = debezium
        self.ours = ours
        self.db = db
        self.is_end = is_end or _is_end

    def finish(self) -> tuple[list[OracleRecord], list[OracleRecord]]:
        self.db.execute("SELECT pg_logical_emit_message(true, %s, 'x')", (END_PREFIX,))
        ends = lambda records: any(self.is_end(r) for r in records)  # noqa: E731
        theirs = self.debezium.wait_for(ends, timeout=120)
        mine = self.ours.wait_for(ends, timeout=120)
        return _until_end(theirs, self.is_end), _until_end(mine, self.is_end)

    __call__ = finish


@contextmanager
def capture_both(
    oracle: DebeziumOracle,
    cluster: Any,
    db: psycopg.Connection,
    name: str,
    tables: list[str],
    is_end: Callable[[OracleRecord], bool] | None = None,
    **overrides: str,
) -> Iterator[Capture]:
    """Start both connectors; the body runs the workload; calling the yielded :class:`Capture` ends
    the capture (with a closing message) and returns (debezium records, sparkcdc records)."""
    dbz_props = debezium_properties(cluster, slot=f"{name}_d", publication=f"{name}_d", tables=tables, **overrides)
    our_props = dict(dbz_props, **{"slot.name": f"{name}_s", "publication.name": f"{name}_s"})
    with oracle.run(dbz_props) as debezium:
        debezium.wait_streaming()
        ours = SparkcdcSession(our_props)
        ours.start()
        try:
            ours.wait_streaming()
            yield Capture(debezium, ours, db, is_end)
        finally:
            ours.stop()
            db.execute("DROP PUBLICATION IF EXISTS " + f'"{name}_s"')


def _until_end(records: list[OracleRecord], is_end: Callable[[OracleRecord], bool] = _is_end) -> list[OracleRecord]:
    out = []
    for record in records:
        if is_end(record):
            break
        out.append(record)
    # Drop the closing message's transaction records (BEGIN before it).
    while out and out[-1].value_payload and out[-1].value_payload.get("status") == "BEGIN":
        out.pop()
    return out



def assert_both_stop(oracle: DebeziumOracle, db: psycopg.Connection, dbz_props: Mapping[str, str], name: str,
                     change: Callable[[int], None], theirs_words: str, our_words: str) -> None:
    """Both connectors stop on what ``change(run)`` writes once they stream (run 1 for Debezium, 2
    for sparkcdc, each its own slot): Debezium's error holds ``theirs_words``, sparkcdc's ``our_words``.
    For transforms that fail on a record as Kafka Connect's do (a ``DataException`` stops the task)."""
    from .oracle import OracleError

    with pytest.raises(OracleError) as debezium_failure:
        with oracle.run(dict(dbz_props)) as debezium:
            debezium.wait_streaming()
            change(1)
            debezium.wait_for(lambda records: False, timeout=60)
    assert theirs_words in str(debezium_failure.value)

    ours = SparkcdcSession(dict(dbz_props, **{"slot.name": f"{name}_s", "publication.name": f"{name}_s"}))
    ours.start()
    try:
        with pytest.raises(AssertionError) as our_failure:
            ours.wait_streaming()
            change(2)
            ours.wait_for(lambda records: False, timeout=60)
    finally:
        ours.stop()
        db.execute(f'DROP PUBLICATION IF EXISTS "{name}_s"')
        db.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s AND NOT active",
                   (f"{name}_s",))
    assert "sparkcdc failed" in str(our_failure.value) and our_words in str(our_failure.value), str(our_failure.value)

# -- normalization and comparison ---------------------------------------------------------------

def normalize(record: OracleRecord) -> dict[str, Any]:
    value = copy.deepcopy(record.value)
    if value is not None and isinstance(value.get("payload"), dict):
        payload = value["payload"]
        for field in ("ts_ms", "ts_us", "ts_ns"):
            if field in payload and "source" in payload:
                payload[field] = "<processing time>"
        source = payload.get("source")
        if isinstance(source, dict):
            source["version"] = "<version>"
            if source.get("snapshot") in SNAPSHOT_MARKERS:
                for field in ("ts_ms", "ts_us", "ts_ns", "txId", "lsn", "sequence"):
                    source[field] = "<snapshot>"
        collections = payload.get("data_collections") or []
        for entry in collections:
            name = entry.get("data_collection", "")
            if "LogicalDecodingMessageId@" in name or name.startswith("message:"):
                entry["data_collection"] = "<message>"
        if any(entry["data_collection"] == "<message>" for entry in collections):
            # Debezium orders these by the Java hash of each name, and a message's name holds a
            # random identity hash: with a message among them the order is arbitrary.
            collections.sort(key=lambda entry: (entry["data_collection"], entry["event_count"]))
    headers = []
    for name, header in record.headers:
        if name == "__debezium.context.runId":
            header = {**header, "payload": "<run id>"}
        headers.append((name, header))
    return {"topic": record.topic, "key": record.key, "value": value, "headers": headers}


def json_differences(expected: Any, actual: Any, path: str = "") -> list[str]:
    if isinstance(expected, dict) and isinstance(actual, dict):
        out = []
        for key in expected.keys() | actual.keys():
            if key not in actual:
                out.append(f"{path}/{key}: missing in sparkcdc (Debezium: {expected[key]!r:.200})")
            elif key not in expected:
                out.append(f"{path}/{key}: only in sparkcdc ({actual[key]!r:.200})")
            else:
                out.extend(json_differences(expected[key], actual[key], f"{path}/{key}"))
        return out
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return [f"{path}: {len(expected)} items in Debezium, {len(actual)} in sparkcdc: {expected!r:.300} vs {actual!r:.300}"]
        out = []
        for index, (a, b) in enumerate(zip(expected, actual, strict=True)):
            out.extend(json_differences(a, b, f"{path}[{index}]"))
        return out
    if expected != actual or type(expected) is not type(actual):
        return [f"{path}: Debezium {expected!r:.300} != sparkcdc {actual!r:.300}"]
    return []


def by_topic(records: list[OracleRecord]) -> dict[str, list[OracleRecord]]:
    out: dict[str, list[OracleRecord]] = {}
    for record in records:
        out.setdefault(record.topic, []).append(record)
    return out


def assert_same_records(debezium: list[OracleRecord], ours: list[OracleRecord],
                        normalizer: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> None:
    """Every topic has the same records in the same order, equal after normalization (then
    ``normalizer``'s, for fields a transform moved where :func:`normalize` does not look)."""
    theirs_by_topic, ours_by_topic = by_topic(debezium), by_topic(ours)
    problems: list[str] = []
    for topic in sorted(theirs_by_topic.keys() | ours_by_topic.keys()):
        expected, actual = theirs_by_topic.get(topic, []), ours_by_topic.get(topic, [])
        if len(expected) != len(actual):
            problems.append(
                f"{topic}: Debezium sent {len(expected)} records, sparkcdc {len(actual)}:\n"
                f"  Debezium: {[str(r) for r in expected][:12]}\n  sparkcdc: {[str(r) for r in actual][:12]}"
            )
        for index, (a, b) in enumerate(zip(expected, actual, strict=False)):
            left, right = normalize(a), normalize(b)
            if normalizer is not None:
                left, right = normalizer(left), normalizer(right)
            differences = json_differences(left, right)
            if differences:
                problems.append(f"{topic} record {index} ({a}):\n    " + "\n    ".join(sorted(differences)[:25]))
    if problems:
        raise AssertionError(f"{len(problems)} difference(s) between Debezium and sparkcdc:\n" + "\n".join(problems[:30]))


def run_conformance(
    oracle: DebeziumOracle,
    cluster: Any,
    db: psycopg.Connection,
    name: str,
    *,
    setup: list[str],
    tables: list[str],
    workload: list[str] | Callable[[], None],
    is_end: Callable[[OracleRecord], bool] | None = None,
    normalizer: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    **options: str,
) -> tuple[list[OracleRecord], list[OracleRecord]]:
    """Run ``setup`` SQL, capture ``workload`` with both connectors, assert they agree; return both.
    ``is_end`` and ``normalizer``: see :class:`Capture` and :func:`assert_same_records`."""
    for statement in setup:
        db.execute(statement)
    with capture_both(oracle, cluster, db, name, tables, is_end, **options) as finish:
        if callable(workload):
            workload()
        else:
            for statement in workload:
                db.execute(statement)
        debezium, ours = finish()
    assert debezium, "Debezium captured nothing: the workload does not exercise anything"
    assert_same_records(debezium, ours, normalizer)
    return debezium, ours


# -- the same comparison through `sparkcdc run` (a real SparkSession) ---------------------------

def run_conformance_through_spark(
    oracle: DebeziumOracle,
    cluster: Any,
    db: psycopg.Connection,
    name: str,
    work_dir: Path,
    *,
    setup: list[str],
    tables: list[str],
    workload: list[str],
    is_end: Callable[[OracleRecord], bool] | None = None,
    normalizer: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    **options: str,
) -> tuple[list[OracleRecord], list[OracleRecord]]:
    """:func:`run_conformance`, with sparkcdc run as users run it: ``sparkcdc run --once`` (the
    ``postgres-cdc`` source, the topic-files sink) once for the snapshot, and once more, from the
    same checkpoint, for the streamed workload; the records are read back from the topic files.
    ``is_end`` and ``normalizer``: as :func:`run_conformance`'s."""
    from sparkcdc.spark.runner import run_pipeline

    is_end = is_end or _is_end

    for statement in setup:
        db.execute(statement)
    dbz_props = debezium_properties(cluster, slot=f"{name}_d", publication=f"{name}_d", tables=tables, **options)
    our_props = dict(dbz_props, **{"slot.name": f"{name}_s", "publication.name": f"{name}_s", "slot.drop.on.stop": "false"})
    output, checkpoint = work_dir / "topics", work_dir / "checkpoint"
    try:
        with oracle.run(dbz_props) as debezium:
            debezium.wait_streaming()
            run_pipeline(our_props, output=output, checkpoint=checkpoint, once=True)  # the snapshot
            for statement in workload:
                db.execute(statement)
            db.execute("SELECT pg_logical_emit_message(true, %s, 'x')", (END_PREFIX,))
            theirs = _until_end(debezium.wait_for(lambda records: any(is_end(r) for r in records), timeout=120), is_end)
            run_pipeline(our_props, output=output, checkpoint=checkpoint, once=True)  # the stream, to the end message
    finally:
        db.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s", (f"{name}_s",))
        db.execute("DROP PUBLICATION IF EXISTS " + f'"{name}_s"')
    ours = _until_end(topic_files_records(output), is_end)
    assert theirs, "Debezium captured nothing: the workload does not exercise anything"
    assert_same_records(theirs, ours, normalizer)
    return theirs, ours


def topic_files_records(output: Path) -> list[OracleRecord]:
    """Every record of a topic-files output, in the order they were captured."""
    rows = []
    for path in output.rglob("*.jsonl"):
        topic = path.relative_to(output).parts[0]
        for text in path.read_text(encoding="utf-8").splitlines():
            line = json.loads(text)
            headers = tuple((h["name"], h["value"]) for h in line["headers"])
            rows.append(((line["commit_lsn"], line["ordinal"]), OracleRecord(topic, line["key"], line["value"], headers)))
    rows.sort(key=lambda row: row[0])
    return [record for _, record in rows]
