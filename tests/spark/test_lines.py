"""The ``lines`` output layout: lines the reader builds (from key and value texts, and from streamed
records by ``encode_lines``) are the lines Spark's ``to_json`` builds from the ``columns`` layout,
byte for byte, and the topic files sink writes them as they are. (The rendered snapshot's lines are
held to ``line_batch``'s in tests/engine/test_snapshot_rendered.py.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from sparkcdc.debezium.connect import int32, int64, string, struct
from sparkcdc.debezium.records import ChangeRecord, Header
from sparkcdc.debezium.serialization import JsonSerializer
from sparkcdc.debezium.topic_line import escape, text
from sparkcdc.engine.core.encoded import Constant, EncodedBatch, encode_records
from sparkcdc.engine.core.lines import encode_lines
from sparkcdc.spark.outputs.columns import DDL_SCHEMA, to_arrow
from sparkcdc.spark.outputs.lines import LINES_DDL_SCHEMA, line_batch
from sparkcdc.spark.outputs.topic_files.batch_writer import TopicFilesBatchWriter

from .test_topic_files_sink import files, frame, record

KEY = '{"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"}]},"payload":{"id":1}}'
VALUE = ('{"payload":{"before":null,"after":{"id":1,"txt":"ünïcødé ✓ 😀 \\"quoted\\" back\\\\slash \\n tab\\t </x> \u2028"},'
         '"op":"c"}}')
HEADERS = [("__debezium.context.connectorName", b"postgresql"), ("empty", None), ("ütf", "wért".encode())]
ROWS = [
    record("srv.public.t", KEY, VALUE, lsn=100, commit_lsn=200, ordinal=0, headers=HEADERS),
    record("srv.public.t", KEY, None, lsn=110, commit_lsn=200, ordinal=1, headers=[]),  # a tombstone
    record("srv.public.u", None, '{"payload":{"op":"c"}}', lsn=120, commit_lsn=200, ordinal=2, headers=[]),  # no key
    record("srv.public.t", KEY, VALUE, lsn=9_223_372_036_854_775_000, commit_lsn=9_223_372_036_854_775_807, ordinal=3,
           headers=HEADERS),
    record("srv.transaction", None, '{"status":"END"}', lsn=None, commit_lsn=None, ordinal=4, headers=[]),  # type: ignore[arg-type]
]


def _encoded(rows: list[tuple[Any, ...]]) -> EncodedBatch:
    columns = list(zip(*rows, strict=True))

    def utf8(items: tuple[Any, ...]) -> list[bytes | None]:
        return [None if item is None else item.encode() for item in items]

    return EncodedBatch(len(rows), list(columns[0]), utf8(columns[1]), utf8(columns[2]), list(columns[3]),
                        *[list(c) for c in columns[4:]])


def test_escape_quotes_exactly_what_json_needs() -> None:
    assert escape(b'a"b\\c') == b'a\\"b\\\\c' and escape(b"plain") == b"plain" and escape(b"\\") == b"\\\\"
    assert text(None) == b"null" and text(b'{"a":"\\n"}') == b'"{\\"a\\":\\"\\\\n\\"}"'


def test_reader_lines_are_the_sinks_to_json_lines(spark: Any, tmp_path: Path) -> None:
    by_spark = tmp_path / "columns"
    TopicFilesBatchWriter(by_spark)(frame(spark, ROWS), 0)

    batch = line_batch(_encoded(ROWS))
    by_reader = tmp_path / "lines"
    TopicFilesBatchWriter(by_reader)(spark.createDataFrame(_rows(batch), LINES_DDL_SCHEMA).repartition(1), 0)

    assert files(by_reader) == files(by_spark)
    assert sum(len(lines) for lines in files(by_reader).values()) == len(ROWS)


def _streamed_records() -> list[ChangeRecord]:
    """Records of every shape a stream carries: with and without key, schemas, headers; a tombstone;
    text that needs escaping; LSNs up to the largest long."""
    key_schema = struct([("id", int32())], name="srv.public.t.Key")
    row = struct([("id", int32()), ("txt", string(optional=True))], name='srv.public."t".Value', optional=True)
    value_schema = struct([("before", row), ("after", row), ("op", string()), ("ts_ms", int64(optional=True))],
                          name="srv.public.t.Envelope")
    context = (Header("__debezium.context.connectorName", "postgresql", string(), constant=True),
               Header("__debezium.context.taskId", "0", string(), constant=True))
    odd = (Header("ütf", 'wé"rt \\ \n\u0001', string()), Header("empty", None, None))
    out = []
    for i, txt in enumerate(["plain", 'q"uote \\ back \n nl \t tab \u0001 \u2028 é ✓ 😀 </x>', None]):
        after = {"id": i, "txt": txt}
        out.append(ChangeRecord("srv.public.t", {"id": i}, key_schema, {"before": None, "after": after, "op": "c", "ts_ms": 1},
                                value_schema, context, "c", "public", "t", 100 + i, 200, i))
    out.append(ChangeRecord("srv.public.t", {"id": 0}, key_schema, None, None, odd, None, "public", "t", 110, 200, 3))  # tombstone
    for i in range(4):  # per-record header lists in a row (a key change's): each freed list's id may come back for the next
        old_key = (Header("__debezium.oldkey", {"id": 10 + i}, key_schema), *context)
        out.append(ChangeRecord("srv.public.t", {"id": 20 + i}, key_schema, None, None, old_key, None, "public", "t", 120 + i, 200,
                                5 + i))
    out.append(ChangeRecord("srv.public.u", None, None, {"after": {"id": 1}}, None, (), "c", "public", "u",
                            9_223_372_036_854_775_000, 9_223_372_036_854_775_807, 9))  # no key, no value schema
    return out


@pytest.mark.parametrize("schemas", [True, False])
def test_streamed_records_lines_are_the_sinks_to_json_lines(spark: Any, tmp_path: Path, schemas: bool) -> None:
    records = _streamed_records()
    serializer = JsonSerializer(key_schemas=schemas, value_schemas=schemas)
    by_spark = tmp_path / "columns"
    columns = [row for batch in encode_records(records, serializer, 2) for row in _rows(to_arrow(batch))]
    TopicFilesBatchWriter(by_spark)(spark.createDataFrame(columns, DDL_SCHEMA).repartition(1), 0)

    by_reader = tmp_path / "lines"
    lines = [row for batch in encode_lines(records, serializer) for row in _rows(line_batch(batch))]
    TopicFilesBatchWriter(by_reader)(spark.createDataFrame(lines, LINES_DDL_SCHEMA).repartition(1), 0)

    assert files(by_reader) == files(by_spark)
    assert sum(len(lines) for lines in files(by_reader).values()) == len(records)


def test_a_batch_with_lines_only_needs_line_batch() -> None:
    lined = EncodedBatch(1, Constant("t"), None, None, Constant([]), Constant("r"), Constant("public"), Constant("t"),
                         Constant(1), Constant(1), range(1), Constant(None), Constant(None), ["true"])
    from sparkcdc.spark.outputs.columns import to_arrow

    with pytest.raises(ValueError, match="lines"):
        to_arrow(lined)
    with pytest.raises(ValueError, match="lines"):
        line_batch(lined)


def _rows(batch: pa.RecordBatch) -> list[tuple[Any, ...]]:
    return list(zip(*(batch.column(i).to_pylist() for i in range(batch.num_columns)), strict=True))
