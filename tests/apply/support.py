"""Hand-built change events for the apply tests (the typed view's columns, no Spark)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from sparkcdc.apply.fold import DELETE_FLAG, OLD_KEY, TRUNCATE_FLAG, UNCHANGED


class Events:
    """Builds one batch of events for a table ``(id bigint key, name text, body text, n int)``."""

    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("body", pa.string()), ("n", pa.int32())])
    columns = ("id", "name", "body", "n")
    keys = ("id",)

    def __init__(self, start: int = 1) -> None:
        self.rows: list[dict[str, Any]] = []
        self.lsn = start * 1000

    def _add(self, values: dict[str, Any], *, delete: bool = False, truncate: bool = False, unchanged: Sequence[str] = (),
             old_key: int | None = None) -> "Events":
        self.lsn += 1
        row = {c: values.get(c) for c in self.columns}
        row.update({DELETE_FLAG: delete, TRUNCATE_FLAG: truncate, UNCHANGED: list(unchanged),
                    OLD_KEY: None if old_key is None else {"id": old_key},
                    "__commit_lsn": self.lsn, "__lsn": self.lsn, "__ordinal": 0})
        self.rows.append(row)
        return self

    def upsert(self, id_: int, name: str | None = None, body: str | None = None, n: int | None = None,
               unchanged: Sequence[str] = ()) -> "Events":
        return self._add({"id": id_, "name": name, "body": body, "n": n}, unchanged=unchanged)

    def key_change(self, old: int, new: int, name: str | None = None, n: int | None = None,
                   unchanged: Sequence[str] = ("body",)) -> "Events":
        """An UPDATE of the key as Debezium sends it: delete of the old key, create of the new one
        (here without the TOASTed body, with ``__old_key``)."""
        self.delete(old)
        return self._add({"id": new, "name": name, "body": None, "n": n}, unchanged=unchanged, old_key=old)

    def delete(self, id_: int) -> "Events":
        return self._add({"id": id_}, delete=True)

    def truncate(self) -> "Events":
        return self._add({}, truncate=True)

    def table(self) -> pa.Table:
        fields = [*self.schema, pa.field(DELETE_FLAG, pa.bool_()), pa.field(TRUNCATE_FLAG, pa.bool_()),
                  pa.field(UNCHANGED, pa.list_(pa.string())), pa.field(OLD_KEY, pa.struct([("id", pa.int64())])),
                  pa.field("__commit_lsn", pa.int64()),
                  pa.field("__lsn", pa.int64()), pa.field("__ordinal", pa.int64())]
        return pa.Table.from_pylist(self.rows, schema=pa.schema(fields))
