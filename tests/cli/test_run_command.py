"""``sparkcdc run``: validation first, the runner imported lazily, signals turned into a stop event."""

from __future__ import annotations

import os
import signal
import sys
import threading
import types
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from sparkcdc.apply.errors import ApplyError
from sparkcdc.cli.app import EXIT_CONFIG, EXIT_PROBLEMS, app
from sparkcdc.cli.signals import StopEvent
from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.engine.core.offsets import OffsetError
from sparkcdc.errors import ConfigurationError, ProtocolError, SparkcdcError
from sparkcdc.postgres.errors import SlotNotFoundError

RUNNER = CliRunner()
CONFIG = "database.hostname=203.0.113.1\ndatabase.user=u\ndatabase.dbname=d\ntopic.prefix=p\n"


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "c.properties"
    path.write_text(CONFIG)
    return path


@pytest.fixture
def fake_runner(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """Stands in for sparkcdc.spark.runner (written separately; may not exist yet)."""
    module = types.ModuleType("sparkcdc.spark.runner")
    monkeypatch.setitem(sys.modules, "sparkcdc.spark.runner", module)
    return module


def test_run_passes_config_paths_and_a_stop_event(config_file: Path, fake_runner: types.ModuleType) -> None:
    calls: list[dict[str, Any]] = []

    def run_pipeline(config: ConnectorConfig, **kwargs: Any) -> None:
        calls.append({"config": config, **kwargs})

    fake_runner.run_pipeline = run_pipeline  # type: ignore[attr-defined]
    result = RUNNER.invoke(app, ["run", str(config_file), "--output", "s3a://bucket/out", "--checkpoint", "/tmp/ck",
                                 "--once", "--master", "local[2]"])
    assert result.exit_code == 0, result.output
    (call,) = calls
    assert isinstance(call["config"], ConnectorConfig) and call["config"].get("database.dbname") == "d"
    assert call["output"] == "s3a://bucket/out"  # a URI stays a string, not a mangled Path
    assert (call["checkpoint"], call["once"], call["master"]) == ("/tmp/ck", True, "local[2]")
    assert isinstance(call["stop_event"], threading.Event) and not call["stop_event"].is_set()


def test_defaults(config_file: Path, fake_runner: types.ModuleType) -> None:
    seen: dict[str, Any] = {}
    fake_runner.run_pipeline = lambda config, **kwargs: seen.update(kwargs)  # type: ignore[attr-defined]
    result = RUNNER.invoke(app, ["run", str(config_file), "--output", "out", "--checkpoint", "ck"])
    assert result.exit_code == 0, result.output
    assert (seen["once"], seen["master"], seen["spark_conf"]) == (False, None, {})
    assert (seen["trigger_interval"], seen["kafka"]) == ("1 second", None)


def test_kafka_and_trigger_interval_reach_the_runner(config_file: Path, fake_runner: types.ModuleType) -> None:
    seen: dict[str, Any] = {}
    fake_runner.run_pipeline = lambda config, **kwargs: seen.update(kwargs)  # type: ignore[attr-defined]
    result = RUNNER.invoke(app, ["run", str(config_file), "--kafka", "b1:9092,b2:9092", "--checkpoint", "ck",
                                 "--trigger-interval", "0 seconds"])
    assert result.exit_code == 0, result.output
    assert (seen["kafka"], seen["output"], seen["trigger_interval"]) == ("b1:9092,b2:9092", None, "0 seconds")


def test_trigger_interval_with_once_is_refused(config_file: Path, fake_runner: types.ModuleType) -> None:
    fake_runner.run_pipeline = lambda *a, **k: pytest.fail("the runner must not be called")  # type: ignore[attr-defined]
    result = RUNNER.invoke(app, ["run", str(config_file), "--output", "o", "--checkpoint", "ck", "--once",
                                 "--trigger-interval", "0 seconds"])
    assert result.exit_code == EXIT_CONFIG
    assert "--trigger-interval has no effect with --once" in result.output


def test_kafka_runs_on_its_own(config_file: Path, fake_runner: types.ModuleType) -> None:
    fake_runner.run_pipeline = lambda *a, **k: pytest.fail("the runner must not be called")  # type: ignore[attr-defined]
    result = RUNNER.invoke(app, ["run", str(config_file), "--kafka", "b:9092", "--output", "o", "--checkpoint", "ck"])
    assert result.exit_code == EXIT_CONFIG
    assert "--kafka runs on its own" in result.output


def test_conf_pairs_reach_the_runner(config_file: Path, fake_runner: types.ModuleType) -> None:
    seen: dict[str, Any] = {}
    fake_runner.run_pipeline = lambda config, **kwargs: seen.update(kwargs)  # type: ignore[attr-defined]
    result = RUNNER.invoke(app, ["run", str(config_file), "--output", "o", "--checkpoint", "c",
                                 "--conf", "spark.executor.memory=2g", "--conf", "spark.driver.extraJavaOptions=-Da=b -Dc=d",
                                 "--conf", "spark.executor.memory=3g", "--conf", "spark.empty="])
    assert result.exit_code == 0, result.output
    # as spark-submit: the value keeps its own '=' and spaces, the last of a key wins, empty is a value
    assert seen["spark_conf"] == {"spark.executor.memory": "3g", "spark.driver.extraJavaOptions": "-Da=b -Dc=d", "spark.empty": ""}


@pytest.mark.parametrize("pair", ["spark.executor.memory", "=2g", " =x"])
def test_a_conf_without_key_and_value_is_refused_before_anything_starts(config_file: Path, fake_runner: types.ModuleType,
                                                                        pair: str) -> None:
    fake_runner.run_pipeline = lambda *a, **k: pytest.fail("the runner must not be called")  # type: ignore[attr-defined]
    result = RUNNER.invoke(app, ["run", str(config_file), "--output", "o", "--checkpoint", "c", "--conf", pair])
    assert result.exit_code == EXIT_CONFIG
    assert f"--conf {pair!r}: expected KEY=VALUE" in result.output


def test_sigterm_sets_the_stop_event_and_handlers_are_restored(config_file: Path, fake_runner: types.ModuleType) -> None:
    before = signal.getsignal(signal.SIGTERM)
    observed: dict[str, bool] = {}

    def run_pipeline(config: ConnectorConfig, *, stop_event: threading.Event, **kwargs: Any) -> None:
        observed["before"] = stop_event.is_set()
        os.kill(os.getpid(), signal.SIGTERM)
        observed["after"] = stop_event.wait(timeout=10)  # a bound, not a synchronisation sleep

    fake_runner.run_pipeline = run_pipeline  # type: ignore[attr-defined]
    result = RUNNER.invoke(app, ["run", str(config_file), "--output", "o", "--checkpoint", "c"])
    assert result.exit_code == 0, result.output
    assert observed == {"before": False, "after": True}
    assert "stopping after the current micro-batch" in result.output and "stopped" in result.output
    assert signal.getsignal(signal.SIGTERM) is before


def test_configuration_errors_come_before_the_runner(tmp_path: Path, fake_runner: types.ModuleType) -> None:
    path = tmp_path / "c.properties"
    path.write_text(CONFIG + "slot.name=Bad-Name\n")
    fake_runner.run_pipeline = lambda *a, **k: pytest.fail("the runner must not be called")  # type: ignore[attr-defined]
    result = RUNNER.invoke(app, ["run", str(path), "--output", "o", "--checkpoint", "c"])
    assert result.exit_code == EXIT_CONFIG
    assert f"{path}:5: slot.name:" in result.output


def test_configuration_error_raised_by_the_pipeline_names_the_file(config_file: Path, fake_runner: types.ModuleType) -> None:
    def run_pipeline(*args: Any, **kwargs: Any) -> None:
        raise ConfigurationError("no table matches", prop="table.include.list")

    fake_runner.run_pipeline = run_pipeline  # type: ignore[attr-defined]
    result = RUNNER.invoke(app, ["run", str(config_file), "--output", "o", "--checkpoint", "c"])
    assert result.exit_code == EXIT_CONFIG
    assert f"{config_file}: table.include.list: no table matches" in result.output


def test_missing_runner_module_is_a_clear_error(config_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sparkcdc.spark.runner", None)  # makes the import fail as if absent
    result = RUNNER.invoke(app, ["run", str(config_file), "--output", "o", "--checkpoint", "c"])
    assert result.exit_code == EXIT_PROBLEMS
    assert "no Spark runner (module sparkcdc.spark.runner is missing)" in result.output


def test_output_and_checkpoint_are_required(config_file: Path) -> None:
    result = RUNNER.invoke(app, ["run", str(config_file), "--output", "o"])
    assert result.exit_code == 2 and "--checkpoint" in result.output


def test_second_signal_exits_immediately() -> None:
    exits: list[int] = []
    firsts: list[int] = []
    stop = StopEvent(on_first=firsts.append, exit_immediately=exits.append)
    stop.handle(signal.SIGINT)
    assert stop.is_set() and stop.received == signal.SIGINT and firsts == [signal.SIGINT] and exits == []
    stop.handle(signal.SIGTERM)
    assert exits == [signal.SIGTERM] and firsts == [signal.SIGINT]


def test_rearm_after_another_library_replaced_the_handler() -> None:
    """PySpark's SparkContext installs its own SIGINT handler; rearm puts ours back, exit restores the original."""
    original = signal.getsignal(signal.SIGINT)
    with StopEvent() as stop:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # what creating a SparkContext does, in effect
        assert stop.rearm()
        assert signal.getsignal(signal.SIGINT) == stop.handle
    assert signal.getsignal(signal.SIGINT) is original


def test_polling_the_event_rearms_handlers_another_library_replaced() -> None:
    """How Ctrl-C keeps stopping cleanly although creating a SparkContext replaces the SIGINT handler."""
    with StopEvent() as stop:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        assert stop.is_set() is False
        assert signal.getsignal(signal.SIGINT) == stop.handle


def test_pipeline_failure_exits_1(config_file: Path, fake_runner: types.ModuleType) -> None:
    from sparkcdc.errors import PipelineError  # what sparkcdc.spark.runner raises

    def run_pipeline(*args: Any, **kwargs: Any) -> None:
        raise PipelineError("ReplicationError: slot 'x' is active for PID 7")

    fake_runner.run_pipeline = run_pipeline  # type: ignore[attr-defined]
    result = RUNNER.invoke(app, ["run", str(config_file), "--output", "o", "--checkpoint", "c"])
    assert result.exit_code == EXIT_PROBLEMS
    assert "error: the pipeline failed: ReplicationError: slot 'x' is active for PID 7" in result.output


@pytest.mark.parametrize(
    ("error", "code", "said"),
    [
        (ConfigurationError("must be one of 1, 2", prop="keys"), EXIT_CONFIG, "error: keys: must be one of 1, 2"),
        (SlotNotFoundError("replication slot 'x' does not exist", sqlstate="42704", slot="x"), EXIT_PROBLEMS,
         "error: replication slot 'x' does not exist"),
        (ProtocolError("truncated", message_type="Insert", offset=3), EXIT_PROBLEMS,
         "error: the server's replication stream cannot be read: pgoutput Insert message: truncated (at byte 3)"),
        (ApplyError("the target table has no key"), EXIT_PROBLEMS, "error: writing the changes failed: the target table has no key"),
        (OffsetError("the checkpoint is for slot 'a'"), EXIT_PROBLEMS, "error: the pipeline failed: the checkpoint is for slot 'a'"),
    ],
)
def test_exit_code_follows_the_family(
    config_file: Path, fake_runner: types.ModuleType, error: SparkcdcError, code: int, said: str
) -> None:
    def run_pipeline(*args: Any, **kwargs: Any) -> None:
        raise error

    fake_runner.run_pipeline = run_pipeline  # type: ignore[attr-defined]
    result = RUNNER.invoke(app, ["run", str(config_file), "--output", "o", "--checkpoint", "c"])
    assert result.exit_code == code
    assert said in " ".join(result.output.split())


def test_restarts_are_reported_on_stderr_as_they_happen(config_file: Path, fake_runner: types.ModuleType) -> None:
    def run_pipeline(config: ConnectorConfig, *, on_restart: Any, **kwargs: Any) -> None:
        on_restart("the server went away ([psycopg.OperationalError]: x); restart 1 of 3")

    fake_runner.run_pipeline = run_pipeline  # type: ignore[attr-defined]
    result = RUNNER.invoke(app, ["run", str(config_file), "--output", "o", "--checkpoint", "c"])
    assert result.exit_code == 0, result.output
    assert "restarting: the server went away ([psycopg.OperationalError]: x); restart 1 of 3" in result.output
