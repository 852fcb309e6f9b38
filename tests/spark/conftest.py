"""One local SparkSession for the whole test session (starting Spark costs seconds)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    from sparkcdc.spark.session import spark_session
    from sparkcdc.spark.source import register

    session = spark_session("local[2]", app_name="sparkcdc-tests")
    register(session)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Tansu broker (Kafka wire protocol) for the whole session: its bootstrap servers."""
    from ..support.tansu import tansu_broker

    with tansu_broker(tmp_path_factory.mktemp("tansu")) as bootstrap_servers:
        yield bootstrap_servers
