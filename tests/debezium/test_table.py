"""TableSchema's generated payload functions: ``key_and_row`` is ``key`` and ``row`` in one call.

Streaming uses ``key_and_row`` for inserts (and updates without an old tuple) where ``key`` and
``row`` were called before; it must give the same payloads, and fail the same way, for every tuple:
NULLs, unchanged TOAST values, malformed text, values Debezium cannot represent, value transforms
(masking, truncation, hashing), key overrides, unselected key columns and tables without a key.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.debezium.table import ColumnDescription, TableDescription, TableSchema, TableSchemaFactory
from sparkcdc.debezium.types import ColumnType
from sparkcdc.pgoutput.messages import UNCHANGED_TOAST

_BASE = {"database.hostname": "localhost", "database.user": "u", "database.dbname": "d", "topic.prefix": "t"}


def _column(name: str, type_name: str, oid: int, position: int, *, not_null: bool = False, modifier: int = -1) -> ColumnDescription:
    return ColumnDescription(name, ColumnType(oid, type_name, "pg_catalog", modifier, type_name), not_null, None, position)


_COLUMNS = (
    _column("id", "int8", 20, 0, not_null=True),
    _column("qty", "int4", 23, 1, not_null=True),
    _column("label", "text", 25, 2),
    _column("stamp", "timestamp", 1114, 3, modifier=6),
    _column("code", "varchar", 1043, 4, not_null=True, modifier=14),
)

# Text each column may carry: valid values, malformed ones, and (nanoseconds mode) a timestamp that
# Debezium cannot represent.
_TEXTS = {
    "id": ["1", "-9223372036854775808", "12x", "99999999999999999999"],
    "qty": ["0", "2147483647", "", "1.5"],
    "label": ["", "label-1", "ünïcödé"],
    "stamp": ["2024-01-02 03:04:05.123456", "2300-01-01 00:00:00", "not a time"],
    "code": ["abc", "0123456789abcdef"],
}

_CONFIGS: dict[str, tuple[dict[str, str], tuple[str, ...]]] = {
    "defaults": ({}, ("id",)),
    "composite key, nanoseconds": ({"time.precision.mode": "nanoseconds"}, ("id", "stamp")),
    "no key": ({}, ()),
    "transforms": (
        {
            "column.mask.with.4.chars": "public.items.label",
            "column.truncate.to.3.chars": "public.items.code",
            "column.mask.hash.SHA-256.with.salt.pepper": "public.items.id",
        },
        ("id", "code"),
    ),
    "key override": ({"message.key.columns": "public.items:qty,label"}, ("id",)),
    "unselected key column": ({"column.exclude.list": "public.items.id"}, ("id", "qty")),
}


def _schema(name: str) -> TableSchema:
    options, primary_key = _CONFIGS[name]
    factory = TableSchemaFactory(ConnectorConfig({**_BASE, **options}))
    return factory.build(TableDescription("public", "items", _COLUMNS, primary_key))


def _outcome(call: Callable[[], Any]) -> tuple[Any, ...]:
    try:
        return ("ok", call())
    except Exception as exc:  # noqa: BLE001 - the comparison is the point
        return ("raised", type(exc), str(exc))


_value = st.one_of(st.none(), st.just(UNCHANGED_TOAST))
_tuples = st.tuples(*(st.one_of(_value, st.sampled_from(_TEXTS[c.name])) for c in _COLUMNS))


@pytest.mark.parametrize("config", sorted(_CONFIGS))
@settings(max_examples=150, deadline=None)
@given(values=_tuples)
def test_key_and_row_is_key_then_row(config: str, values: tuple[Any, ...]) -> None:
    schema = _schema(config)
    assert _outcome(lambda: schema.key_and_row(values)) == _outcome(lambda: (schema.key(values), schema.row(values)))


def test_the_cases_the_generated_code_distinguishes_do_occur() -> None:
    """The comparison above means something only if its inputs reach these outcomes."""
    schema = _schema("composite key, nanoseconds")
    good = ("1", "2", "x", "2024-01-02 03:04:05.123456", "abc")
    assert schema.key_and_row(good) == (
        {"id": 1, "stamp": 1704164645123456000},
        {"id": 1, "qty": 2, "label": "x", "stamp": 1704164645123456000, "code": "abc"},
    )
    unrepresentable = ("1", "2", "x", "2300-01-01 00:00:00", "abc")
    assert _outcome(lambda: schema.key_and_row(unrepresentable))[0] == "raised"  # a key field: the event fails
    plain = _schema("defaults")
    row_only = ("1", "2", None, UNCHANGED_TOAST, "abc")
    key, row = plain.key_and_row(row_only)
    assert key == {"id": 1} and row["label"] is None and row["stamp"] == plain.row(row_only)["stamp"]
    assert _schema("no key").key_and_row(good)[0] is None
    masked = _schema("transforms").key_and_row(good)
    assert masked[1]["label"] == "****" and masked[0]["code"] == "abc" and masked[1]["code"] == "abc"


def _transposed(schema: TableSchema, rows: list[tuple[Any, ...]]) -> tuple[Any, Any]:
    pairs = [schema.key_and_row(values) for values in rows]
    keys = None if schema.key_schema is None else {f.name: [k[f.name] for k, _ in pairs] for f in schema.key_schema.fields}
    return keys, {f.name: [r[f.name] for _, r in pairs] for f in schema.row_schema.fields}


@pytest.mark.parametrize("config", sorted(_CONFIGS))
@settings(max_examples=60, deadline=None)
@given(rows=st.lists(_tuples, max_size=6))
def test_columns_of_is_key_and_row_column_by_column(config: str, rows: list[tuple[Any, ...]]) -> None:
    """What a snapshot chunk's reader builds its columns with: the same values as ``key_and_row``
    tuple by tuple, and a failure where it fails (which error may differ: columns are converted
    one after the other, so another tuple's bad value may be met first)."""
    schema = _schema(config)
    got, want = _outcome(lambda: schema.columns_of(rows)), _outcome(lambda: _transposed(schema, rows))
    assert got[0] == want[0] and (got[0] == "raised" or got == want)
