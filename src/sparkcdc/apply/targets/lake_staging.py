"""The lake targets' staging: executors write a partition's folded rows and tombstones as Parquet
files under the target's root (storage every node sees), the driver's commit reads them back and
removes them (:data:`STAGING_DIR`)."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa

from ..staged import Folded, StagedBatch, StagedPart, pipeline_hash
from .library_errors import failing_as

__all__ = ["STAGING_DIR", "filesystem_of", "remove_staging", "staged_batches", "staging_dir", "write_staged"]

log = logging.getLogger(__name__)

#: Under a lake target's root: ``<pipeline>/<table>/<batch>/<tag>/{rows,tombstones}.parquet``.
STAGING_DIR = "_sparkcdc_staging"


def staging_dir(root: str, pipeline_id: str, target: str, batch_id: int | None = None) -> str:
    """Where a table's staged batches (one of them with ``batch_id``) of a pipeline are, under ``root``."""
    base = f"{root.rstrip('/')}/{STAGING_DIR}/{pipeline_hash(pipeline_id)}/{pipeline_hash(target)}"
    return base if batch_id is None else f"{base}/{batch_id:020d}"


def filesystem_of(location: str) -> tuple[Any, str]:
    """pyarrow's filesystem of ``location`` (a path or URI) and the path in it."""
    return _filesystem(location)


def _filesystem(location: str) -> tuple[Any, str]:
    from pyarrow import fs

    if "://" not in location:
        location = os.path.abspath(location)
    return fs.FileSystem.from_uri(location)


def write_staged(root: str, folded: Folded, *, pipeline_id: str, batch_id: int, tag: str) -> StagedPart:
    """Stage ``folded`` as Parquet files under ``root`` (storage every node sees: the target's)."""
    import pyarrow.parquet as pq

    directory = f"{staging_dir(root, pipeline_id, folded.spec.target, batch_id)}/{tag}"
    files: dict[str, str | None] = {"rows": None, "tombstones": None}
    with failing_as(f"staging batch {batch_id} of {folded.spec.target} at {directory}"):
        filesystem, path = _filesystem(directory)
        filesystem.create_dir(path, recursive=True)
        for what, rows in (("rows", folded.rows), ("tombstones", folded.tombstones)):
            if rows.num_rows:
                pq.write_table(rows, f"{path}/{what}.parquet", filesystem=filesystem, compression="lz4")
                files[what] = f"{directory}/{what}.parquet"
    return StagedPart.of(folded, tag, rows_file=files["rows"], tombstones_file=files["tombstones"])


def staged_batches(staged: StagedBatch, what: str, columns: Sequence[str] | None = None) -> Iterator[pa.RecordBatch]:
    """The staged ``what`` ("rows" or "tombstones") of the batch's collected parts, batch by batch."""
    import pyarrow.dataset as ds

    files = staged.files(what)
    if not files:
        return iter(())
    filesystem, _ = _filesystem(files[0])
    dataset = ds.dataset([_filesystem(f)[1] for f in files], format="parquet", filesystem=filesystem)
    return iter(dataset.to_batches(columns=list(columns) if columns is not None else None))


def remove_staging(root: str, pipeline_id: str, target: str, batch_id: int) -> None:
    """Remove a table's staged batches of the pipeline up to ``batch_id``, every tag's: those of
    task attempts the driver did not collect, and those a crash left behind."""
    from pyarrow import fs

    try:
        filesystem, path = _filesystem(staging_dir(root, pipeline_id, target))
        for info in filesystem.get_file_info(fs.FileSelector(path, allow_not_found=True)):
            if info.type == fs.FileType.Directory and info.base_name.isdigit() and int(info.base_name) <= batch_id:
                filesystem.delete_dir(info.path)
    except OSError as exc:  # the next commit tries again
        log.warning("could not remove the staging of %s up to batch %d under %s: %s", target, batch_id, root, exc)
