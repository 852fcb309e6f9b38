"""What only newer servers send, read live from PostgreSQL 18: protocol v4 with
``streaming = parallel`` (16+), whose Stream Abort carries the abort's LSN and time, and the
Relation and tuples of a publication with ``publish_generated_columns = stored`` (18)."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from sparkcdc.pgoutput import Insert, Relation, StreamAbort, StreamCommit, StreamStart
from sparkcdc.postgres import LogicalReplicationReader, ReplicationOptions
from sparkcdc.postgres.slots import current_wal_lsn

from ..support.capture import of_type, read_until, slot_capture


@pytest.fixture
def db18(pg18_cluster) -> Iterator[psycopg.Connection]:
    with psycopg.connect(pg18_cluster.conninfo(), autocommit=True) as conn:
        yield conn


def _fill(conn: psycopg.Connection, table: str, start: int, count: int) -> None:
    conn.execute(f"INSERT INTO {table} SELECT g, repeat('x', 200) FROM generate_series(%s::int, %s::int) g",
                 (start, start + count - 1))


def test_parallel_streaming_abort_carries_its_lsn_and_time(pg18_cluster, db18: psycopg.Connection, unique_name: str) -> None:
    """A large transaction streamed under v4/parallel and rolled back: the Stream Abort names the
    abort's LSN (at or past the WAL position before the ROLLBACK) and a time; a second one that
    commits arrives as a Stream Commit, every row streamed before it."""
    table = f"t_{unique_name}"
    db18.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, pad text)")
    conninfo = pg18_cluster.conninfo(options="-c logical_decoding_work_mem=64kB")
    options = ReplicationOptions(unique_name, (unique_name,), proto_version=4, streaming="parallel")
    with slot_capture(db18, unique_name, [("public", table)]), LogicalReplicationReader(conninfo, options) as reader:
        with psycopg.connect(pg18_cluster.conninfo()) as tx:
            _fill(tx, table, 1, 2000)
            xid = int(tx.execute("SELECT txid_current()").fetchone()[0])  # type: ignore[index]
            read_until(reader, lambda m: isinstance(m, Insert) and int(m.new_tuple[0]) >= 1000)
            before = current_wal_lsn(db18)
            tx.rollback()
        (abort,) = of_type(read_until(reader, lambda m: isinstance(m, StreamAbort)), StreamAbort)
        with psycopg.connect(pg18_cluster.conninfo()) as tx:
            _fill(tx, table, 1, 2000)
        committed = read_until(reader, lambda m: isinstance(m, StreamCommit))

    assert (abort.xid, abort.subxid) == (xid, xid)
    assert abort.abort_lsn is not None and abort.abort_lsn >= before
    assert abort.abort_ts_us is not None and abort.abort_ts_us > 0
    assert len(of_type(committed, StreamStart)) >= 1
    assert sorted(int(m.new_tuple[0]) for m in of_type(committed, Insert)) == list(range(1, 2001))


def test_published_generated_columns(db18: psycopg.Connection, unique_name: str) -> None:
    """``publish_generated_columns = stored``: the Relation lists the stored generated column and
    each tuple carries its value; a publication without it lists only the other columns."""
    table = f"g_{unique_name}"
    db18.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, a int, g int GENERATED ALWAYS AS (a * 2) STORED)")
    with slot_capture(db18, unique_name, [("public", table)]) as cap:
        db18.execute(f'ALTER PUBLICATION "{unique_name}" SET (publish_generated_columns = stored)')
        db18.execute(f"INSERT INTO {table} (id, a) VALUES (1, 21)")
        with_generated = cap.decoded()
        db18.execute(f'ALTER PUBLICATION "{unique_name}" SET (publish_generated_columns = none)')
        db18.execute(f"INSERT INTO {table} (id, a) VALUES (2, 5)")
        without = cap.decoded()

    assert [c.name for c in of_type(with_generated, Relation)[0].columns] == ["id", "a", "g"]
    assert of_type(with_generated, Insert)[0].new_tuple == ("1", "21", "42")
    assert [c.name for c in of_type(without, Relation)[0].columns] == ["id", "a"]
    assert of_type(without, Insert)[0].new_tuple == ("2", "5")
