"""``validate --connect`` and ``status`` against the session's PostgreSQL cluster."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg
import pytest
from typer.testing import CliRunner

from sparkcdc.cli.app import EXIT_CONFIG, EXIT_PROBLEMS, app
from sparkcdc.embedded_postgres import ThrowawayCluster
from sparkcdc.lsn import format_lsn
from sparkcdc.postgres import LogicalReplicationReader, ReplicationOptions, create_logical_slot, drop_slot, get_slot

RUNNER = CliRunner()
WIDE = {"COLUMNS": "250"}


def write_config(tmp_path: Path, cluster: ThrowawayCluster, **overrides: Any) -> Path:
    config = {"database.hostname": cluster.host, "database.port": cluster.port, "database.user": cluster.user,
              "database.dbname": "postgres", "topic.prefix": "srv", **overrides}
    path = tmp_path / "connector.json"
    path.write_text(json.dumps({"name": "cli-test", "config": config}))
    return path


def server_state(db: psycopg.Connection) -> dict[str, Any]:
    """Everything validate --connect could conceivably change."""
    return {
        "slots": db.execute("SELECT slot_name::text, confirmed_flush_lsn::text, restart_lsn::text FROM pg_replication_slots ORDER BY 1").fetchall(),
        "publications": db.execute("SELECT pubname::text, puballtables FROM pg_publication ORDER BY 1").fetchall(),
        "publication_tables": db.execute("SELECT pubname::text, schemaname::text, tablename::text FROM pg_publication_tables ORDER BY 1, 2, 3").fetchall(),
        "identities": db.execute("SELECT oid::regclass::text, relreplident::text FROM pg_class WHERE relkind = 'r' ORDER BY 1").fetchall(),
    }


@pytest.fixture
def schema(db: psycopg.Connection, unique_name: str) -> Any:
    db.execute(f"CREATE SCHEMA {unique_name}")
    db.execute(f"CREATE TABLE {unique_name}.orders (id int PRIMARY KEY, total numeric)")
    db.execute(f"CREATE TABLE {unique_name}.items (id int PRIMARY KEY, name text)")
    db.execute(f"CREATE TABLE {unique_name}.audit (at timestamptz)")  # no key
    db.execute(f"CREATE TABLE {unique_name}.ignored (id int PRIMARY KEY)")
    yield unique_name
    for name in (unique_name, f"{unique_name}_other"):
        drop_slot(db, name, wait=30)  # a just-closed walsender releases its slot a moment later
        db.execute(f"DROP PUBLICATION IF EXISTS {name}")
    db.execute(f"DROP SCHEMA {unique_name} CASCADE")


def test_validate_connect_reports_and_changes_nothing(tmp_path: Path, pg_cluster: ThrowawayCluster,
                                                      db: psycopg.Connection, schema: str) -> None:
    # A configuration whose first run would change the database: alter the publication's tables,
    # set replica identities and create a slot. validate --connect must only say so.
    db.execute(f"CREATE PUBLICATION {schema} FOR TABLE {schema}.ignored")
    path = write_config(tmp_path, pg_cluster, **{
        "slot.name": schema, "publication.name": schema, "publication.autocreate.mode": "filtered",
        "table.include.list": f"{schema}\\.items,{schema}\\.orders,{schema}\\.audit",
        "replica.identity.autoset.values": f"{schema}\\.audit:FULL",
    })
    before = server_state(db)
    result = RUNNER.invoke(app, ["validate", str(path), "--connect"], env=WIDE)
    assert result.exit_code == 0, result.output
    out = result.output
    assert "Captured tables (3)" in out
    captured = out[out.index("Captured tables"):]
    # capture order is the include list's order
    assert captured.index(f"{schema}.items") < captured.index(f"{schema}.orders") < captured.index(f"{schema}.audit")
    assert f"{schema}.ignored" not in captured[:captured.index("A run would")]
    assert f"publication {schema}" in out and "exists, 1 table(s)" in out
    assert f"slot {schema}" in out and "does not exist" in out
    assert f"change publication '{schema}' to the 3 captured table(s)" in out
    assert f"create replication slot '{schema}'" in out
    assert f"warning: {schema}.audit has no replica identity" in out
    assert server_state(db) == before
    assert get_slot(db, schema) is None


def test_validate_connect_sees_an_existing_slot_and_publication(tmp_path: Path, pg_cluster: ThrowawayCluster,
                                                                db: psycopg.Connection, schema: str) -> None:
    create_logical_slot(db, schema)
    db.execute(f"CREATE PUBLICATION {schema} FOR TABLE {schema}.orders")
    path = write_config(tmp_path, pg_cluster, **{"slot.name": schema, "publication.name": schema,
                                                 "schema.include.list": schema, "table.exclude.list": f"{schema}\\.audit"})
    result = RUNNER.invoke(app, ["validate", str(path), "--connect"], env=WIDE)
    assert result.exit_code == 0, result.output
    assert "exists (logical, plugin pgoutput, database postgres, inactive)" in result.output
    assert "Captured tables (3)" in result.output
    assert f"{schema}.ignored, {schema}.items is captured but not in publication '{schema}'" in result.output
    assert "A run would" not in result.output  # slot and publication exist; the slot means no initial snapshot


def test_validate_connect_reports_privilege_problems(tmp_path: Path, pg_cluster: ThrowawayCluster,
                                                     db: psycopg.Connection, schema: str) -> None:
    role = f"{schema}_weak"
    db.execute(f"CREATE ROLE {role} LOGIN")
    try:
        path = write_config(tmp_path, pg_cluster, **{"database.user": role, "slot.name": schema, "publication.name": schema,
                                                     "schema.include.list": schema})
        result = RUNNER.invoke(app, ["validate", str(path), "--connect"], env=WIDE)
    finally:
        db.execute(f"DROP ROLE {role}")
    assert result.exit_code == EXIT_PROBLEMS, result.output
    assert f"error: role '{role}' may not use replication" in result.output
    assert f"ALTER ROLE {role} REPLICATION;" in result.output
    out = " ".join(result.output.split())  # long lines wrap
    assert f"error: role '{role}' cannot read {schema}.audit" in out
    assert f"GRANT USAGE ON SCHEMA {schema} TO {role}; GRANT SELECT ON {schema}.audit, {schema}.ignored, {schema}.items, " \
           f"{schema}.orders TO {role};" in out
    assert f"error: creating publication '{schema}' FOR ALL TABLES needs a superuser" in result.output


def test_validate_connect_filtered_without_tables_is_a_configuration_error(tmp_path: Path, pg_cluster: ThrowawayCluster) -> None:
    path = write_config(tmp_path, pg_cluster, **{"publication.autocreate.mode": "filtered", "table.include.list": "nothing\\.here"})
    result = RUNNER.invoke(app, ["validate", str(path), "--connect"], env=WIDE)
    assert result.exit_code == EXIT_CONFIG
    assert f"{path}: table.include.list: no table matches" in result.output


def test_validate_connect_to_nowhere_exits_1(tmp_path: Path, pg_cluster: ThrowawayCluster) -> None:
    path = write_config(tmp_path, pg_cluster, **{"database.hostname": "127.0.0.1", "database.port": 1})
    result = RUNNER.invoke(app, ["validate", str(path), "--connect"], env=WIDE)
    assert result.exit_code == EXIT_PROBLEMS
    assert "error: cannot connect to 127.0.0.1:1/postgres" in result.output


def test_status_reports_slot_lag_publication_and_checkpoint(tmp_path: Path, pg_cluster: ThrowawayCluster,
                                                            db: psycopg.Connection, schema: str) -> None:
    consistent_point = create_logical_slot(db, schema)
    db.execute(f"CREATE PUBLICATION {schema} FOR TABLE {schema}.orders, {schema}.items WITH (publish = 'insert, update')")
    db.execute(f"INSERT INTO {schema}.orders SELECT g, g FROM generate_series(1, 500) g")
    checkpoint = tmp_path / "checkpoint"
    for folder in ("offsets", "commits"):
        (checkpoint / folder).mkdir(parents=True)
    offset = {"v": 1, "slot": schema, "db": "postgres", "phase": "stream", "lsn": consistent_point, "hb": 0}
    (checkpoint / "offsets" / "0").write_text('v1\n{"batchWatermarkMs":0,"batchTimestampMs":1,"conf":{}}\n' + json.dumps(offset))
    (checkpoint / "commits" / "0").write_text('v1\n{"nextBatchWatermarkMs":0}')
    path = write_config(tmp_path, pg_cluster, **{"slot.name": schema, "publication.name": schema})
    wal_before = db.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0]

    result = RUNNER.invoke(app, ["status", str(path), "--json", "--checkpoint", str(checkpoint)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    slot = report["slot"]
    assert (slot["exists"], slot["active"], slot["active_pid"], slot["plugin"]) == (True, False, None, "pgoutput")
    assert slot["confirmed_flush_lsn"] == format_lsn(consistent_point)
    wal_after = db.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0]
    low, high = db.execute("SELECT pg_wal_lsn_diff(%s::pg_lsn, %s::pg_lsn)::bigint, pg_wal_lsn_diff(%s::pg_lsn, %s::pg_lsn)::bigint",
                           (wal_before, format_lsn(consistent_point), wal_after, format_lsn(consistent_point))).fetchone()
    assert low <= slot["lag_bytes"] <= high and slot["lag_bytes"] > 0
    assert slot["wal_status"] == "reserved"
    assert report["publication"] == {"name": schema, "exists": True, "all_tables": False, "operations": ["insert", "update"],
                                     "tables": [f"{schema}.items", f"{schema}.orders"]}
    committed = report["checkpoint"]["last_committed"]
    assert (committed["batch"], committed["phase"], committed["lsn"], committed["slot"]) == (0, "stream", format_lsn(consistent_point), schema)
    assert report["errors"] == [] and report["warnings"] == []

    human = RUNNER.invoke(app, ["status", str(path), "--checkpoint", str(checkpoint)], env=WIDE)
    assert human.exit_code == 0, human.output
    assert f"Slot {schema} (database postgres)" in human.output
    assert f"batch 0: phase stream, lsn {format_lsn(consistent_point)}" in human.output


def test_status_shows_the_active_pid(tmp_path: Path, pg_cluster: ThrowawayCluster, db: psycopg.Connection, schema: str) -> None:
    create_logical_slot(db, schema)
    db.execute(f"CREATE PUBLICATION {schema} FOR TABLE {schema}.orders")
    path = write_config(tmp_path, pg_cluster, **{"slot.name": schema, "publication.name": schema})
    with LogicalReplicationReader(pg_cluster.conninfo(), ReplicationOptions(schema, (schema,))) as reader:
        result = RUNNER.invoke(app, ["status", str(path), "--json"])
        pid = reader.backend_pid()
    report = json.loads(result.stdout)
    assert report["slot"]["active"] is True and report["slot"]["active_pid"] == pid


def test_status_warns_when_the_slot_is_past_the_checkpoint(tmp_path: Path, pg_cluster: ThrowawayCluster,
                                                           db: psycopg.Connection, schema: str) -> None:
    start = create_logical_slot(db, schema)
    db.execute(f"INSERT INTO {schema}.items VALUES (1, 'x')")
    db.execute("SELECT pg_replication_slot_advance(%s, pg_current_wal_lsn())", (schema,))
    checkpoint = tmp_path / "ck"
    for folder in ("offsets", "commits"):
        (checkpoint / folder).mkdir(parents=True)
    offset = {"v": 1, "slot": schema, "db": "postgres", "phase": "stream", "lsn": start, "hb": 0}
    (checkpoint / "offsets" / "3").write_text("v1\n{}\n" + json.dumps(offset))
    (checkpoint / "commits" / "3").write_text("v1\n{}")
    path = write_config(tmp_path, pg_cluster, **{"slot.name": schema})
    report = json.loads(RUNNER.invoke(app, ["status", str(path), "--json", "--checkpoint", str(checkpoint)]).stdout)
    (warning,) = report["warnings"]
    assert f"past the checkpoint's committed {format_lsn(start)}" in warning


def test_status_of_a_missing_slot_and_publication(tmp_path: Path, pg_cluster: ThrowawayCluster, unique_name: str) -> None:
    path = write_config(tmp_path, pg_cluster, **{"slot.name": unique_name, "publication.name": unique_name})
    result = RUNNER.invoke(app, ["status", str(path), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["slot"] == {"name": unique_name, "exists": False}
    assert report["publication"] == {"name": unique_name, "exists": False}


def test_status_bad_checkpoint_is_an_argument_error(tmp_path: Path, pg_cluster: ThrowawayCluster) -> None:
    path = write_config(tmp_path, pg_cluster)
    result = RUNNER.invoke(app, ["status", str(path), "--checkpoint", str(tmp_path)])
    assert result.exit_code == EXIT_CONFIG and "not a Spark checkpoint directory" in result.output


def test_the_inspection_connection_cannot_write(tmp_path: Path, pg_cluster: ThrowawayCluster, unique_name: str) -> None:
    """Table and catalog writes are refused by the server itself (slot functions are not: see sparkcdc.postgres.server_facts)."""
    from sparkcdc.cli.config_files import load_config
    from sparkcdc.cli.server import connect_read_only

    loaded = load_config(write_config(tmp_path, pg_cluster))
    with connect_read_only(loaded.config) as conn:
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            conn.execute(f"CREATE TABLE {unique_name} (a int)")
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            conn.execute(f"CREATE PUBLICATION {unique_name}")


def test_status_without_a_server_still_shows_the_checkpoint(tmp_path: Path, pg_cluster: ThrowawayCluster) -> None:
    checkpoint = tmp_path / "ck"
    for folder in ("offsets", "commits"):
        (checkpoint / folder).mkdir(parents=True)
    (checkpoint / "offsets" / "0").write_text('v1\n{}\n{"v": 1, "slot": "debezium", "db": "postgres", "phase": "stream", "lsn": 4096}')
    (checkpoint / "commits" / "0").write_text("v1\n{}")
    path = write_config(tmp_path, pg_cluster, **{"database.hostname": "127.0.0.1", "database.port": 1})
    result = RUNNER.invoke(app, ["status", str(path), "--json", "--checkpoint", str(checkpoint)])
    assert result.exit_code == EXIT_PROBLEMS
    report = json.loads(result.stdout)
    assert "slot" not in report and report["checkpoint"]["last_committed"]["lsn"] == "0/1000"
    assert report["errors"][0].startswith("cannot read the server state of 127.0.0.1:1/postgres")


def test_filtered_mode_cannot_narrow_an_all_tables_publication(tmp_path: Path, pg_cluster: ThrowawayCluster,
                                                               db: psycopg.Connection, schema: str) -> None:
    db.execute(f"CREATE PUBLICATION {schema} FOR ALL TABLES")
    path = write_config(tmp_path, pg_cluster, **{"publication.name": schema, "publication.autocreate.mode": "filtered",
                                                 "schema.include.list": schema})
    result = RUNNER.invoke(app, ["validate", str(path), "--connect"], env=WIDE)
    assert result.exit_code == EXIT_PROBLEMS
    assert f"error: publication '{schema}' is FOR ALL TABLES" in result.output


def test_status_shows_what_postgresql_17_tells_of_a_slot(tmp_path: Path, pg18_cluster: ThrowawayCluster, unique_name: str) -> None:
    """17+ says since when nothing reads a slot and whether it is a failover slot; status shows both
    (and would show ``invalidation_reason``: see tests/spark/test_slot_invalidation.py)."""
    with psycopg.connect(pg18_cluster.conninfo(), autocommit=True) as conn:
        create_logical_slot(conn, unique_name, failover=True)
        try:
            path = write_config(tmp_path, pg18_cluster, **{"slot.name": unique_name, "publication.name": unique_name})
            report = json.loads(RUNNER.invoke(app, ["status", str(path), "--json"]).stdout)
            human = RUNNER.invoke(app, ["status", str(path)], env=WIDE).stdout
        finally:
            drop_slot(conn, unique_name)
    slot = report["slot"]
    assert slot["failover"] is True and slot["synced"] is False and slot["invalidation_reason"] is None
    assert slot["inactive_since"] is not None and slot["inactive_since"].startswith("20")
    assert "inactive_since" in human and "failover" in human
    assert not report["errors"]
