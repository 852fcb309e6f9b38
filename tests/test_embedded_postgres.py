"""The throwaway cluster: configured for logical decoding, private, and gone afterwards."""

from __future__ import annotations

import socket

import psycopg

from sparkcdc.embedded_postgres import ThrowawayCluster


def test_session_cluster_settings(db: psycopg.Connection, pg_cluster: ThrowawayCluster) -> None:
    settings = dict(db.execute(
        "SELECT name, setting FROM pg_settings WHERE name IN ('wal_level', 'max_replication_slots', "
        "'max_wal_senders', 'max_prepared_transactions', 'synchronous_commit', 'listen_addresses', 'port')"
    ).fetchall())
    assert settings["wal_level"] == "logical"
    assert int(settings["max_replication_slots"]) >= 10 and int(settings["max_wal_senders"]) >= 10
    assert int(settings["max_prepared_transactions"]) > 0
    assert settings["synchronous_commit"] == "on"
    assert settings["listen_addresses"] == "127.0.0.1"
    assert int(settings["port"]) == pg_cluster.port
    major = int(db.execute("SHOW server_version_num").fetchone()[0]) // 10000  # type: ignore[index]
    assert major >= 15


def test_cluster_is_deleted_and_its_port_freed() -> None:
    cluster = ThrowawayCluster(settings={"max_connections": 20})
    with cluster:
        root, port = cluster.root, cluster.port
        with psycopg.connect(cluster.conninfo()) as conn:
            assert conn.execute("SHOW max_connections").fetchone() == ("20",)
        assert cluster.server_log() is not None
    assert not root.exists()
    with socket.socket() as sock:
        assert sock.connect_ex(("127.0.0.1", port)) != 0


def test_immediate_stop_and_restart_keep_data() -> None:
    with ThrowawayCluster() as cluster:
        with psycopg.connect(cluster.conninfo(), autocommit=True) as conn:
            conn.execute("CREATE TABLE kept AS SELECT 42 AS answer")
        cluster.stop(mode="immediate")
        assert not cluster.running
        cluster.start()
        with psycopg.connect(cluster.conninfo()) as conn:
            assert conn.execute("SELECT answer FROM kept").fetchone() == (42,)
        assert "database system was interrupted" in cluster.server_log() or "not properly shut down" in cluster.server_log()
