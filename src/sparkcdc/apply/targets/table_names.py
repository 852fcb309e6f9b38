"""The names every target stores a mirror under: the target table's schema and name, and its
tombstones (recorded deletes: the key columns, the delete's sequence and when it was recorded),
as columns of their own and, where they are a table beside the mirror (PostgreSQL, Iceberg),
under the mirror's name with a suffix."""

from __future__ import annotations

import pyarrow as pa

__all__ = ["DELETED_AT", "DELETED_AT_TYPE", "SEQUENCE", "TOMBSTONE_SUFFIX", "split_target"]

#: Tombstone table columns (besides the key columns): the delete's sequence and when it was recorded.
SEQUENCE = "__SEQUENCE"
DELETED_AT = "__DELETED_AT"
DELETED_AT_TYPE = pa.timestamp("us", tz="UTC")
#: A target table's tombstones, where they are a table beside it (PostgreSQL, Iceberg): its name and this.
TOMBSTONE_SUFFIX = "__sparkcdc_tombstones"


def split_target(target: str) -> tuple[str, str]:
    """``schema.table`` as (schema, table); a bare table name is in ``public``, as in PostgreSQL."""
    schema, _, name = target.rpartition(".")
    return schema or "public", name
