"""One table's rows of a ``foreachBatch`` micro-batch of the ``changes`` layout, typed as the applier
reads them (:func:`batch_changes`): in the view merged over every version of the table the batch
holds (:mod:`.versions`), each version's rows typed by their own codecs (:mod:`..outputs.changes.typed`).

Its own module because it joins both: the versions and the merged view are the views' knowledge,
the typing of blocks the changes layout's, which itself builds on the views' versions. The changes
layout is imported when :func:`batch_changes` is called, as :mod:`.changes` does: it imports the
views' modules, so importing it first runs this package's ``__init__``, which imports this module
(no circle of modules, but one of package initialisation).
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import functions as F

from .describe import describe_table
from .versions import merged_view, ordered_versions, view_of_description

__all__ = ["batch_changes"]


def batch_changes(batch: Any, table: str, properties: Any) -> Any:
    """In a ``foreachBatch`` of the ``changes`` layout: ``table``'s rows of the batch in the view
    merged over every version of it the batch holds (older rows typed by their own codecs, renamed
    columns under their new names: as the applier reads them). One small job reads the batch's
    block headers of the table; a table the batch has no row of gives an empty frame of its view as
    the catalog describes it now."""
    from ..outputs.changes.typed import typed_changes, versioned_changes

    schema_name, _, table_name = table.rpartition(".")
    schema_name = schema_name or "public"
    rows = (batch.where((F.col("schema") == schema_name) & (F.col("table") == table_name))
            .groupBy("shape").agg(F.first("description").alias("description"), F.bool_and(F.col("op") == "r").alias("reads"),
                                  F.max(F.struct("commit_lsn", "lsn", "ordinal")).alias("at"))
            .collect())
    if not rows:
        view = describe_table(properties, f"{schema_name}.{table_name}")
        return typed_changes(batch.limit(0), view)
    found = {row["shape"]: (row["description"], bool(row["reads"]), tuple(row["at"])) for row in rows}
    versions = [(shape, view_of_description(text, properties)) for shape, text in ordered_versions(found)]
    return versioned_changes(batch, versions, merged_view([view for _, view in versions]))
