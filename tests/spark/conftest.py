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
