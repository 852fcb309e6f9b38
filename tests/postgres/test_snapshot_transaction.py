"""Snapshot transactions: the isolation level is really applied, and an exported snapshot is imported."""

from __future__ import annotations

import psycopg
import pytest

from sparkcdc.postgres.errors import ExportedSnapshotGoneError
from sparkcdc.postgres.slots import ExportedSnapshotSlot, drop_slot
from sparkcdc.postgres.snapshot import SnapshotTransaction


def test_isolation_level_is_applied(pg_cluster) -> None:
    with SnapshotTransaction(pg_cluster.conninfo(), isolation="serializable") as tx:
        row = tx.conn.execute("SELECT current_setting('transaction_isolation'), current_setting('transaction_read_only')").fetchone()
    assert row == ("serializable", "on")


def test_exported_snapshot_is_imported_and_rows_come_as_text(db: psycopg.Connection, pg_cluster, unique_name: str) -> None:
    t = f"t_{unique_name}"
    db.execute(f"CREATE TABLE {t} (id int PRIMARY KEY, c char(4), b bytea, a int[])")
    db.execute(f"INSERT INTO {t} VALUES (1, 'x', '\\x01ff', '{{1,NULL}}')")
    with ExportedSnapshotSlot(pg_cluster.conninfo(), unique_name) as slot:
        db.execute(f"INSERT INTO {t} VALUES (2, 'y', NULL, NULL)")
        with SnapshotTransaction(pg_cluster.conninfo(), snapshot_name=slot.snapshot_name) as tx:
            level = tx.conn.execute("SELECT current_setting('transaction_isolation')").fetchone()
            rows = list(tx.table_rows("public", t, ["id", "c", "b", "a"]))
    drop_slot(db, unique_name, wait=30)
    assert level == ("repeatable read",)
    assert rows == [("1", "x   ", "\\x01ff", "{1,NULL}")]


def test_rows_undo_copys_escapes_and_nulls(db: psycopg.Connection, pg_cluster, unique_name: str) -> None:
    """COPY's text escapes (backslash, tab, newline, carriage return…), NULL against the text
    ``\\N``, and characters beyond ASCII come back as the server holds them, in lines with and
    without a backslash."""
    t = f"t_{unique_name}"
    texts = ["plain", "tab\there", "line\nbreak\r\n", "back\\slash", "\\N", "ünï\\cödé\t\b\f\v", "", None]
    db.execute(f"CREATE TABLE {t} (id int PRIMARY KEY, v text, w text)")
    with db.cursor() as cur:
        cur.executemany(f"INSERT INTO {t} VALUES (%s, %s, %s)", [(i, v, "x") for i, v in enumerate(texts)])
    with SnapshotTransaction(pg_cluster.conninfo()) as tx:
        rows = list(tx.rows(f"SELECT id, v, w FROM {t} ORDER BY id", 3))
    assert rows == [(str(i), v, "x") for i, v in enumerate(texts)]


@pytest.mark.parametrize("major", ["15", "18"])
def test_a_snapshot_whose_exporter_ended_is_one_error_on_every_major(request: pytest.FixtureRequest, major: str,
                                                                     unique_name: str) -> None:
    """15 refuses the import with SQLSTATE 22023, 18 with 42704: both are ExportedSnapshotGoneError
    (the incremental reader then reads the chunk as the table is now; a parallel snapshot names it)."""
    cluster = request.getfixturevalue("pg15_cluster" if major == "15" else "pg18_cluster")
    with ExportedSnapshotSlot(cluster.conninfo(), unique_name) as slot:
        name = slot.snapshot_name
    with pytest.raises(ExportedSnapshotGoneError, match=name):
        SnapshotTransaction(cluster.conninfo(), snapshot_name=name)
    with psycopg.connect(cluster.conninfo(), autocommit=True) as conn:
        drop_slot(conn, unique_name, wait=30)
