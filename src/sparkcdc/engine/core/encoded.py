"""Serialized change records, a batch at a time, as columns: what the engine hands to a runtime.

The Spark source ships records to the JVM as Arrow record batches, whose cost is per column, not
per row, when a column is built from one buffer. So the engine's readers produce batches of
already-serialized records laid out as columns: the per-row columns (key, value, LSNs, ordinals)
as lists, and columns that hold one value for the whole batch (a snapshot chunk's topic, LSN,
transaction, headers ...) as that single value. :mod:`sparkcdc.spark.outputs.columns` turns a batch into a
record batch without touching a Python object per cell of a constant column.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate, islice
from typing import Final, NamedTuple, Union, overload

from ...debezium.records import ChangeRecord
from ...debezium.serialization import JsonSerializer

__all__ = [
    "BATCH_BYTES", "NO_PARTITION", "OFFSET_LIMIT", "Constant", "EncodedBatch", "EncodedRecord", "Headers", "Joined", "cells",
    "encode_records", "joined",
]

#: The most bytes of keys and values a batch should hold. A bigger buffer is past glibc's largest
#: mmap threshold (32 MiB), so every batch's buffers would be fresh mappings, paid for in page
#: faults on every write: measured, that made a snapshot batch of 8,192 rows with schemas
#: (30 MB) three times slower to build than two of 4,096.
BATCH_BYTES = 8 << 20

#: Bytes a :class:`Joined` (an Arrow string column) can hold: its offsets are 32-bit.
OFFSET_LIMIT = 1 << 31

#: Serialized headers of one record: (name, JSON bytes or None).
Headers = Sequence[tuple[str, Union[bytes, None]]]


@dataclass(frozen=True)
class Constant:
    """A column with one value in every row of its batch."""

    value: object


class Joined(Sequence[bytes]):
    """Byte strings laid end to end in one buffer: item ``i`` is ``data[offsets[i]:offsets[i + 1]]``.

    What a string column of Arrow is made of, so a producer that can lay its items out this way
    with a few joins (the rendered snapshot) hands Arrow its buffers without a copy per item.
    """

    __slots__ = ("data", "offsets")

    def __init__(self, data: bytes, offsets: array) -> None:
        if offsets.typecode != "i" or not offsets or offsets[0] != 0 or offsets[-1] != len(data):
            raise ValueError("Joined: offsets must be an array('i') from 0 to the data's length")
        self.data = data
        self.offsets = offsets

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __iter__(self) -> Iterator[bytes]:
        data, offsets = self.data, self.offsets
        return (data[start:end] for start, end in zip(offsets, offsets[1:], strict=False))

    @overload
    def __getitem__(self, index: int) -> bytes: ...
    @overload
    def __getitem__(self, index: slice) -> list[bytes]: ...
    def __getitem__(self, index: int | slice) -> bytes | list[bytes]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self.data[self.offsets[index]:self.offsets[index + 1]]


#: The partition column of a batch none of whose records has a partition chosen by a transform (the
#: common case: each output partitions by key as Kafka's producer does).
NO_PARTITION: Final = Constant(None)


def joined(data: bytes, lengths: Sequence[int]) -> Joined | list[bytes | None]:
    """``data`` cut into items of ``lengths`` as a :class:`Joined`, or as a list when it is too long
    for 32-bit offsets."""
    if len(data) >= OFFSET_LIMIT:
        bounds = list(accumulate(lengths, initial=0))
        return [data[bounds[i]:bounds[i + 1]] for i in range(len(lengths))]
    return Joined(data, array("i", accumulate(lengths, initial=0)))


@dataclass
class EncodedBatch:
    """``size`` serialized records. Each column is a list (one item per row) or a :class:`Constant`."""

    size: int
    topic: list[str] | Constant
    key: list[bytes | None] | Joined | None  # None: not built (the batch has lines instead)
    value: list[bytes | None] | Joined | None
    headers: list[Headers] | Constant
    op: list[str] | Constant
    schema: list[str | None] | Constant
    table: list[str | None] | Constant
    lsn: list[int | None] | Constant
    commit_lsn: list[int | None] | Constant
    ordinal: list[int] | range
    tx_id: list[int | None] | Constant
    source_ts_us: list[int | None] | Constant
    snapshot: list[str | None] | Constant
    line: Joined | list[bytes | None] | None = None  # each record's topic-files line (sparkcdc.debezium.topic_line), when asked for
    #: What ends each item of ``line`` (``b"\n"``: the lines as a topic file holds them, so a run of
    #: them is written as the one buffer it already is), or nothing.
    line_end: bytes = b""
    #: The Kafka partition a transform chose for each record (``PartitionRouting``, the outbox router's
    #: ``partition`` placement), None for the output's own choice by key; :data:`NO_PARTITION` when no
    #: record of the batch has one. Only the ``kafka`` layout writes it (topic files have no partitions).
    partition: list[int | None] | Constant = NO_PARTITION

    def records(self) -> Iterator[EncodedRecord]:
        """The batch row by row (a batch built with key and value: not the lines-only kind)."""
        if self.key is None or self.value is None:
            raise ValueError("this encoded batch was built with lines only: it has no keys and values to list")
        size = self.size
        columns = [cells(c, size) for c in (self.topic, self.headers, self.op, self.lsn, self.commit_lsn, self.snapshot, self.partition)]
        for i, (key, value, ordinal) in enumerate(zip(self.key, self.value, self.ordinal, strict=True)):
            topic, headers, op, lsn, commit_lsn, snapshot, partition = (column[i] for column in columns)
            yield EncodedRecord(topic, key, value, headers, op, lsn, commit_lsn, ordinal, snapshot, partition)  # type: ignore[arg-type]


class EncodedRecord(NamedTuple):
    """One serialized record of an :class:`EncodedBatch`."""

    topic: str
    key: bytes | None
    value: bytes | None
    headers: Headers
    op: str
    lsn: int | None
    commit_lsn: int | None
    ordinal: int
    snapshot: str | None
    partition: int | None = None


def cells(column: Sequence[object] | Constant, size: int) -> Sequence[object]:
    """A column's value per row, whether it is a list or a :class:`Constant`."""
    return [column.value] * size if isinstance(column, Constant) else column


#: Records taken and serialized at a time while filling a batch: the batch ends at the first step
#: whose values reach ``batch_bytes``, so it may pass that by one step's bytes.
ENCODE_STEP = 256


def encode_records(
    records: Iterable[ChangeRecord], serializer: JsonSerializer, batch_size: int = 8192, batch_bytes: int = BATCH_BYTES
) -> Iterator[EncodedBatch]:
    """Records serialized (key, value, headers) and laid out in batches of at most ``batch_size``
    records, ending as soon as their values reach ``batch_bytes`` (checked every
    :data:`ENCODE_STEP` records).

    The columns are built a step at a time with one comprehension each, not an append per cell:
    this runs once per change in the Spark source's ``columns`` layout, and per-cell calls were a
    third of its cost.
    """
    encode = serializer.record
    remaining = iter(records)
    while True:
        taken: list[ChangeRecord] = []
        encoded: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]] = []
        size = 0
        while len(taken) < batch_size and size < batch_bytes:
            step = list(islice(remaining, min(ENCODE_STEP, batch_size - len(taken))))
            if not step:
                break
            done = [encode(record) for record in step]
            size += sum([len(e[1]) for e in done if e[1] is not None])
            taken += step
            encoded += done
        if not taken:
            return
        partitions = [r.partition for r in taken]
        yield EncodedBatch(
            len(taken),
            [r.topic for r in taken],
            [e[0] for e in encoded],
            [e[1] for e in encoded],
            [e[2] for e in encoded],
            [r.op for r in taken],
            [r.schema for r in taken],
            [r.table for r in taken],
            [r.lsn for r in taken],
            [r.commit_lsn for r in taken],
            [r.ordinal for r in taken],
            [r.tx_id for r in taken],
            [r.source_ts_us for r in taken],
            [r.snapshot for r in taken],
            partition=NO_PARTITION if partitions.count(None) == len(partitions) else partitions,
        )
