"""``sparkcdc signal``: a signal built from options, checked, and sent through source, file or kafka.

What was sent is read back the way the connector reads it (the signal table's row, the file
channel's poll, the kafka channel's poll), so the command and the channels agree on the format.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from typer.testing import CliRunner

from sparkcdc.cli.app import EXIT_CONFIG, EXIT_PROBLEMS, app
from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.engine.core.signals import ExecuteSnapshot, LogMessage, Signal, parse_action
from sparkcdc.engine.signal_channels import open_channel

from ..support.waiting import wait_until

RUNNER = CliRunner()


def _config_file(tmp_path: Path, pg_cluster, **extra: str) -> Path:
    properties = {"database.hostname": pg_cluster.host, "database.port": pg_cluster.port, "database.user": "postgres",
                  "database.dbname": "postgres", "topic.prefix": "srv", **extra}
    path = tmp_path / "connector.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in properties.items()))
    return path


def _connector_config(path: Path) -> ConnectorConfig:
    return ConnectorConfig(dict(line.split("=", 1) for line in path.read_text().splitlines()))


def test_execute_snapshot_through_the_source_channel(db, pg_cluster, unique_name, tmp_path) -> None:
    db.execute(f"CREATE TABLE {unique_name}_signal (id varchar(64) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048))")
    config = _config_file(tmp_path, pg_cluster, **{"signal.data.collection": f"public.{unique_name}_signal"})
    result = RUNNER.invoke(app, ["signal", str(config), "execute-snapshot", "--tables", "public.a, public.b", "--id", "s-1",
                                 "--condition", "public.a=id > 5 AND v = 'x=y'", "--condition", "public.b=k < 3",
                                 "--surrogate-key", "k"])
    assert result.exit_code == 0, result.output
    assert f'sent execute-snapshot signal \'s-1\' through the source channel: table "public"."{unique_name}_signal"' in result.output
    (row,) = db.execute(f"SELECT id, type, data FROM {unique_name}_signal").fetchall()
    assert row[:2] == ("s-1", "execute-snapshot")
    assert parse_action(Signal(row[0], row[1], row[2])) == ExecuteSnapshot(
        ("public.a", "public.b"), "incremental", (("public.a", "id > 5 AND v = 'x=y'"), ("public.b", "k < 3")), "k")


def test_log_through_the_file_channel_reads_back_as_sent(pg_cluster, tmp_path) -> None:
    path = tmp_path / "signals.jsonl"
    config = _config_file(tmp_path, pg_cluster, **{"signal.enabled.channels": "file,source", "signal.file": str(path)})
    for message in ("first", "second"):
        result = RUNNER.invoke(app, ["signal", str(config), "log", "--message", message])
        assert result.exit_code == 0, result.output
        assert "through the file channel" in result.output  # the first enabled channel
    signals, _ = open_channel(_connector_config(config), "file").poll(None)
    assert [parse_action(s) for s in signals] == [LogMessage("first"), LogMessage("second")]
    assert len({s.id for s in signals}) == 2  # each a new UUID
    assert json.loads(path.read_text().splitlines()[0])["data"] == {"message": "first"}  # Debezium's line: data an object


def test_stop_snapshot_through_the_kafka_channel(pg_cluster, tmp_path, kafka_broker, unique_name) -> None:
    topic = f"{unique_name}-signal"
    admin = AdminClient({"bootstrap.servers": kafka_broker})
    for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result(10)
    config = _config_file(tmp_path, pg_cluster, **{
        "signal.enabled.channels": "source,kafka", "signal.kafka.topic": topic, "signal.kafka.bootstrap.servers": kafka_broker})
    result = RUNNER.invoke(app, ["signal", str(config), "stop-snapshot", "--channel", "kafka", "--id", "stop-1"])
    assert result.exit_code == 0, result.output
    assert f"through the kafka channel: topic {topic} (key 'srv')" in result.output
    channel = open_channel(_connector_config(config), "kafka")
    try:
        polled: list[Signal] = []
        wait_until(lambda: polled.extend(channel.poll(None)[0]) or polled, timeout=30, what="the signal in the topic")
    finally:
        channel.close()
    assert polled == [Signal("stop-1", "stop-snapshot", '{"data-collections": [], "type": "incremental"}', "kafka")]


@pytest.mark.parametrize(("args", "error"), [
    (["execute-snapshot"], "--tables: execute-snapshot needs the tables"),
    (["execute-snapshot", "--tables", "public.a", "--condition", "id > 5"], "--condition: 'id > 5' must be <schema.table>=<SQL predicate>"),
    (["execute-snapshot", "--tables", "public.a", "--type", "sideways"], "snapshot type 'sideways'"),
    (["pause-snapshot", "--message", "m"], "--message does not apply to a pause-snapshot signal"),
    (["log"], "--message: a log signal needs its --message"),
    (["explode"], "unknown signal 'explode'"),
    (["log", "--message", "m", "--channel", "kafka"], "--channel: the connector does not read the kafka channel"),
])
def test_bad_options_are_refused_before_anything_is_sent(pg_cluster, tmp_path, args, error) -> None:
    path = tmp_path / "signals.jsonl"
    config = _config_file(tmp_path, pg_cluster, **{"signal.enabled.channels": "file", "signal.file": str(path)})
    result = RUNNER.invoke(app, ["signal", str(config), *args])
    assert result.exit_code == EXIT_CONFIG, result.output
    assert error in " ".join(result.output.split())
    assert not path.exists()


def test_a_file_that_cannot_be_written_fails_with_1(pg_cluster, tmp_path) -> None:
    config = _config_file(tmp_path, pg_cluster, **{"signal.enabled.channels": "file", "signal.file": str(tmp_path / "no" / "dir" / "s")})
    result = RUNNER.invoke(app, ["signal", str(config), "log", "--message", "m"])
    assert result.exit_code == EXIT_PROBLEMS
    assert "cannot append to signal.file" in " ".join(result.output.split())
