"""offset.mismatch.strategy: a restarted query whose checkpoint and slot disagree resumes as Debezium documents.

Each case runs the in-process connector (the planner and reader the Spark source uses), keeps a
checkpoint (the committed offset), moves the slot past it or leaves the slot behind it, restarts from
the checkpoint and looks at where the replication stream starts, which rows come out and where the
slot is confirmed. The decision table itself is tested purely at the end.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import psycopg
import pytest

import sparkcdc.engine.batch_reader as batch_reader
from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.embedded_postgres import ThrowawayCluster
from sparkcdc.engine.connector import LocalConnector
from sparkcdc.engine.core.offset_mismatch import resume_of
from sparkcdc.engine.driver_slots import SlotMismatchError
from sparkcdc.postgres import drop_slot, get_slot

from ..support.waiting import wait_until

STRATEGIES = ("no_validation", "trust_offset", "trust_slot", "trust_greater_lsn")


@pytest.fixture
def table(db: psycopg.Connection, unique_name: str) -> Iterator[str]:
    name = f"t_{unique_name}"
    db.execute(f"CREATE TABLE {name} (id int PRIMARY KEY)")
    yield name
    if get_slot(db, unique_name) is not None:
        drop_slot(db, unique_name, wait=30)
    db.execute(f"DROP PUBLICATION IF EXISTS {unique_name}")


@pytest.fixture
def starts(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The LSN each replication stream is started at (START_REPLICATION ... LOGICAL <lsn>)."""
    seen: list[int] = []
    real = batch_reader.replication_reader

    def spy(config: ConnectorConfig, source: Any, start_lsn: int) -> Any:
        seen.append(start_lsn)
        return real(config, source, start_lsn)

    monkeypatch.setattr(batch_reader, "replication_reader", spy)
    return seen


def _config(cluster: ThrowawayCluster, name: str, table: str, **extra: str) -> ConnectorConfig:
    return ConnectorConfig({
        "database.hostname": cluster.host, "database.port": str(cluster.port), "database.user": cluster.user,
        "database.dbname": "postgres", "topic.prefix": "mismatch", "slot.name": name, "publication.name": name,
        "publication.autocreate.mode": "filtered", "table.include.list": f"public.{table}", "snapshot.mode": "no_data",
        **extra,
    })


def _ids(connector: LocalConnector, last: int) -> list[int]:
    """The ids streamed until ``last`` is among them; then the batch is committed (as a checkpoint would)."""
    got: list[int] = []

    def done() -> bool:
        got.extend(orjson.loads(r.value)["payload"]["after"]["id"] for r in connector.poll(0.5) if r.value is not None)
        return last in got

    wait_until(done, timeout=60, what=lambda: f"id {last} streamed (have {got})")
    return got


def _commit(connector: LocalConnector) -> dict[str, Any]:
    """Commits what was read (LocalConnector commits a batch when asked for more); the checkpoint."""
    assert connector.poll(0.0) == []
    assert connector.offset is not None
    return connector.offset


def _confirmed(db: psycopg.Connection, slot: str) -> int:
    state = get_slot(db, slot)
    assert state is not None
    return state.confirmed_flush_lsn or 0


def _insert(db: psycopg.Connection, table: str, *ids: int) -> None:
    for i in ids:
        db.execute(f"INSERT INTO {table} VALUES ({i})")


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_slot_ahead_of_the_checkpoint(
    strategy: str, db: psycopg.Connection, pg_cluster: ThrowawayCluster, unique_name: str, table: str, tmp_path: Path,
    starts: list[int],
) -> None:
    """The slot moved past the checkpoint: trust_offset refuses, trust_slot and trust_greater_lsn resume
    from the slot, no_validation starts at the checkpoint and the server skips to the slot."""
    with LocalConnector(_config(pg_cluster, unique_name, table), state_location=str(tmp_path)) as first:
        first.poll(0.0)
        _insert(db, table, 1, 2, 3)
        assert _ids(first, 3) == [1, 2, 3]
        checkpoint = _commit(first)
        _insert(db, table, 4, 5, 6)
        assert _ids(first, 6) == [4, 5, 6]
        _commit(first)
    slot = _confirmed(db, unique_name)
    assert slot > checkpoint["lsn"]
    _insert(db, table, 7)
    starts.clear()
    config = _config(pg_cluster, unique_name, table, **{"offset.mismatch.strategy": strategy})
    with LocalConnector(config, state_location=str(tmp_path), offset=checkpoint) as restarted:
        if strategy == "trust_offset":
            with pytest.raises(SlotMismatchError, match="trust_offset"):
                restarted.poll(0.5)
            assert starts == []  # refused before anything streamed
            return
        assert _ids(restarted, 7) == [7]  # 4..6 are not read again: the slot is past them
    assert starts[0] == (checkpoint["lsn"] if strategy == "no_validation" else slot)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_checkpoint_ahead_of_the_slot(
    strategy: str, db: psycopg.Connection, pg_cluster: ThrowawayCluster, unique_name: str, table: str, tmp_path: Path,
    starts: list[int],
) -> None:
    """The slot stayed behind the checkpoint (lsn.flush.mode=manual before the restart): every strategy
    resumes from the checkpoint; trust_offset and trust_greater_lsn advance the slot to it at the start,
    no_validation and trust_slot leave it until the first batch commits."""
    manual = _config(pg_cluster, unique_name, table, **{"lsn.flush.mode": "manual"})
    with LocalConnector(manual, state_location=str(tmp_path)) as first:
        first.poll(0.0)
        created = _confirmed(db, unique_name)
        _insert(db, table, 1, 2, 3)
        assert _ids(first, 3) == [1, 2, 3]
        checkpoint = _commit(first)
    assert _confirmed(db, unique_name) == created < checkpoint["lsn"]
    _insert(db, table, 4)
    starts.clear()
    config = _config(pg_cluster, unique_name, table, **{"offset.mismatch.strategy": strategy})
    with LocalConnector(config, state_location=str(tmp_path), offset=checkpoint) as restarted:
        assert _ids(restarted, 4) == [4]  # 1..3 are not read again
        assert starts[0] == checkpoint["lsn"]
        advanced = strategy in ("trust_offset", "trust_greater_lsn")
        assert _confirmed(db, unique_name) == (checkpoint["lsn"] if advanced else created)  # the batch is not committed yet
        after = _commit(restarted)
        assert _confirmed(db, unique_name) == after["lsn"] > checkpoint["lsn"]


@pytest.mark.parametrize("strategy", ["trust_offset", "trust_greater_lsn"])
def test_a_slot_behind_is_not_advanced_under_manual_flushing(
    strategy: str, db: psycopg.Connection, pg_cluster: ThrowawayCluster, unique_name: str, table: str, tmp_path: Path,
) -> None:
    manual = _config(pg_cluster, unique_name, table, **{"lsn.flush.mode": "manual", "offset.mismatch.strategy": strategy})
    with LocalConnector(manual, state_location=str(tmp_path)) as first:
        first.poll(0.0)
        created = _confirmed(db, unique_name)
        _insert(db, table, 1)
        _ids(first, 1)
        checkpoint = _commit(first)
    _insert(db, table, 2)
    with LocalConnector(manual, state_location=str(tmp_path), offset=checkpoint) as restarted:
        assert _ids(restarted, 2) == [2]
        assert _confirmed(db, unique_name) == created


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_slot_that_is_gone(
    strategy: str, db: psycopg.Connection, pg_cluster: ThrowawayCluster, unique_name: str, table: str, tmp_path: Path,
) -> None:
    """trust_slot and trust_greater_lsn go on from a new slot (what they trust); the others refuse."""
    with LocalConnector(_config(pg_cluster, unique_name, table), state_location=str(tmp_path)) as first:
        first.poll(0.0)
        _insert(db, table, 1)
        _ids(first, 1)
        checkpoint = _commit(first)
    drop_slot(db, unique_name, wait=30)
    _insert(db, table, 2)  # before the new slot: lost
    config = _config(pg_cluster, unique_name, table, **{"offset.mismatch.strategy": strategy})
    with LocalConnector(config, state_location=str(tmp_path), offset=checkpoint) as restarted:
        if strategy in ("no_validation", "trust_offset"):
            with pytest.raises(SlotMismatchError, match="does not exist"):
                restarted.poll(0.5)
            return
        restarted.poll(0.0)
        assert _confirmed(db, unique_name) > checkpoint["lsn"]
        _insert(db, table, 3)
        assert _ids(restarted, 3) == [3]


@pytest.mark.parametrize(("strategy", "checkpoint", "slot", "read_from", "advance", "error"), [
    ("no_validation", 100, 200, 100, None, False),
    ("trust_offset", 100, 200, 100, None, True),
    ("trust_slot", 100, 200, 200, None, False),
    ("trust_greater_lsn", 100, 200, 200, None, False),
    ("no_validation", 200, 100, 200, None, False),
    ("trust_offset", 200, 100, 200, 200, False),
    ("trust_slot", 200, 100, 200, None, False),
    ("trust_greater_lsn", 200, 100, 200, 200, False),
    ("trust_offset", 150, 150, 150, None, False),
])
def test_the_decision_table(strategy: str, checkpoint: int, slot: int, read_from: int, advance: int | None, error: bool) -> None:
    resume = resume_of(strategy, "s", checkpoint, slot)
    assert (resume.read_from, resume.advance_slot_to, resume.error is not None) == (read_from, advance, error)
