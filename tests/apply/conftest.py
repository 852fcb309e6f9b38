"""Fixtures of the apply tests: one harness per target kind (the lake formats and PostgreSQL)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from .targets import HARNESSES, LakeHarness, PostgresHarness


@pytest.fixture(params=[*sorted(HARNESSES), "postgres"])
def any_target(request: pytest.FixtureRequest) -> Iterator[Callable[..., LakeHarness]]:
    """The harness of one target of every kind: the lake formats, and PostgreSQL (its own schema
    of the session cluster)."""
    if request.param != "postgres":
        yield HARNESSES[request.param]
        return
    cluster = request.getfixturevalue("pg_cluster")
    schema = request.getfixturevalue("unique_name")
    opened: list[PostgresHarness] = []

    def open_(*args: Any, **kwargs: Any) -> PostgresHarness:
        harness = PostgresHarness(*args, url=f"postgresql://{cluster.user}@{cluster.host}:{cluster.port}/postgres",
                                  schema=schema, **kwargs)
        opened.append(harness)
        return harness

    yield open_
    for harness in opened:
        harness.close()
