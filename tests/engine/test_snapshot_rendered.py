"""The snapshot's fast path (payloads rendered by PostgreSQL) against its reference, the Python converters.

The Python path (``read_snapshot_chunk``, checked against Debezium by the conformance suite and
against the sequential snapshot by test_snapshot_chunks.py) is the oracle: for every chunk the
rendered batches must hold the same records, field for field, with keys byte for byte. The tables
cover every type the SQL renders, with the values where a rendering could slip: extremes, NULLs,
defaults, escapes, non-finite floats, timestamps outside the rendered range (those rows take the
converters), and chunk seams.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import orjson
import psycopg
import pytest

from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.debezium.serialization import JsonSerializer
from sparkcdc.debezium.table import TableSchemaFactory
from sparkcdc.embedded_postgres import ThrowawayCluster
from sparkcdc.engine.core.encoded import BATCH_BYTES, Constant, EncodedBatch, encode_records
from sparkcdc.engine.core.filters import TableFilter
from sparkcdc.engine.core.offsets import SnapshotSpec
from sparkcdc.engine.core.tables import TableResolver
from sparkcdc.engine.snapshot_plan import SnapshotChunk, plan_snapshot_chunks
from sparkcdc.engine.snapshot_reader import read_snapshot_chunk
from sparkcdc.engine.snapshot_rendered import read_encoded_chunk, rendered_query
from sparkcdc.postgres import drop_slot
from sparkcdc.postgres.catalog import Catalog
from sparkcdc.postgres.slots import ExportedSnapshotSlot
from sparkcdc.postgres.snapshot import SnapshotTransaction
from sparkcdc.spark.outputs.lines import line_batch

RUN_ID = "00000000-0000-0000-0000-0000000000aa"
WALL_CLOCK = ("ts_ms", "ts_us", "ts_ns")

TYPES_DDL = """CREATE TABLE {t} (
    id int PRIMARY KEY,
    i2 smallint, i4 integer, i8 bigint NOT NULL DEFAULT 42, o oid,
    b boolean, b_nn boolean NOT NULL DEFAULT true,
    f8 double precision, f8_nn double precision NOT NULL DEFAULT 0,
    tx text, vc varchar(20), bp char(5), nm name, ip inet, r int4range,
    js json, jb jsonb, u uuid, mood {t}_mood, x xml,
    tz timestamptz, tz0 timestamptz(0), tz3 timestamptz(3), tz_nn timestamptz NOT NULL DEFAULT '2020-02-02 02:02:02.5+00',
    ts timestamp, ts0 timestamp(0), ts3 timestamp(3)
)"""

TYPES_ROWS = [
    # extremes, NULLs everywhere a column allows them
    "(1, -32768, -2147483648, -9223372036854775808, 0, false, false, -1.7976931348623157e308, -0, '', '', '', '', '0.0.0.0', 'empty',"
    " 'null', '{}', '00000000-0000-0000-0000-000000000000', 'sad', '<a/>', '0001-01-01 00:00:00+00', '0001-01-01 00:00:00+00',"
    " '0001-01-01 00:00:00.001+00', '1970-01-01 00:00:00+00', '1583-01-01 00:00:00', '1583-01-01 00:00:00', '1583-01-01 00:00:00.001')",
    "(2, 32767, 2147483647, 9223372036854775807, 4294967295, true, true, 1.7976931348623157e308, 5e-324, 'x', 'y', 'ab', 'n',"
    " '::1', '[1,5)', '[1, 2.5, \"a\"]', '{\"b\": [1, {\"c\": null}], \"a\": \"\\u00e9\"}', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',"
    " 'happy', '<a b=\"1\">&amp;</a>', '9999-12-31 23:59:59.999999+00', '9999-12-31 23:59:59+00', '9999-12-31 23:59:59.999+00',"
    " '2262-04-11 23:47:16.854775+00', '9999-12-31 23:59:59.999999', '9999-12-31 23:59:59', '9999-12-31 23:59:59.999')",
    "(3, NULL, NULL, DEFAULT, NULL, NULL, DEFAULT, NULL, DEFAULT, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,"
    " NULL, NULL, NULL, DEFAULT, NULL, NULL, NULL)",
    # escapes and non-ASCII text; non-finite floats
    "(4, 7, 7, 7, 7, true, false, 'NaN', 'Infinity', E'q\"uote \\\\ back\\nnl\\ttab\\x01\\x1f\\x7f é ✓ \U0001F600', E'\\'single\\'',"
    " 'pad', E'a\\\\b', '10.0.0.1/8', '(,)', '\"just a string\"', '[]', NULL, 'ok', NULL, '2024-02-29 12:34:56.7+00',"
    " '2024-02-29 12:34:56+00', '2024-02-29 12:34:56.789+00', '2024-02-29 12:34:56.000001+00', '2024-02-29 12:34:56.5',"
    " '2024-02-29 12:34:56', '2024-02-29 12:34:56.001')",
    "(5, 0, 0, 0, 0, false, false, '-Infinity', 0.1, '0', '0', '0', '0', NULL, NULL, '0', '0', NULL, NULL, NULL,"
    " '1969-12-31 23:59:59.999999+00', '1969-12-31 23:59:59+00', '1969-12-31 23:59:59.999+00', '1969-12-31 23:59:59.999999+00',"
    " '1969-12-31 23:59:59.999999', '1969-12-31 23:59:59', '1969-12-31 23:59:59.999')",
    # outside the rendered ranges: these rows go through the Python converters
    "(6, 1, 1, 1, 1, true, true, 1, 1, 'fallback', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'infinity', '-infinity',"
    " '0044-03-15 12:00:00+00 BC', DEFAULT, 'infinity', '-infinity', '1582-10-04 23:59:59.999')",
    "(7, 1, 1, 1, 1, true, true, 1e-300, 1e300, 'fallback 2', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,"
    " '10000-01-01 00:00:00+00', '0001-01-01 00:00:00+00 BC', NULL, DEFAULT, '10000-01-01 00:00:00', '0100-02-28 00:00:00 BC', NULL)",
]


def _config(cluster: ThrowawayCluster, name: str, **overrides: str) -> ConnectorConfig:
    return ConnectorConfig({
        "database.hostname": cluster.host, "database.port": str(cluster.port), "database.user": cluster.user,
        "database.dbname": "postgres", "topic.prefix": "rendered", "slot.name": name, "publication.name": name,
        **overrides,
    })


def _chunks(cluster: ThrowawayCluster, config: ConnectorConfig, slot: ExportedSnapshotSlot, tables: Sequence[tuple[str, str]],
            chunk_rows: int) -> list[SnapshotChunk]:
    with SnapshotTransaction(cluster.conninfo(), snapshot_name=slot.snapshot_name) as tx:
        spec = SnapshotSpec(f"snap-{slot.slot_name}", slot.consistent_point, 4242, 1_700_000_000_123_456, tuple(tables))
        return plan_snapshot_chunks(tx.conn, config, spec, slot.snapshot_name, chunk_rows=chunk_rows)


def _rows(batch: EncodedBatch) -> Iterator[dict[str, Any]]:
    def cell(column: Any, index: int) -> Any:
        return column.value if isinstance(column, Constant) else column[index]

    for i in range(batch.size):
        value = orjson.loads(batch.value[i]) if batch.value[i] is not None else None
        payload = value["payload"] if value is not None and "payload" in value else value
        clock = {field: payload.pop(field) for field in WALL_CLOCK} if payload is not None else {}
        yield {
            "topic": cell(batch.topic, i), "key": batch.key[i], "value": value, "clock": clock,
            "headers": [(name, raw) for name, raw in cell(batch.headers, i)], "op": cell(batch.op, i),
            "schema": cell(batch.schema, i), "table": cell(batch.table, i), "lsn": cell(batch.lsn, i),
            "commit_lsn": cell(batch.commit_lsn, i), "ordinal": batch.ordinal[i], "tx_id": cell(batch.tx_id, i),
            "source_ts": cell(batch.source_ts_us, i), "snapshot": cell(batch.snapshot, i),
        }


def _both_paths(
    config: ConnectorConfig, chunks: Sequence[SnapshotChunk], batch_rows: int, batch_bytes: int = BATCH_BYTES
) -> tuple[list[dict], list[dict]]:
    serializer = JsonSerializer(key_schemas=config.key_schemas_enable, value_schemas=config.value_schemas_enable, header_schemas=True)
    rendered, reference = [], []
    cut_by_bytes = False
    for chunk in chunks:
        batches = list(read_encoded_chunk(config, chunk, run_id=RUN_ID, serializer=serializer, batch_rows=batch_rows,
                                          batch_bytes=batch_bytes))
        assert all(0 < b.size for b in batches)
        cut_by_bytes = cut_by_bytes or (len(batches) > 1 and max(b.size for b in batches) < batch_rows)
        rendered += [row for b in batches for row in _rows(b)]
        records = read_snapshot_chunk(config, chunk, run_id=RUN_ID)
        reference += [row for b in encode_records(records, serializer, batch_rows, batch_bytes) for row in _rows(b)]
        _assert_lines_match(config, chunk, serializer, batch_rows, batch_bytes)
    assert cut_by_bytes or batch_bytes == BATCH_BYTES, "no chunk's batches were cut at the byte limit"
    return rendered, reference


def _assert_lines_match(
    config: ConnectorConfig, chunk: SnapshotChunk, serializer: JsonSerializer, batch_rows: int, batch_bytes: int
) -> None:
    """The lines the rendered path builds from its escaped templates are, byte for byte, the lines
    built from its records' key and value texts (same clock reading)."""
    def clock() -> int:
        return 1_700_000_000_123_456_789

    def lines(batches: Iterable[EncodedBatch]) -> list[tuple[str, int, int, int]]:
        out = []
        for batch in batches:
            table = line_batch(batch)
            out += zip(*(table.column(name).to_pylist() for name in ("topic", "line", "lsn", "commit_lsn", "ordinal")), strict=False)
        return out

    kwargs = {"run_id": RUN_ID, "serializer": serializer, "batch_rows": batch_rows, "batch_bytes": batch_bytes, "clock_ns": clock}
    built = lines(read_encoded_chunk(config, chunk, lines=True, **kwargs))  # type: ignore[arg-type]
    assert built == lines(read_encoded_chunk(config, chunk, **kwargs))  # type: ignore[arg-type]
    # As a topic file holds them: the same lines, each ended by a newline.
    ended = list(read_encoded_chunk(config, chunk, lines=True, line_end=b"\n", **kwargs))  # type: ignore[arg-type]
    assert all(b.line_end == b"\n" for b in ended)
    assert [line for b in ended for line in b.line or ()] == [line.encode() + b"\n" for _, line, *_ in built]
    for _, line, *_ in built:
        parsed = orjson.loads(line)
        assert set(parsed) == {"key", "value", "headers", "lsn", "commit_lsn", "ordinal"}
        orjson.loads(parsed["value"])


def _renders(cluster: ThrowawayCluster, config: ConnectorConfig, chunk: SnapshotChunk) -> bool:
    with psycopg.connect(cluster.conninfo()) as conn:
        resolver = TableResolver(Catalog(conn), TableSchemaFactory(config), TableFilter(config))
        return rendered_query(resolver.for_table(chunk.schema, chunk.table), chunk) is not None


def _unrendered_rows(cluster: ThrowawayCluster, config: ConnectorConfig, chunk: SnapshotChunk) -> int:
    """How many of the chunk's rows the SQL left to the converters."""
    with psycopg.connect(cluster.conninfo()) as conn:
        resolver = TableResolver(Catalog(conn), TableSchemaFactory(config), TableFilter(config))
        query = rendered_query(resolver.for_table(chunk.schema, chunk.table), chunk)
        assert query is not None
        with conn.cursor().copy(query.encode()) as copy:
            return sum(1 for line in copy if bytes(line).split(b"\t")[1] == b"\\N")


def _assert_same(rendered: list[dict], reference: list[dict]) -> None:
    assert len(rendered) == len(reference)
    for ours, theirs in zip(rendered, reference, strict=True):
        for field in ours:
            if field != "clock":
                assert ours[field] == theirs[field], (field, ours["ordinal"], _difference(ours[field], theirs[field]))
        # The clock fields are wall-clock time, but still three views of one instant.
        clock = ours["clock"]
        if clock:
            assert clock["ts_ms"] == clock["ts_ns"] // 1_000_000 and clock["ts_us"] == clock["ts_ns"] // 1000


def _difference(ours: Any, theirs: Any, path: str = "") -> Any:
    """Where two JSON values differ (the first few places), for assertion messages."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        found = []
        for key in sorted(set(ours) | set(theirs)):
            if ours.get(key, "<missing>") != theirs.get(key, "<missing>"):
                found.append(_difference(ours.get(key, "<missing>"), theirs.get(key, "<missing>"), f"{path}.{key}"))
        return found[:5]
    return f"{path}: ours {ours!r} theirs {theirs!r}"


@pytest.fixture
def types_table(db: psycopg.Connection, unique_name: str) -> tuple[str, str]:
    table = f"types_{unique_name}"
    db.execute(f"CREATE TYPE {table}_mood AS ENUM ('sad', 'ok', 'happy')")
    db.execute(TYPES_DDL.format(t=table))
    db.execute(f"INSERT INTO {table} VALUES " + ", ".join(TYPES_ROWS))
    db.execute(f"ANALYZE {table}")
    return "public", table


@pytest.mark.parametrize("overrides", [
    {},
    {"time.precision.mode": "connect"},
    {"time.precision.mode": "adaptive_time_microseconds", "key.converter.schemas.enable": "false",
     "value.converter.schemas.enable": "false"},
    {"decimal.handling.mode": "string", "column.exclude.list": "public\\..*\\.(ip|r)"},
], ids=["adaptive", "connect", "no-schemas", "excluded-columns"])
def test_every_rendered_type_matches_the_converters(
    db: psycopg.Connection, pg_cluster: ThrowawayCluster, unique_name: str, types_table: tuple[str, str],
    overrides: dict[str, str],
) -> None:
    config = _config(pg_cluster, unique_name, **overrides)
    slot = ExportedSnapshotSlot(pg_cluster.conninfo(), unique_name)
    try:
        chunks = _chunks(pg_cluster, config, slot, [types_table], chunk_rows=1000)
        assert _renders(pg_cluster, config, chunks[0]), "every column of this table has an SQL rendering"
        assert _unrendered_rows(pg_cluster, config, chunks[0]) == 2, "rows 6 and 7 hold values outside the rendered ranges"
        rendered, reference = _both_paths(config, chunks, batch_rows=3)
        assert len(rendered) == len(TYPES_ROWS)
        _assert_same(rendered, reference)
    finally:
        slot.close()
        drop_slot(db, unique_name, wait=30)


def test_keys_and_non_float_values_are_byte_identical(
    db: psycopg.Connection, pg_cluster: ThrowawayCluster, unique_name: str
) -> None:
    """Apart from how a double is spelled (any spelling of the same double reads back equal), the
    bytes are the Python path's, clock fields aside."""
    table = f"bytes_{unique_name}"
    db.execute(f"CREATE TABLE {table} (a int, b text, c timestamptz, d boolean, e bigint NOT NULL, PRIMARY KEY (a, b))")
    db.execute(f"INSERT INTO {table} SELECT g, E'\"t\\\\' || g || E'\\n\u00e9', timestamptz '2024-01-01' + g * interval '1.5 s',"
               f" g % 2 = 0, -g FROM generate_series(1, 500) g")
    config = _config(pg_cluster, unique_name)
    slot = ExportedSnapshotSlot(pg_cluster.conninfo(), unique_name)
    try:
        chunks = _chunks(pg_cluster, config, slot, [("public", table)], chunk_rows=1000)
        assert _renders(pg_cluster, config, chunks[0])
        serializer = JsonSerializer()
        ours = [b for c in chunks for b in read_encoded_chunk(config, c, run_id=RUN_ID, serializer=serializer, batch_rows=64)]
        theirs = [b for c in chunks for b in encode_records(read_snapshot_chunk(config, c, run_id=RUN_ID), serializer, 64)]

        def without_clock(value: bytes) -> bytes:
            return value[: value.rindex(b',"ts_ms":')]

        assert [k for b in ours for k in b.key] == [k for b in theirs for k in b.key]
        assert [without_clock(v) for b in ours for v in b.value] == [without_clock(v) for b in theirs for v in b.value]
    finally:
        slot.close()
        drop_slot(db, unique_name, wait=30)


def test_chunk_seams_markers_and_ordinals_match_across_tables(
    db: psycopg.Connection, pg_cluster: ThrowawayCluster, unique_name: str
) -> None:
    """Split tables, empty chunks and tables, a table without a key, one-row tables: markers and
    ordinals of the rendered batches are those of the Python path, batch boundaries anywhere."""
    names = []
    for label, ddl, fill in [
        ("empty", "(id int PRIMARY KEY, v text)", None),
        ("big", "(id int PRIMARY KEY, v text)", "SELECT g, repeat('v', 200) || g FROM generate_series(1, 1500) g"),
        ("gap", "(id int PRIMARY KEY, v text)", "SELECT g, repeat('v', 200) || g FROM generate_series(1, 1500) g"),
        ("nokey", "(id int, v text)", "SELECT g, 'v' || g FROM generate_series(1, 300) g"),
        ("one", "(id int PRIMARY KEY, v text)", "SELECT 1, 'only'"),
        ("empty_last", "(id int PRIMARY KEY, v text)", None),
    ]:
        table = f"{label}_{unique_name}"
        db.execute(f"CREATE TABLE {table} {ddl} WITH (autovacuum_enabled = false)")
        if fill:
            db.execute(f"INSERT INTO {table} {fill}")
        names.append(("public", table))
    db.execute(f"DELETE FROM gap_{unique_name} WHERE id BETWEEN 200 AND 1300")
    for _, table in names:
        db.execute(f"ANALYZE {table}")
    config = _config(pg_cluster, unique_name)
    slot = ExportedSnapshotSlot(pg_cluster.conninfo(), unique_name)
    try:
        cases = [(names, 7, BATCH_BYTES), (names, 10_000, BATCH_BYTES), (names, 10_000, 8192), (names[3:5], 1, BATCH_BYTES),
                 ([names[4], names[5]], 2, BATCH_BYTES)]
        for tables, batch_rows, batch_bytes in cases:
            chunks = _chunks(pg_cluster, config, slot, tables, chunk_rows=100)
            assert all(_renders(pg_cluster, config, c) for c in chunks)
            rendered, reference = _both_paths(config, chunks, batch_rows, batch_bytes)
            _assert_same(rendered, reference)
            markers = [row["snapshot"] for row in rendered]
            assert markers.count("last") == 1 and markers[-1] == "last"
    finally:
        slot.close()
        drop_slot(db, unique_name, wait=30)


def test_column_rules_and_overrides_take_the_converters(
    db: psycopg.Connection, pg_cluster: ThrowawayCluster, unique_name: str
) -> None:
    """A masked, truncated or hashed column, or a select override, has no SQL rendering: the
    chunk goes through the Python path and still comes out as encoded batches."""
    table = f"rules_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, secret text, note text)")
    db.execute(f"INSERT INTO {table} SELECT g, 'secret' || g, repeat('n', 30) FROM generate_series(1, 20) g")
    for overrides in [
        {"column.mask.with.4.chars": f"public.{table}.secret"},
        {"column.truncate.to.5.chars": f"public.{table}.note"},
        {"column.mask.hash.SHA-256.with.salt.pepper": f"public.{table}.secret"},
        {"snapshot.select.statement.overrides": f"public.{table}",
         f"snapshot.select.statement.overrides.public.{table}": f"SELECT * FROM {table} WHERE id > 10"},
    ]:
        config = _config(pg_cluster, unique_name, **overrides)
        slot = ExportedSnapshotSlot(pg_cluster.conninfo(), unique_name)
        try:
            chunks = _chunks(pg_cluster, config, slot, [("public", table)], chunk_rows=1000)
            if chunks[0].query is None:
                assert not _renders(pg_cluster, config, chunks[0]), overrides
            rendered, reference = _both_paths(config, chunks, batch_rows=6)
            _assert_same(rendered, reference)
            assert len(rendered) == (10 if chunks[0].query else 20)
        finally:
            slot.close()
            drop_slot(db, unique_name, wait=30)


def test_rendering_can_be_switched_off(db: psycopg.Connection, pg_cluster: ThrowawayCluster, unique_name: str) -> None:
    table = f"off_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY)")
    db.execute(f"INSERT INTO {table} SELECT generate_series(1, 5)")
    config = _config(pg_cluster, unique_name, **{"sparkcdc.snapshot.render.sql": "false"})
    slot = ExportedSnapshotSlot(pg_cluster.conninfo(), unique_name)
    try:
        chunks = _chunks(pg_cluster, config, slot, [("public", table)], chunk_rows=1000)
        batches = list(read_encoded_chunk(config, chunks[0], run_id=RUN_ID, serializer=JsonSerializer()))
        # The Python path lays records out row by row; the rendered one keeps per-chunk constants.
        assert [type(b.topic) for b in batches] == [list]
        assert [orjson.loads(k)["payload"]["id"] for k in batches[0].key] == [1, 2, 3, 4, 5]
    finally:
        slot.close()
        drop_slot(db, unique_name, wait=30)


def test_rendered_doubles_are_json_floats_as_jackson_writes_them(db: psycopg.Connection) -> None:
    """``10`` read back is an integer; Debezium (Jackson) writes ``10.0``: the rendering must give a
    JSON float for every finite double, integral ones included (found by the Spark-path conformance)."""
    from sparkcdc.debezium.sql_json import value_renderer
    from sparkcdc.debezium.types.numeric import json_float

    class Float8:
        name = "float8"

    class Mapping:
        convert = staticmethod(json_float)

    render = value_renderer(Float8, Mapping)  # type: ignore[arg-type]
    assert render is not None
    values = ["0", "-0", "10", "-1230", "1e14", "999999999999999", "1e15", "1e30", "1.5", "1e-5", "5e-324",
              "1.7976931348623157e308", "NaN", "Infinity", "-Infinity"]
    with db.cursor() as cursor:
        cursor.execute("SET extra_float_digits = 1")
        for value in values:
            cursor.execute(f"SELECT {render('x')}, x::text FROM (SELECT %s::float8 x) s", (value,))
            rendered, text = cursor.fetchone()
            expected = json_float(text)
            assert orjson.loads(rendered) == expected or expected != expected, (value, rendered)
            assert type(orjson.loads(rendered)) is type(expected), (value, rendered)


def test_a_block_of_rendered_rows_is_quoted_whole_and_one_with_a_null_payload_row_by_row() -> None:
    """The block-wide quoting (``_escaped_rows``) gives each row's payloads as ``escape`` quotes them,
    backslashes and quotes included; a block where a payload is NULL, or where COPY escaped a
    control character, is refused (its rows then go one by one)."""
    from sparkcdc.debezium.topic_line import escape
    from sparkcdc.engine.snapshot_rendered import _escaped_rows

    tail = b"\t\\N\t\\N\n"
    payloads = [(b'{"id":1}', b'{"id":1,"s":"a \\\\ \\"q\\" \\\\"}'), (b'{"id":2}', b'{"id":2,"s":"\\\\\\\\N"}')]
    block = b"".join(b"\t".join((key, row.replace(b"\\", b"\\\\"))) + tail for key, row in payloads)  # COPY doubles backslashes
    assert _escaped_rows(block, tail) == [escape(text) for key, row in payloads for text in (key, row)]
    keyless = b"".join(row.replace(b"\\", b"\\\\") + tail for _, row in payloads)
    assert _escaped_rows(keyless, tail) == [escape(row) for _, row in payloads]
    assert _escaped_rows(b'{"id":3}\t\\N\t3\tx\n' + block, tail) is None  # the row payload is NULL: the converters
    assert _escaped_rows(b'{"id":3}\t{"s":"a\\nb"}' + tail, tail) is None  # COPY's escape of a raw newline
    assert _escaped_rows(b'\\N\t{"id":4}' + tail, tail) is None  # a NULL key payload, every column NULL
