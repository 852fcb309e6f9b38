"""Fixtures of the Spark tests (the session-wide SparkSession is in tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Tansu broker (Kafka wire protocol) for the whole session: its bootstrap servers."""
    from ..support.tansu import tansu_broker

    with tansu_broker(tmp_path_factory.mktemp("tansu")) as bootstrap_servers:
        yield bootstrap_servers
