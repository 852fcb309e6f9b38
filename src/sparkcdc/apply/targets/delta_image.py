"""An SCD1 image (an initial snapshot's batch) written as the Delta table's own data files.

An SCD1 image replaces the table: afterwards it holds exactly the image's rows (the fold has
already dropped the rows a newer recorded delete outlives, and an image has no unchanged TOAST
placeholder to keep a stored value for). So the merge, whose source the driver would read whole as
Arrow, is not needed: each executor task writes its partition's rows as a Parquet data file in the
table's directory, typed as the table stores them, with the file's statistics, and the driver
commits the files by reference as one ``overwrite`` (every file the table had is removed, the new
ones added) carrying the batch's ``txn`` and commit tags, as every commit of the target does. The
driver handles file names and statistics only, whatever the table's size.

Only where the table is the target's own shape: unpartitioned, without column mapping, with
exactly the pipeline's columns (a table with extra columns keeps their values through a merge,
which an overwrite would drop). A task attempt that fails or is not collected leaves a file no
commit references, which Delta's ``VACUUM`` removes, as it does a failed Spark writer's.
"""

from __future__ import annotations

import dataclasses
import json
import time
import uuid
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from deltalake import CommitProperties, DeltaTable
from deltalake.transaction import AddAction

from ..staged import DELETE, Folded, StagedBatch, StagedPart
from ..vector import cast_column
from .lake_staging import filesystem_of

__all__ = ["commit_image", "image_schema", "is_whole_image", "write_image"]

#: Delta truncates string statistics; longer bounds are left out (a file without a bound is never
#: skipped on that column, which is safe).
_STRING_BOUND = 32


def is_whole_image(folded: Folded) -> bool:
    """An SCD1 image: one segment that replaces the table, without a truncate."""
    return (folded.spec.scd_type == 1 and len(folded.segments) == 1 and folded.segments[0].replace_at is not None
            and folded.segments[0].truncate_at is None)


def image_schema(handle: DeltaTable | None, columns: list[str]) -> pa.Schema | None:
    """The table's Arrow schema when an image can be written as its data files (see the module
    doc); None when it must be merged."""
    if handle is None:
        return None
    metadata = handle.metadata()
    if metadata.partition_columns or (metadata.configuration or {}).get("delta.columnMapping.mode", "none") != "none":
        return None
    schema = pa.schema(handle.schema().to_arrow())
    return schema if sorted(schema.names) == sorted(columns) else None


def write_image(table_path: str, schema: pa.Schema, folded: Folded, *, batch_id: int, tag: str) -> StagedPart:
    """Write ``folded``'s rows (without those an ``apply_as_deletes`` condition marked) as one data
    file of the table at ``table_path``, typed as ``schema``; the part names it and its statistics."""
    rows = folded.rows
    if rows.num_rows:
        rows = rows.filter(pc.equal(rows.column(DELETE), False))
    files: tuple[tuple[str, int, str], ...] = ()
    if rows.num_rows:
        data = pa.Table.from_arrays([cast_column(rows.column(f.name), f.type) for f in schema],
                                    schema=pa.schema([f.with_nullable(True) for f in schema]))
        name = f"part-sparkcdc-{batch_id:010d}-{tag}-{uuid.uuid4().hex[:8]}.snappy.parquet"
        filesystem, directory = filesystem_of(table_path)
        path = f"{directory}/{name}"
        pq.write_table(data, path, filesystem=filesystem, compression="snappy")
        files = ((name, filesystem.get_file_info(path).size, file_stats(data)),)
    return dataclasses.replace(StagedPart.of(folded, tag), in_place=True, table_files=files)


def commit_image(handle: DeltaTable, staged: StagedBatch, properties: CommitProperties) -> None:
    """One overwrite of the table by the parts' files (none: the table is emptied)."""
    now = int(time.time() * 1000)
    actions = [AddAction(path, size, {}, now, True, stats) for part in staged.parts for path, size, stats in part.table_files]
    handle.create_write_transaction(actions, mode="overwrite", schema=handle.schema(), commit_properties=properties)
    handle.update_incremental()  # the handle does not see its own commit otherwise


def file_stats(data: pa.Table) -> str:
    """The Delta statistics of a data file holding ``data``: rows, null counts, and the bounds of the
    columns whose bounds Delta compares exactly (integers, floats without NaN, dates, short strings)."""
    low: dict[str, Any] = {}
    high: dict[str, Any] = {}
    nulls: dict[str, int] = {}
    for name, column in zip(data.column_names, data.columns, strict=True):
        nulls[name] = column.null_count
        bounds = _bounds(column)
        if bounds is not None:
            low[name], high[name] = bounds
    return json.dumps({"numRecords": data.num_rows, "minValues": low, "maxValues": high, "nullCount": nulls})


def _bounds(column: pa.ChunkedArray) -> tuple[Any, Any] | None:
    t = column.type
    if column.null_count == len(column):
        return None
    if pa.types.is_floating(t) and pc.any(pc.is_nan(column)).as_py():
        return None
    if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_date32(t) or pa.types.is_string(t)):
        return None
    found = pc.min_max(column)
    low, high = found["min"].as_py(), found["max"].as_py()
    if pa.types.is_date32(t):
        return low.isoformat(), high.isoformat()
    if pa.types.is_string(t) and (len(low) > _STRING_BOUND or len(high) > _STRING_BOUND):
        return None
    return low, high
