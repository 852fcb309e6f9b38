"""The file and kafka signal channels: polled by the driver from a cursor kept in the offset.

The channels' own rules first (no server): complete lines only, a cursor that survives, a file
truncated, replaced or rewritten read again from its start, bad lines skipped. Then through the one
driver and reader (LocalConnector) against the real server and a real Kafka-protocol broker: a
signal sent through a channel runs an incremental snapshot to its end, a driver restarted from the
committed offset does not act on it again, and bad signals never stop the pipeline.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.engine.connector import LocalConnector
from sparkcdc.engine.core.signals import Signal, SignalError
from sparkcdc.engine.signal_channels import open_channel, polled_channels, signal_from_json, signal_to_json
from sparkcdc.engine.signal_channels.file import FileSignalChannel
from sparkcdc.engine.signal_channels.kafka import kafka_client_settings
from sparkcdc.errors import ConfigurationError

from ..support.waiting import wait_until
from .test_incremental_snapshot import _config, _replay, _table


def _line(signal_id: str, kind: str, data: object) -> str:
    return json.dumps({"id": signal_id, "type": kind, "data": data}) + "\n"


def _append(path: Path, text: str) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(text)


# -- the file channel's rules ------------------------------------------------------------------------
def test_file_lines_are_read_once_from_the_cursor_and_a_partial_line_waits(tmp_path: Path) -> None:
    path = tmp_path / "signals.jsonl"
    channel = FileSignalChannel(str(path))
    assert channel.poll(None) == ([], None)  # no file yet
    _append(path, _line("s1", "log", {"message": "one"}) + '{"id": "s2", "type": "log", "da')
    signals, cursor = channel.poll(None)
    assert signals == [Signal("s1", "log", '{"message": "one"}', "file")]
    assert channel.poll(cursor) == ([], cursor)  # nothing new: the same cursor (no batch for it)
    _append(path, 'ta": {"message": "two"}}\n\n')
    signals, cursor = channel.poll(cursor)
    assert [s.id for s in signals] == ["s2"]
    assert cursor["offset"] == path.stat().st_size
    # a new driver, given the committed cursor, goes on from there
    assert FileSignalChannel(str(path)).poll(cursor) == ([], cursor)


@pytest.mark.parametrize("change", ["truncate", "replace", "rewrite"])
def test_a_truncated_replaced_or_rewritten_file_is_read_from_its_start(tmp_path: Path, change: str) -> None:
    path = tmp_path / "signals.jsonl"
    channel = FileSignalChannel(str(path))
    _append(path, _line("old-1", "log", {"message": "x"}) + _line("old-2", "log", {"message": "y"}))
    _, cursor = channel.poll(None)
    if change == "truncate":
        path.write_text(_line("new", "log", {"message": "z"}))  # shorter than the cursor's offset
    elif change == "replace":
        replacement = tmp_path / "next.jsonl"
        replacement.write_text(_line("new", "log", {"message": "z"}) * 3)
        os.replace(replacement, path)
    else:  # the same length, written in place
        old = path.read_bytes()
        new = _line("new", "log", {"message": "z"}).encode()
        path.write_bytes(new + b" " * (len(old) - len(new) - 1) + b"\n")
        os.utime(path, ns=(cursor["mtime_ns"] + 10**9, cursor["mtime_ns"] + 10**9))
    signals, _ = channel.poll(cursor)
    assert signals and {s.id for s in signals} == {"new"}


def test_bad_lines_are_logged_and_skipped(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "signals.jsonl"
    path.write_text('not json\n[1, 2]\n{"id": "t", "data": {}}\n' + _line("ok", "log", {"message": "m"}))
    with caplog.at_level(logging.ERROR, logger="sparkcdc.signals"):
        signals, cursor = FileSignalChannel(str(path)).poll(None)
    assert [s.id for s in signals] == ["ok"] and cursor["offset"] == path.stat().st_size
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 3 and "not valid JSON" in errors[0] and "JSON object" in errors[1] and "no \"type\"" in errors[2]


def test_signal_json_is_debeziums_line_and_reads_back() -> None:
    signal = Signal("a", "execute-snapshot", json.dumps({"data-collections": ["public.t"]}), "file")
    text = signal_to_json(signal)
    assert json.loads(text) == {"id": "a", "type": "execute-snapshot", "data": {"data-collections": ["public.t"]}}
    assert signal_from_json(text, channel="file", default_id="x") == signal
    # data as JSON text (the signal table's form) is taken too; a missing id is named by the place
    assert signal_from_json('{"type": "log", "data": "{\\"message\\": \\"m\\"}"}', channel="kafka", default_id="kafka-0-7") == \
        Signal("kafka-0-7", "log", '{"message": "m"}', "kafka")
    with pytest.raises(SignalError, match="has no \"type\""):
        signal_from_json('{"id": "x"}', channel="file", default_id="y")


def test_the_kafka_channel_needs_its_brokers() -> None:
    base = {"database.hostname": "h", "database.user": "u", "database.dbname": "d", "topic.prefix": "srv"}
    with pytest.raises(ConfigurationError, match="signal.kafka.bootstrap.servers"):
        ConnectorConfig({**base, "signal.enabled.channels": "source,kafka"})
    config = ConnectorConfig({**base, "signal.enabled.channels": "kafka,file", "signal.kafka.bootstrap.servers": "b:9092",
                              "signal.consumer.security.protocol": "plaintext", "signal.consumer.group.id": "mine",
                              "signal.consumer.key.deserializer": "org.apache.kafka.common.serialization.StringDeserializer"})
    channels = polled_channels(config)
    assert list(channels) == ["kafka", "file"]
    assert channels["kafka"].topic == "srv-signal" and str(channels["file"].path) == "file-signals.txt"  # Debezium's defaults
    # signal.consumer.* passes through, prefix stripped (a Java deserializer class cannot: it is left out)
    assert kafka_client_settings(config) == {"bootstrap.servers": "b:9092", "client.id": "sparkcdc-signals",
                                             "security.protocol": "plaintext", "group.id": "mine"}


# -- through the driver --------------------------------------------------------------------------------
def _reads(records, table: str) -> list[dict]:
    return [json.loads(r.value)["after"] for r in records
            if r.value is not None and r.topic.endswith(table) and json.loads(r.value)["op"] == "r"]


def _run_until_done(connector: LocalConnector, out: list, table: str, rows: int) -> None:
    """Poll until ``rows`` read events of ``table`` came and no incremental snapshot runs."""
    wait_until(lambda: out.extend(connector.poll(0.2)) or (len(_reads(out, table)) >= rows and connector.offset is not None
                                                            and connector.offset.get("incremental") is None),
               timeout=60, what=f"the incremental snapshot of {table}")


def _stream_one_change(db, connector: LocalConnector, name: str, out: list) -> None:
    """A change of table a, polled until it came out: the driver has planned batches since."""
    db.execute(f"UPDATE {name}_a SET v = 'marker' WHERE id = 1")
    wait_until(lambda: out.extend(connector.poll(0.2)) or any(
        r.value is not None and json.loads(r.value)["op"] == "u" and r.topic.endswith(f"{name}_a") for r in out),
        timeout=30, what="the marker update")


def test_file_signals_run_an_incremental_snapshot_once_across_a_restart(db, pg_cluster, tables, tmp_path, caplog) -> None:
    name = tables
    path = tmp_path / "signals.jsonl"
    # the file channel alone: the signal table only carries the watermarks
    config = _config(pg_cluster, name, tmp_path, **{"signal.enabled.channels": "file", "signal.file": str(path),
                                                    "signal.poll.interval.ms": "0"})
    channel = open_channel(config, "file")
    out: list = []
    with LocalConnector(config) as connector:
        connector.poll(0.3)
        with caplog.at_level(logging.ERROR):
            _append(path, "{broken\n")
            _append(path, _line("bad-type", "explode", {}))
            channel.send(Signal("file-1", "execute-snapshot", json.dumps({"data-collections": [f"public.{name}_a"]})))
            _run_until_done(connector, out, f"{name}_a", 40)
        assert any("not valid JSON" in r.getMessage() for r in caplog.records)
        assert any("unknown signal type 'explode'" in r.getMessage() for r in caplog.records)
        completed = [n for n in connector.planner.notifier.recent if n.type == "COMPLETED"]
        assert [n.id for n in completed] == ["file-1"]
        committed = connector.offset
        assert committed is not None and committed["signal_cursor"]["file"]["offset"] == path.stat().st_size
    assert sorted(r["id"] for r in _reads(out, f"{name}_a")) == list(range(1, 41))
    assert _replay(out, f"{name}_a", ("id",)) == _table(db, f"{name}_a", ("id",))

    # A new driver from the committed offset: the line is behind its cursor, nothing is read again.
    # Then the file is truncated (emptied as Debezium would) and a new signal written: it is acted on.
    after: list = []
    with LocalConnector(config, offset=committed) as restarted:
        _stream_one_change(db, restarted, name, after)
        assert _reads(after, f"{name}_a") == []
        path.write_text("")
        channel.send(Signal("file-2", "execute-snapshot", json.dumps({"data-collections": [f"public.{name}_b"]})))
        _run_until_done(restarted, after, f"{name}_b", 33)
    assert _reads(after, f"{name}_a") == []
    assert len(_reads(after, f"{name}_b")) == 33


def test_channels_are_polled_at_most_every_signal_poll_interval(db, pg_cluster, tables, tmp_path) -> None:
    name = tables
    path = tmp_path / "signals.jsonl"
    config = _config(pg_cluster, name, tmp_path, **{"signal.enabled.channels": "file", "signal.file": str(path),
                                                    "signal.poll.interval.ms": "600000"})
    out: list = []
    with LocalConnector(config) as connector:
        connector.poll(0.3)  # the first batch polled the (missing) file
        open_channel(config, "file").send(Signal("late", "execute-snapshot", json.dumps({"data-collections": [f"public.{name}_a"]})))
        _stream_one_change(db, connector, name, out)  # batches planned since: none polled the file again
        assert connector.offset is not None and "signal_cursor" not in connector.offset
    assert _reads(out, f"{name}_a") == []


@pytest.fixture
def signal_topic(kafka_broker: str, unique_name: str) -> str:
    topic = f"{unique_name}-signal"
    admin = AdminClient({"bootstrap.servers": kafka_broker})  # kept: the futures die with their client
    for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result(10)
    return topic


def test_kafka_signals_run_an_incremental_snapshot_and_the_offsets_are_kept(db, pg_cluster, tables, tmp_path, kafka_broker,
                                                                            signal_topic, caplog) -> None:
    name = tables
    group = f"{name}-group"
    config = _config(pg_cluster, name, tmp_path, **{
        "signal.enabled.channels": "source,kafka", "signal.kafka.topic": signal_topic, "signal.kafka.bootstrap.servers": kafka_broker,
        "signal.kafka.groupId": group, "signal.poll.interval.ms": "0", "signal.kafka.poll.timeout.ms": "50",
        "signal.consumer.fetch.wait.max.ms": "20",
    })
    channel = open_channel(config, "kafka")
    other_connector = ConnectorConfig({**config.raw, "topic.prefix": "another"})
    out: list = []
    with LocalConnector(config) as connector:
        connector.poll(0.3)
        with caplog.at_level(logging.INFO, logger="sparkcdc.signals"):
            open_channel(other_connector, "kafka").send(Signal("not-ours", "execute-snapshot", json.dumps({"data-collections": [".*"]})))
            _produce_raw(kafka_broker, signal_topic, b"srv", b"{not json")
            channel.send(Signal("kafka-1", "execute-snapshot", json.dumps({"data-collections": [f"public.{name}_b"]})))
            _run_until_done(connector, out, f"{name}_b", 33)
        messages = [r.getMessage() for r in caplog.records]
        assert any("'another' is not this connector's topic.prefix" in m for m in messages)
        assert any("not valid JSON" in m for m in messages)
        committed = connector.offset
        assert committed is not None and committed["signal_cursor"]["kafka"] == {"topic": signal_topic, "offsets": {"0": 3}}
        assert [n.id for n in connector.planner.notifier.recent if n.type == "COMPLETED"] == ["kafka-1"]
        _stream_one_change(db, connector, name, out)  # one more commit: the offsets reach the group
    assert _reads(out, f"{name}_a") == [] and len(_reads(out, f"{name}_b")) == 33
    wait_until(lambda: _committed(kafka_broker, group, signal_topic) == 3, timeout=30, what="the offsets committed to the group")

    after: list = []
    with LocalConnector(config, offset=committed) as restarted:
        _stream_one_change(db, restarted, name, after)
    assert _reads(after, f"{name}_b") == []


def _produce_raw(bootstrap: str, topic: str, key: bytes, value: bytes) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(topic, key=key, value=value)
    assert producer.flush(10) == 0


def _committed(bootstrap: str, group: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        (partition,) = consumer.committed([TopicPartition(topic, 0)], timeout=10)
        return int(partition.offset)
    finally:
        consumer.close()
