"""The checkpoint reader on directories laid out as Spark's offset and commit logs write them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.cli.checkpoint import CheckpointError, last_committed_offset, read_checkpoint

METADATA = {"batchWatermarkMs": 0, "batchTimestampMs": 1795298164706, "conf": {"spark.sql.shuffle.partitions": "200"}}


def source_offset(lsn: int, phase: str = "stream") -> dict[str, Any]:
    return {"v": 1, "slot": "cdc", "db": "app", "phase": phase, "lsn": lsn, "lsn_text": f"0/{lsn:X}", "hb": 0}


def write_batch(root: Path, batch: int, offset_line: str, *, committed: bool) -> None:
    """Spark's files: no trailing newline, a hidden .crc beside each."""
    (root / "offsets").mkdir(parents=True, exist_ok=True)
    (root / "commits").mkdir(parents=True, exist_ok=True)
    (root / "offsets" / str(batch)).write_text(f"v1\n{json.dumps(METADATA)}\n{offset_line}")
    (root / "offsets" / f".{batch}.crc").write_bytes(b"crc\x00")
    if committed:
        (root / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')
        (root / "commits" / f".{batch}.crc").write_bytes(b"crc\x00")


def test_last_committed_is_the_newest_batch_with_a_commit(tmp_path: Path) -> None:
    (tmp_path / "metadata").write_text('{"id":"3f1c"}')
    write_batch(tmp_path, 0, json.dumps(source_offset(0x1000, "snapshot") | {"snapshot": {"id": "s"}}), committed=True)
    write_batch(tmp_path, 1, json.dumps(source_offset(0x2000)), committed=True)
    write_batch(tmp_path, 2, json.dumps(source_offset(0x3000)), committed=False)
    (tmp_path / "offsets" / ".3.6a1e.tmp").write_text("partial")
    last = last_committed_offset(tmp_path)
    assert last is not None
    assert (last.batch_id, last.lsn, last.phase, last.slot, last.database) == (1, 0x2000, "stream", "cdc", "app")
    assert last.path == tmp_path / "offsets" / "1"
    state = read_checkpoint(tmp_path)
    assert state.pending is not None and (state.pending.batch_id, state.pending.lsn) == (2, 0x3000)


def test_batch_numbers_compare_as_numbers_and_purged_batches_do_not_matter(tmp_path: Path) -> None:
    for batch in (9, 10, 11):  # 0..8 purged by Spark's minBatchesToRetain
        write_batch(tmp_path, batch, json.dumps(source_offset(batch)), committed=True)
    last = last_committed_offset(tmp_path)
    assert last is not None and last.batch_id == 11 and last.lsn == 11
    assert read_checkpoint(tmp_path).pending is None


def test_trailing_newline_and_several_sources_take_the_last_line(tmp_path: Path) -> None:
    write_batch(tmp_path, 0, '{"offset":5}\n' + json.dumps(source_offset(42)) + "\n", committed=True)
    last = last_committed_offset(tmp_path)
    assert last is not None and last.offset == source_offset(42)


def test_source_without_offset(tmp_path: Path) -> None:
    write_batch(tmp_path, 0, "-", committed=True)
    last = last_committed_offset(tmp_path)
    assert last is not None and last.offset is None and last.lsn is None


def test_nothing_committed_yet(tmp_path: Path) -> None:
    write_batch(tmp_path, 0, json.dumps(source_offset(1)), committed=False)
    assert last_committed_offset(tmp_path) is None
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "offsets").mkdir()
    assert last_committed_offset(tmp_path / "empty") is None


def test_not_a_checkpoint(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="not a Spark checkpoint directory"):
        last_committed_offset(tmp_path)
    with pytest.raises(CheckpointError, match="not a directory"):
        last_committed_offset(tmp_path / "absent")


def test_unknown_log_version(tmp_path: Path) -> None:
    write_batch(tmp_path, 0, json.dumps(source_offset(1)), committed=True)
    path = tmp_path / "offsets" / "0"
    path.write_text(path.read_text().replace("v1", "v9", 1))
    with pytest.raises(CheckpointError, match=r"offsets/0:1: expected the offset log version v1, found 'v9'"):
        last_committed_offset(tmp_path)


def test_torn_offset_file_names_file_and_line(tmp_path: Path) -> None:
    write_batch(tmp_path, 0, '{"v": 1, "slot": "cd', committed=True)
    with pytest.raises(CheckpointError, match=r"offsets/0:3: invalid JSON"):
        last_committed_offset(tmp_path)


def test_committed_batch_without_offsets_file(tmp_path: Path) -> None:
    write_batch(tmp_path, 0, json.dumps(source_offset(1)), committed=True)
    (tmp_path / "commits" / "1").write_text('v1\n{"nextBatchWatermarkMs":0}')
    with pytest.raises(CheckpointError, match="batch 1 is committed but"):
        last_committed_offset(tmp_path)
