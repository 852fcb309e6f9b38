"""The topic-files line's one definition: every builder's pieces make the reference line, and a
builder written for another field order is refused."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from sparkcdc.debezium.topic_line import FIELDS, escape, line, segments, spark_sql, text, text_template

HEADERS = [("__debezium.context.connectorName", b'"postgresql"'), ("empty", None), ("ütf", '"wé\\"rt"'.encode())]
RECORD: dict[str, Any] = {
    "key": b'{"id":1}', "value": '{"txt":"q\\"uote \\\\ é \\n"}'.encode(), "headers": HEADERS, "lsn": 5, "commit_lsn": None,
    "ordinal": 3,
}


def test_the_line_is_the_records_fields_in_order() -> None:
    expected = orjson.dumps({
        "key": RECORD["key"].decode(), "value": RECORD["value"].decode(),
        "headers": [{"name": name, "value": None if raw is None else raw.decode()} for name, raw in HEADERS],
        "lsn": 5, "commit_lsn": None, "ordinal": 3,
    })
    assert line(**RECORD) == expected
    assert [field.name for field in FIELDS] == list(orjson.loads(expected))


@pytest.mark.parametrize("free", [(), ("key", "value", "ordinal"), ("value",), tuple(field.name for field in FIELDS)])
def test_segments_around_the_free_fields_make_the_line(free: tuple[str, ...]) -> None:
    pieces = segments(*free, **{name: value for name, value in RECORD.items() if name not in free})
    assert len(pieces) == len(free) + 1
    kinds = {field.name: field for field in FIELDS}
    rendered = [kinds[name].render(RECORD[name]) for name in free]
    assert b"".join(p for pair in zip(pieces, [*rendered, b""], strict=True) for p in pair) == line(**RECORD)


def test_a_text_template_around_an_escaped_part_is_the_quoted_text() -> None:
    before, after = text_template(b'{"schema":"\\"s\\"","payload":', b',"ts_ms":%d}')
    part = '{"a":"\\"é\\u0001"}'.encode()
    assert before + escape(part) + after == text(b'{"schema":"\\"s\\"","payload":' + part + b',"ts_ms":%d}')


@pytest.mark.parametrize(("free", "fixed"), [
    (("value", "key"), ("headers", "lsn", "commit_lsn", "ordinal")),  # out of order
    (("key", "value"), ("headers", "lsn", "commit_lsn")),  # ordinal missing
    (("key", "value", "extra"), ("headers", "lsn", "commit_lsn", "ordinal")),  # not a field
])
def test_a_builder_for_another_layout_is_refused(free: tuple[str, ...], fixed: tuple[str, ...]) -> None:
    with pytest.raises(ValueError, match="key, value, headers, lsn, commit_lsn, ordinal in this order"):
        segments(*free, **{name: RECORD.get(name) for name in fixed})


def test_the_spark_sql_names_every_field_in_order() -> None:
    sql = spark_sql()
    positions = [sql.index(f"'{field.name}', ") for field in FIELDS]
    assert positions == sorted(positions) and "'ignoreNullFields', 'false'" in sql
