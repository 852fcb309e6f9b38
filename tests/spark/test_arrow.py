"""Encoded batches to Arrow: every column layout (list, constant, joined buffer, nulls) gives the
record batch that building it cell by cell gives."""

from __future__ import annotations

from array import array

import pyarrow as pa
import pytest

from sparkcdc.engine.core.encoded import Constant, EncodedBatch, Joined
from sparkcdc.spark.outputs.columns import ARROW_SCHEMA, to_arrow

KEYS = [b'{"id":1}', b'{"id":"\xc3\xa9"}', b"{}"]
VALUES = [b'{"op":"r"}', b'{"v":"\xe2\x9c\x93"}', b'{"op":"c"}']


def _joined(items: list[bytes]) -> Joined:
    offsets = array("i", [0])
    for item in items:
        offsets.append(offsets[-1] + len(item))
    return Joined(b"".join(items), offsets)


def _batch(key: list[bytes | None] | Joined, value: list[bytes | None] | Joined, constants: bool) -> EncodedBatch:
    headers = [("__debezium.context.connectorName", b'"postgresql"'), ("empty", None)]
    if constants:
        return EncodedBatch(3, Constant("t"), key, value, Constant(headers), Constant("r"), Constant("public"), Constant("x"),
                            Constant(7), Constant(7), range(10, 13), Constant(None), Constant(1_700_000_000_000_000),
                            ["first", "true", "last"])
    return EncodedBatch(3, ["t", "u", "t"], key, value, [headers, [], headers], ["r", "c", "u"], ["public"] * 3,
                        ["x", "y", "x"], [7, 8, None], [7, 9, None], [10, 11, 12], [None, 5, 6],
                        [1_700_000_000_000_000, None, 1], ["first", None, "last"])


def _expected(batch: EncodedBatch, key: list[bytes | None], value: list[bytes | None]) -> pa.RecordBatch:
    def cells(column: object) -> list[object]:
        return [column.value] * batch.size if isinstance(column, Constant) else list(column)  # type: ignore[call-overload]

    headers = [[{"key": name, "value": raw} for name, raw in hs] for hs in cells(batch.headers)]
    return pa.RecordBatch.from_pydict({
        "topic": cells(batch.topic), "key": [None if k is None else k.decode() for k in key],
        "value": [None if v is None else v.decode() for v in value], "headers": headers, "op": cells(batch.op),
        "schema": cells(batch.schema), "table": cells(batch.table), "lsn": cells(batch.lsn),
        "commit_lsn": cells(batch.commit_lsn), "ordinal": list(batch.ordinal), "tx_id": cells(batch.tx_id),
        "source_ts": cells(batch.source_ts_us), "snapshot": cells(batch.snapshot),
    }, schema=ARROW_SCHEMA)


@pytest.mark.parametrize("constants", [True, False])
@pytest.mark.parametrize("layout", ["joined", "lists", "nulls"])
def test_every_layout_gives_the_cell_by_cell_batch(layout: str, constants: bool) -> None:
    key: list[bytes | None] = list(KEYS)
    value: list[bytes | None] = list(VALUES)
    if layout == "nulls":
        key[0], value[2] = None, None  # no key; a tombstone
    batch = _batch(_joined(KEYS) if layout == "joined" else key, _joined(VALUES) if layout == "joined" else value, constants)
    result = to_arrow(batch)
    result.validate(full=True)
    assert result.equals(_expected(batch, key, value))


def test_joined_slices_like_a_list_and_refuses_bad_offsets() -> None:
    joined = _joined(VALUES)
    assert list(joined) == VALUES and joined[-1] == VALUES[-1] and joined[1:] == VALUES[1:] and len(joined) == 3
    with pytest.raises(IndexError):
        joined[3]
    with pytest.raises(ValueError, match="offsets"):
        Joined(b"abc", array("i", [0, 2]))
    with pytest.raises(ValueError, match="offsets"):
        Joined(b"abc", array("q", [0, 3]))
