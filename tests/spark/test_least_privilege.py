"""sparkcdc as a managed service lets it run: a role with REPLICATION and SELECT on the captured tables,
nothing more (no superuser, no table ownership), the publication made beforehand by the tables' owner
(``publication.autocreate.mode=disabled``); docs/privileges.md.

One module-scoped setup on the session cluster: schema ``lp`` owned by postgres, its tables, the
publication, the role ``lp_cdc`` (REPLICATION; SELECT on ``lp.a`` and ``lp.b``; what the heartbeat
statement writes) and ``lp_none`` (LOGIN only). The paths run through the real SparkSession and the
CLI: initial snapshot, streaming, a blocking snapshot, an incremental snapshot refused for want of
INSERT on the signal table and taken once granted, a read-only incremental snapshot (no write at
all), ``validate --connect``, ``status`` and the metrics' slot poll; and a stream range decoded in
the stream task's processes (each opens its own connection as the role).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from typer.testing import CliRunner

from sparkcdc.cli.app import EXIT_PROBLEMS, app
from sparkcdc.embedded_postgres import ThrowawayCluster
from sparkcdc.postgres import drop_slot
from sparkcdc.spark.metrics import MetricsCollector
from sparkcdc.spark.runner import run_pipeline

from ..support.waiting import wait_until
from .support import output_lines, payload, run_once

RUNNER = CliRunner()
WIDE = {"COLUMNS": "400"}
ROLE, NONE = "lp_cdc", "lp_none"
HEARTBEAT = "INSERT INTO lp.hb VALUES (1, now()) ON CONFLICT (id) DO UPDATE SET at = now()"
SLOTS = ("lp_main", "lp_ro", "lp_main_blocking", "lp_decoded")


@pytest.fixture(scope="module")
def owner(pg_cluster: ThrowawayCluster) -> Iterator[psycopg.Connection]:
    """The tables' owner (postgres) after setting everything up as an owner would; everything is dropped after."""
    with psycopg.connect(pg_cluster.conninfo(), autocommit=True) as db:
        for statement in (
            f"CREATE ROLE {ROLE} LOGIN REPLICATION",
            f"CREATE ROLE {NONE} LOGIN",
            "CREATE SCHEMA lp",
            "CREATE TABLE lp.a (id int PRIMARY KEY, v text)",
            "CREATE TABLE lp.b (id int PRIMARY KEY, v text)",
            "CREATE TABLE lp.sig (id varchar(64) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048))",
            "CREATE TABLE lp.hb (id int PRIMARY KEY, at timestamptz)",
            "INSERT INTO lp.a SELECT g, 'a' || g FROM generate_series(1, 5) g",
            "INSERT INTO lp.b SELECT g, 'b' || g FROM generate_series(1, 3) g",
            f"GRANT USAGE ON SCHEMA lp TO {ROLE}",
            f"GRANT SELECT ON lp.a, lp.b TO {ROLE}",
            f"GRANT INSERT, UPDATE, SELECT ON lp.hb TO {ROLE}",  # what the heartbeat statement needs, and only that
            "CREATE PUBLICATION lp_pub FOR TABLE lp.a, lp.b, lp.sig",
        ):
            db.execute(statement)
        try:
            yield db
        finally:
            for slot in SLOTS:
                drop_slot(db, slot, wait=30)
            db.execute("DROP PUBLICATION IF EXISTS lp_pub")
            db.execute("DROP SCHEMA lp CASCADE")
            for role in (ROLE, NONE):
                db.execute(f"DROP OWNED BY {role}")
                db.execute(f"DROP ROLE {role}")


def props(cluster: ThrowawayCluster, slot: str, **overrides: str) -> dict[str, str]:
    return {
        "name": "least-privilege", "database.hostname": cluster.host, "database.port": str(cluster.port),
        "database.user": ROLE, "database.dbname": "postgres", "topic.prefix": "srv", "slot.name": slot,
        "publication.name": "lp_pub", "publication.autocreate.mode": "disabled",
        "table.include.list": r"lp\.a,lp\.b", "signal.data.collection": "lp.sig",
        "heartbeat.interval.ms": "100", "heartbeat.action.query": HEARTBEAT,
        "replica.identity.autoset.values": r"lp\.b:DEFAULT",  # what it is already: no ALTER, no ownership needed
        "notification.enabled.channels": "sink", "notification.sink.topic.name": "lp_notes",
        "slot.retry.delay.ms": "500", **overrides,
    }


def config_file(path: Path, properties: dict[str, str]) -> Path:
    path.write_text(json.dumps({"name": "least-privilege", "config": properties}))
    return path


def signal(db: psycopg.Connection, signal_id: str, data: dict[str, Any]) -> None:
    """A signal as the operator sends it (as the tables' owner: the connector's role cannot write there)."""
    db.execute("INSERT INTO lp.sig VALUES (%s, 'execute-snapshot', %s)", (signal_id, json.dumps(data)))


def events(output: Path, table: str) -> list[dict[str, Any]]:
    return [e for line in output_lines(output) if line["topic"] == f"srv.lp.{table}" and (e := payload(line)) is not None]


def test_validate_connect_names_each_missing_privilege_with_its_grant(pg_cluster: ThrowawayCluster, owner: psycopg.Connection,
                                                                      tmp_path: Path) -> None:
    # lp_none: no REPLICATION, no USAGE on lp, no SELECT; the publication it names does not exist;
    # replica.identity.autoset.values would change a table it does not own.
    path = config_file(tmp_path / "none.json", props(pg_cluster, "lp_none_slot", **{
        "database.user": NONE, "publication.name": "lp_missing", "replica.identity.autoset.values": r"lp\.b:FULL"}))
    result = RUNNER.invoke(app, ["validate", str(path), "--connect"], env=WIDE)
    assert result.exit_code == EXIT_PROBLEMS, result.output
    out = " ".join(result.output.split())  # the console wraps long lines
    for statement in (
        f"ALTER ROLE {NONE} REPLICATION;",
        f"GRANT USAGE ON SCHEMA lp TO {NONE};",
        f"GRANT SELECT ON lp.a, lp.b TO {NONE};",
        "CREATE PUBLICATION lp_missing FOR TABLE lp.a, lp.b, lp.sig;",
        "ALTER TABLE lp.b REPLICA IDENTITY FULL;",
        f"GRANT INSERT, SELECT, UPDATE ON lp.hb TO {NONE};",  # the heartbeat statement's, found by EXPLAIN
        f"GRANT INSERT ON lp.sig TO {NONE};",  # incremental snapshots' watermark rows
    ):
        assert statement in out, statement
    assert "error: heartbeat.action.query: role lp_none may not run it" in out
    assert "error: replica.identity.autoset.values: table lp.b must get REPLICA IDENTITY FULL, and only its owner (postgres)" in out
    fixes = result.output[result.output.index("To fix, as a superuser or the objects' owner:"):]
    assert f"ALTER ROLE {NONE} REPLICATION;" in fixes and "CREATE PUBLICATION lp_missing" in fixes

    # lp_cdc has what it needs; with insert_delete watermarks it lacks DELETE too, which is a warning
    # (streaming works; an incremental snapshot would be refused), and read.only needs no write at all.
    path = config_file(tmp_path / "cdc.json", props(pg_cluster, "lp_main", **{
        "incremental.snapshot.watermarking.strategy": "insert_delete"}))
    result = RUNNER.invoke(app, ["validate", str(path), "--connect"], env=WIDE)
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert f"GRANT INSERT, DELETE ON lp.sig TO {ROLE};" in out and "ready:" in out
    path = config_file(tmp_path / "ro.json", props(pg_cluster, "lp_ro", **{"read.only": "true"}))
    result = RUNNER.invoke(app, ["validate", str(path), "--connect"], env=WIDE)
    assert result.exit_code == 0 and "warning" not in result.output and "To fix" not in result.output, result.output

    # A publication made by hand without the signal table: signals and watermarks would never arrive.
    owner.execute("CREATE PUBLICATION lp_nosig FOR TABLE lp.a, lp.b")
    try:
        path = config_file(tmp_path / "nosig.json", props(pg_cluster, "lp_nosig", **{"publication.name": "lp_nosig"}))
        result = RUNNER.invoke(app, ["validate", str(path), "--connect"], env=WIDE)
    finally:
        owner.execute("DROP PUBLICATION lp_nosig")
    assert result.exit_code == 0, result.output
    assert "have the publication's owner run: ALTER PUBLICATION lp_nosig ADD TABLE lp.sig;" in " ".join(result.output.split())

    # `sparkcdc signal` through the source channel writes the row as database.user: INSERT, named.
    result = RUNNER.invoke(app, ["signal", str(path), "execute-snapshot", "--tables", "lp.a", "--channel", "source"], env=WIDE)
    assert result.exit_code == EXIT_PROBLEMS, result.output
    assert f"lacks INSERT on table lp.sig: GRANT INSERT ON lp.sig TO {ROLE};" in " ".join(result.output.split())


@pytest.mark.slow
def test_every_path_runs_as_replication_and_select(spark: Any, pg_cluster: ThrowawayCluster, owner: psycopg.Connection,
                                                   tmp_path: Path) -> None:
    output, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    main = props(pg_cluster, "lp_main")
    config = config_file(tmp_path / "main.json", main)

    # Initial snapshot through the CLI (`sparkcdc run --once`): the slot is created with REPLICATION alone.
    result = RUNNER.invoke(app, ["run", str(config), "--output", str(output), "--checkpoint", str(checkpoint), "--once",
                                 "--master", "local[2]"], env=WIDE)
    assert result.exit_code == 0, result.output
    assert sorted(e["after"]["id"] for e in events(output, "a") if e["op"] == "r") == [1, 2, 3, 4, 5]

    # Streaming, and a blocking snapshot (a temporary slot exports its snapshot: REPLICATION again).
    owner.execute("UPDATE lp.a SET v = 'changed' WHERE id = 2")
    owner.execute("INSERT INTO lp.b VALUES (4, 'b4')")
    signal(owner, "block-1", {"data-collections": ["lp.b"], "type": "blocking"})
    run_once(main, output, checkpoint)
    b = events(output, "b")
    assert [e["op"] for e in events(output, "a")][-1] == "u" and (b[-1]["op"], len(b)) == ("r", 3 + 1 + 4)

    # An incremental snapshot writes watermark rows: without INSERT on the signal table it is refused,
    # naming the GRANT; granted, the same signal works. A blocking snapshot of a table the role may not
    # read is refused before the stream stops for it.
    owner.execute(f"REVOKE SELECT ON lp.b FROM {ROLE}")
    signal(owner, "inc-1", {"data-collections": ["lp.a"]})
    signal(owner, "block-2", {"data-collections": ["lp.b"], "type": "blocking"})
    run_once(main, output, checkpoint)  # (the planner, in Spark's Python source runner, also logs it)
    owner.execute(f"GRANT SELECT ON lp.b TO {ROLE}")
    notes = [n for line in output_lines(output) if line["topic"] == "lp_notes" and (n := payload(line)) is not None]
    refused = {n["additional_data"]["signal_id"]: n["additional_data"]["error"] for n in notes if n["aggregate_type"] == "Signal"}
    grant = f"GRANT INSERT ON lp.sig TO {ROLE};"
    assert grant in refused["inc-1"] and f"GRANT SELECT ON lp.b TO {ROLE};" in refused["block-2"], refused
    assert len(events(output, "b")) == 8  # no second blocking snapshot
    owner.execute(grant)
    signal(owner, "inc-2", {"data-collections": ["lp.a"]})
    run_once(main, output, checkpoint)
    incremental = [e for e in events(output, "a") if e["op"] == "r" and e["source"]["snapshot"] == "incremental"]
    assert sorted(e["after"]["id"] for e in incremental) == [1, 2, 3, 4, 5]
    owner.execute(f"REVOKE INSERT ON lp.sig FROM {ROLE}")

    # A read-only incremental snapshot writes nothing: SELECT is all it takes.
    ro_output, ro_checkpoint = tmp_path / "ro-out", tmp_path / "ro-checkpoint"
    read_only = props(pg_cluster, "lp_ro", **{"read.only": "true", "snapshot.mode": "no_data"})
    run_once(read_only, ro_output, ro_checkpoint)
    signal(owner, "ro-1", {"data-collections": ["lp.b"]})
    run_once(read_only, ro_output, ro_checkpoint)
    assert sorted(e["after"]["id"] for e in events(ro_output, "b") if e["op"] == "r") == [1, 2, 3, 4]

    # The heartbeat action query runs with what the role was granted for it (a continuous run: --once
    # sends no heartbeats); its row is written by the role, and the run stops cleanly.
    stop, outcome = threading.Event(), {}

    def run() -> None:
        try:
            run_pipeline(main, output=output, checkpoint=checkpoint, master="local[2]", stop_event=stop,
                         trigger_interval="200 milliseconds")
        except Exception as exc:  # noqa: BLE001 - the test reports it
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        wait_until(lambda: outcome.get("error") or owner.execute("SELECT count(*) FROM lp.hb").fetchone() == (1,),
                   timeout=120, interval=0.2, what="a heartbeat row")
    finally:
        stop.set()
        thread.join(120)
    assert "error" not in outcome, outcome

    # status and the metrics' slot poll read what they show as this role.
    result = RUNNER.invoke(app, ["status", str(config), "--checkpoint", str(checkpoint), "--json"], env=WIDE)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["slot"]["exists"] and report["slot"]["lag_bytes"] is not None
    assert report["publication"]["tables"] == ["lp.a", "lp.b", "lp.sig"]
    collector = MetricsCollector(main, state_location=str(checkpoint / "sparkcdc-state"))
    try:
        collector.refresh()
        assert collector.server_ok and collector.slot["wal_status"] == "reserved" and collector.slot["retained_bytes"] is not None
    finally:
        collector._close_connection()


def test_a_heartbeat_or_replica_identity_the_role_may_not_have_is_refused_before_anything_is_set_up(
        spark: Any, pg_cluster: ThrowawayCluster, owner: psycopg.Connection, tmp_path: Path) -> None:
    from sparkcdc.errors import PipelineError

    for overrides, expected in (
        ({"heartbeat.action.query": "INSERT INTO lp.sig VALUES ('x', 'log', null)"},
         f"heartbeat.action.query: role {ROLE} may not run it (permission denied for table sig): GRANT INSERT ON lp.sig TO {ROLE};"),
        ({"replica.identity.autoset.values": r"lp\.b:FULL"},
         "replica.identity.autoset.values: table lp.b must get REPLICA IDENTITY FULL, and only its owner (postgres) may set it: "
         "have the owner run `ALTER TABLE lp.b REPLICA IDENTITY FULL;`"),
    ):
        with pytest.raises(PipelineError) as raised:
            run_once(props(pg_cluster, "lp_refused", **overrides), tmp_path / "out", tmp_path / f"ck-{len(overrides)}-{id(expected)}")
        assert expected in str(raised.value)
    assert owner.execute("SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'lp_refused'").fetchone() == (0,)
    assert owner.execute("SELECT relreplident FROM pg_class WHERE oid = 'lp.b'::regclass").fetchone() == ("d",)


def test_a_stream_decoded_in_processes_needs_no_more_than_replication_and_select(
        pg_cluster: ThrowawayCluster, owner: psycopg.Connection, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``sparkcdc.stream.decode.processes`` with the changes layout (what ``--apply-to`` reads): each
    decoding process connects as the role and reads the catalog as the task's own reader does."""
    from sparkcdc.debezium.config import ConnectorConfig
    from sparkcdc.engine import wal_dispatcher
    from sparkcdc.engine.planner import ConnectorPlanner
    from sparkcdc.engine.work import read_stream_encoded
    from sparkcdc.spark.outputs.changes.pieces import BlockPieceEncoder, piece_blocks

    monkeypatch.setattr(wal_dispatcher, "PIECE_MESSAGES", 7)
    given = props(pg_cluster, "lp_decoded", **{"snapshot.mode": "no_data", "sparkcdc.output.layout": "changes",
                                               "sparkcdc.stream.decode.processes": "2", "sparkcdc.stream.decode.chunk.messages": "40"})
    unrelated = ("signal.data.collection", "heartbeat.interval.ms", "heartbeat.action.query", "notification.enabled.channels",
                 "notification.sink.topic.name")  # the signal table rules several processes out
    config = ConnectorConfig({name: value for name, value in given.items() if name not in unrelated})
    planner = ConnectorPlanner(config, state_location=str(tmp_path / "state"))
    changed: dict[str, int] = {}
    try:
        start = planner.initial_offset()
        for t in range(20):  # transactions enough for several chunks
            owner.execute(f"INSERT INTO lp.a SELECT g, 'd' FROM generate_series({1000 + t * 10}, {1009 + t * 10}) g")
        owner.execute("UPDATE lp.b SET v = v || '!'")
        end = planner.latest_offset(start)
        [work] = planner.partitions(start, end)
        pieces = read_stream_encoded(config, work, run_id="r", processes=2, encoder=BlockPieceEncoder(config))
        assert pieces is not None, "the range is decoded in the processes"
        for batch in piece_blocks(pieces):
            for block in batch.to_pylist():
                changed[block["table"]] = changed.get(block["table"], 0) + block["rows"]
        planner.commit(end)
    finally:
        planner.stop()
    assert changed == {"a": 200, "b": owner.execute("SELECT count(*) FROM lp.b").fetchone()[0]}  # type: ignore[index]
