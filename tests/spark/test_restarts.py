"""Which failures restart the query, and how often: classified by exception type and SQLSTATE."""

from __future__ import annotations

import psycopg
import psycopg.errors
import pytest

from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.errors import ConfigurationError
from sparkcdc.postgres.errors import ReplicationConnectionLost, ReplicationError, SlotInUseError, SlotNotFoundError
from sparkcdc.spark.restarts import RestartPolicy, exception_types, retriable, retriable_cause

BASE = {"database.hostname": "h", "database.user": "u", "database.dbname": "d", "topic.prefix": "p"}


@pytest.mark.parametrize("error", [
    psycopg.OperationalError,  # no SQLSTATE: the connection could not be made or broke
    psycopg.errors.AdminShutdown, psycopg.errors.CrashShutdown, psycopg.errors.CannotConnectNow,
    psycopg.errors.ConnectionFailure, psycopg.errors.TooManyConnections, psycopg.errors.ObjectInUse,
    ReplicationConnectionLost, SlotInUseError,
])
def test_a_server_that_went_away_is_retriable(error: type[BaseException]) -> None:
    assert retriable(error)


@pytest.mark.parametrize("error", [
    psycopg.errors.QueryCanceled, psycopg.errors.DatabaseDropped, psycopg.errors.UndefinedTable,
    psycopg.errors.InsufficientPrivilege, SlotNotFoundError, ReplicationError, RuntimeError, ValueError,
])
def test_other_failures_are_not(error: type[BaseException]) -> None:
    assert not retriable(error)


SPARK_REPORT = """[PYTHON_STREAMING_DATA_SOURCE_RUNTIME_ERROR] Failed when Python streaming data source perform latestOffset: Traceback (most recent call last):
  File "/x/planner.py", line 170, in latest_offset
psycopg.OperationalError: consuming input failed: server closed the connection unexpectedly
During handling of the above exception, another exception occurred:
sparkcdc.postgres.errors.SlotNotFoundError: replication slot "s" does not exist
org.apache.spark.SparkException: the query failed
"""


def test_the_last_python_exception_of_the_report_decides() -> None:
    names = [error for error, _ in exception_types(SPARK_REPORT)]
    assert names == [psycopg.OperationalError, SlotNotFoundError]  # Java names are not looked up
    assert retriable_cause(SPARK_REPORT) is None
    first = SPARK_REPORT.split("During handling")[0]
    assert retriable_cause(first) == "psycopg.OperationalError: consuming input failed: server closed the connection unexpectedly"


def test_message_text_does_not_classify() -> None:
    assert retriable_cause("ValueError: connection refused, server closed the connection") is None
    assert retriable_cause("sparkcdc.no.such.Module: connection lost") is None
    assert retriable_cause("psycopg.errors.AdminShutdown: terminating connection due to administrator command")


@pytest.mark.parametrize(("retries", "allowed"), [("-1", [True] * 5), ("0", [False]), ("2", [True, True, False])])
def test_errors_max_retries_counts_consecutive_restarts(retries: str, allowed: list[bool]) -> None:
    policy = RestartPolicy.from_config(ConnectorConfig({**BASE, "errors.max.retries": retries}))
    assert [policy.allows(n) for n in range(len(allowed))] == allowed
    assert policy.wait_seconds == 10.0  # retriable.restart.connector.wait.ms defaults to 10000


def test_the_wait_and_a_bad_limit() -> None:
    config = ConnectorConfig({**BASE, "retriable.restart.connector.wait.ms": "250"})
    assert RestartPolicy.from_config(config) == RestartPolicy(None, 0.25)
    with pytest.raises(ConfigurationError, match=r"errors\.max\.retries"):
        RestartPolicy.from_config(ConnectorConfig({**BASE, "errors.max.retries": "-2"}))
