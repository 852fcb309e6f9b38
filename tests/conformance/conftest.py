"""Fixtures for differential conformance tests against real Debezium (see ``oracle.py``)."""

from __future__ import annotations

import pytest

from .oracle import DebeziumOracle


@pytest.fixture(scope="session")
def debezium_oracle() -> DebeziumOracle:
    """The session's Debezium oracle; its JVM starts on the first ``run`` and lives for the process."""
    return DebeziumOracle()
