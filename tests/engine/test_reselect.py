"""The reselect post processor in the in-process connector (the Spark source's planner and reader):
what Debezium's documentation says beyond what the differential test (tests/conformance/
test_reselect_conformance.py) shows: a row gone by the time it is read (warn keeps the event, fail
stops), the event key of a keyless table (reselect.use.event.key), one query per table and batch,
other classes refused, and the configuration's checks."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import orjson
import psycopg
import pytest

import sparkcdc.engine.reselect_reader as reselect_reader
from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.embedded_postgres import ThrowawayCluster
from sparkcdc.engine.connector import LocalConnector
from sparkcdc.engine.core.reselect import ReselectError
from sparkcdc.errors import ConfigurationError

from ..support.waiting import wait_until

RESELECT = "io.debezium.processors.reselect.ReselectColumnsPostProcessor"
PLACEHOLDER = "__debezium_unavailable_value"
_BASE = {"database.hostname": "h", "database.user": "u", "database.dbname": "d", "topic.prefix": "p"}


def _big(seed: str) -> str:
    return (f"(WITH RECURSIVE c(i, h) AS (SELECT 1, md5('{seed}') UNION ALL SELECT i + 1, md5(h) FROM c WHERE i < 100) "
            "SELECT string_agg(h, '' ORDER BY i) FROM c)")


@pytest.fixture
def table(db: psycopg.Connection, unique_name: str) -> Iterator[str]:
    name = f"t_{unique_name}"
    db.execute(f"CREATE TABLE {name} (id int PRIMARY KEY, n int, big text)")
    yield name
    db.execute(f"DROP TABLE {name}")


def _config(cluster: ThrowawayCluster, name: str, tables: str, **extra: str) -> ConnectorConfig:
    return ConnectorConfig({
        "database.hostname": cluster.host, "database.port": str(cluster.port), "database.user": cluster.user,
        "database.dbname": "postgres", "topic.prefix": "rs", "slot.name": name, "slot.drop.on.stop": "true",
        "publication.name": name, "publication.autocreate.mode": "filtered", "table.include.list": tables,
        "snapshot.mode": "no_data", "post.processors": "reselector", "post.processors.reselector.type": RESELECT,
        **{f"post.processors.reselector.{k}": v for k, v in extra.items()},
    })


def _payloads(connector: LocalConnector, count: int) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []

    def enough() -> bool:
        got.extend(orjson.loads(r.value)["payload"] for r in connector.poll(0.5) if r.value is not None)
        return len(got) >= count

    wait_until(enough, timeout=60, what=lambda: f"{count} events (have {len(got)})")
    return got


def test_a_row_gone_keeps_the_placeholder_with_a_warning_and_the_others_are_read_in_one_query(
    db: psycopg.Connection, pg_cluster: ThrowawayCluster, unique_name: str, table: str, caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    queries: list[int] = []
    real = reselect_reader.reselect_rows

    def counted(conn: Any, schema: str, name: str, key: Any, columns: Any, keys: Any) -> Any:
        queries.append(len(keys))
        return real(conn, schema, name, key, columns, keys)

    runs: list[int] = []  # the updates handed to each run of the post processors
    real_run = reselect_reader.PostProcessing.run

    def run(self: reselect_reader.PostProcessing) -> None:
        if updates := sum(record.op == "u" for record, _, _ in self._candidates):
            runs.append(updates)
        real_run(self)

    monkeypatch.setattr(reselect_reader, "reselect_rows", counted)
    monkeypatch.setattr(reselect_reader.PostProcessing, "run", run)
    for i in (1, 2, 3):
        db.execute(f"INSERT INTO {table} VALUES ({i}, 0, {_big(str(i))})")
    expected = {i: db.execute(f"SELECT big FROM {table} WHERE id = {i}").fetchone()[0] for i in (1, 2)}
    with LocalConnector(_config(pg_cluster, unique_name, f"public.{table}")) as connector:
        connector.poll(0.0)
        db.execute(f"BEGIN; UPDATE {table} SET n = 1; DELETE FROM {table} WHERE id = 3; COMMIT")  # 3 events, then row 3 is gone
        caplog.set_level(logging.WARNING, "sparkcdc.engine.core.reselect")
        updates = [p for p in _payloads(connector, 3) if p["op"] == "u"]
    after = {p["after"]["id"]: p["after"]["big"] for p in updates}
    assert after == {1: expected[1], 2: expected[2], 3: PLACEHOLDER}
    # One query per run of messages read, with all its updates' keys: [3] when the transaction was read in one
    # piece, as it mostly is; a slow machine may hand its messages over in two reads (CI saw [2, 1]).
    assert queries == runs and sum(queries) == 3
    assert "could not read big of public." in caplog.text and "reselect.error.handling.mode=warn" in caplog.text


def test_a_row_gone_stops_the_connector_under_fail(
    db: psycopg.Connection, pg_cluster: ThrowawayCluster, unique_name: str, table: str,
) -> None:
    db.execute(f"INSERT INTO {table} VALUES (1, 0, {_big('1')})")
    config = _config(pg_cluster, unique_name, f"public.{table}", **{"reselect.error.handling.mode": "FAIL"})
    with LocalConnector(config) as connector:
        connector.poll(0.0)
        db.execute(f"BEGIN; UPDATE {table} SET n = 1; DELETE FROM {table}; COMMIT")
        with pytest.raises(ReselectError) as raised:
            _payloads(connector, 1)
    assert "post.processors.reselector.reselect.error.handling.mode=fail" in str(raised.value)
    assert raised.value.table == f"public.{table}" and raised.value.lsn


def test_a_keyless_table_is_read_by_the_event_key(
    db: psycopg.Connection, pg_cluster: ThrowawayCluster, unique_name: str, caplog: pytest.LogCaptureFixture,
) -> None:
    """message.key.columns gives a keyless table an event key; reselect.use.event.key finds rows by it.
    Without it the table has no primary key to find rows by: a warning, and the event as it was. (A
    null column is read again; the row as it is when read, where a later change set it.)"""
    t = f"k_{unique_name}"
    db.execute(f"CREATE TABLE {t} (code text NOT NULL, n int, note text)")
    db.execute(f"ALTER TABLE {t} REPLICA IDENTITY FULL")
    db.execute(f"INSERT INTO {t} VALUES ('a', 0, 'first')")
    caplog.set_level(logging.WARNING, "sparkcdc.engine.core.reselect")
    try:
        for use_event_key, expected in (("true", "later"), ("false", None)):
            extra = {"reselect.use.event.key": use_event_key, "reselect.columns.include.list": rf"public\.{t}:note"}
            config = ConnectorConfig({**_config(pg_cluster, f"{unique_name}_{use_event_key}", f"public.{t}", **extra).raw,
                                      "message.key.columns": f"public.{t}:code"})
            with LocalConnector(config) as connector:
                connector.poll(0.0)
                db.execute(f"UPDATE {t} SET note = NULL")  # its event carries a null note ...
                db.execute(f"UPDATE {t} SET note = 'later'")  # ... which the row no longer has when it is read
                first, second = _payloads(connector, 2)
                db.execute(f"UPDATE {t} SET note = 'first'")
            assert first["after"]["note"] == expected and second["after"]["note"] == "later"
        assert "has no primary key" in caplog.text and "reselect.use.event.key=true" in caplog.text
    finally:
        db.execute(f"DROP TABLE {t}")


@pytest.mark.parametrize(("kind", "value"), [
    ("text", "'k1'"), ("uuid", "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'"), ("timestamptz", "'2024-02-29 12:34:56.789+02'"),
    ("numeric(10,3)", "12.5"), ("varchar(5)", "'ab'"), ("char(4)", "'ab'"),
])
def test_keys_of_any_type_find_their_row(
    db: psycopg.Connection, pg_cluster: ThrowawayCluster, unique_name: str, kind: str, value: str,
) -> None:
    """The key is bound as the text the WAL carried, cast to the column's type (Debezium binds converted
    values, which the server refuses for some types)."""
    t = f"kt_{unique_name}"
    db.execute(f'CREATE TABLE {t} ("Key" {kind} PRIMARY KEY, n int, big text)')
    db.execute(f"INSERT INTO {t} VALUES ({value}, 0, {_big('x')})")
    big = db.execute(f"SELECT big FROM {t}").fetchone()[0]
    try:
        with LocalConnector(_config(pg_cluster, unique_name, f"public.{t}", **{"reselect.error.handling.mode": "fail"})) as connector:
            connector.poll(0.0)
            db.execute(f"UPDATE {t} SET n = 1")
            (update,) = _payloads(connector, 1)
        assert update["after"]["big"] == big
    finally:
        db.execute(f"DROP TABLE {t}")


@pytest.mark.parametrize(("extra", "prop", "message"), [
    ({"post.processors": "s3", "post.processors.s3.type": "io.debezium.processors.s3.S3LargeMessagePostProcessor"},
     "post.processors.s3.type", "cannot run here"),
    ({"post.processors": "x", "post.processors.x.type": "com.example.Mine"}, "post.processors.x.type", "'com.example.Mine'"),
    ({"post.processors": "x"}, "post.processors.x.type", "is required"),
    ({"post.processors": "x", "post.processors.x.type": RESELECT, "post.processors.x.reselect.columns.include.list": "a:b",
      "post.processors.x.reselect.columns.exclude.list": "c:d"}, "post.processors.x.reselect.columns.exclude.list", "cannot be combined"),
    ({"post.processors": "x", "x.type": RESELECT, "x.reselect.error.handling.mode": "retry"}, "x.reselect.error.handling.mode",
     "not one of warn, fail"),
    ({"post.processors": "x,x", "post.processors.x.type": RESELECT}, "post.processors", "twice"),
    ({"post.processors": "x", "post.processors.x.type": RESELECT, "sparkcdc.output.layout": "topic_files",
      "sparkcdc.output.topic.files": "/tmp/x", "sparkcdc.stream.decode.processes": "2"}, "sparkcdc.stream.decode.processes",
     "cannot run post.processors"),
])
def test_what_cannot_run_is_refused_naming_it(extra: dict[str, str], prop: str, message: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        ConnectorConfig({**_BASE, **extra})
    assert raised.value.property == prop and message in str(raised.value)


def test_options_are_read_as_debezium_reads_them() -> None:
    new = ConnectorConfig({**_BASE, "post.processors": "r", "post.processors.r.type": RESELECT,
                           "post.processors.r.reselect.columns.include.list": r"public\.t:BIG"})
    (spec,) = new.post_processors
    assert spec.selects("public.t:big") and not spec.selects("public.t:small")  # whole, case-insensitive
    assert (spec.unavailable_values, spec.null_values, spec.use_event_key, spec.fail) == (True, True, False, False)
    assert not new.warnings
    old = ConnectorConfig({**_BASE, "post.processors": "r", "r.type": RESELECT, "r.reselect.null.values": "false",
                           "r.reselect.cache.enabled": "true", "r.reselect.nul.values": "true"})
    (spec,) = old.post_processors
    assert not spec.null_values and spec.prefix == "r."
    assert any("deprecated" in w and "post.processors.r.*" in w for w in old.warnings)
    assert any(w.startswith("r.reselect.nul.values") and "did you mean r.reselect.null.values" in w for w in old.warnings)
    assert any(w.startswith("r.reselect.cache.enabled") for w in old.warnings)
    assert not any(w.startswith("r.type") for w in old.warnings)  # a post processor's own setting, not an unknown name
    with pytest.raises(ConfigurationError, match="r.reselect.nul.values"):
        ConnectorConfig({**_BASE, "post.processors": "r", "r.type": RESELECT, "r.reselect.nul.values": "true"}, strict=True)
    ConnectorConfig({**_BASE, "post.processors": "r", "r.type": RESELECT}, strict=True)  # known names under strict
