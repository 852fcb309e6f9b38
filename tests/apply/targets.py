"""The apply targets driven the way the Spark layer drives them: fold a batch of typed change
events with the target's tombstones and open versions, then apply it. One harness per target kind
(Delta Lake, Iceberg, PostgreSQL), the same interface, so that one behaviour test runs against each."""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path
from typing import Any

import psycopg
import pyarrow as pa
from deltalake import DeltaTable
from psycopg.rows import dict_row

from sparkcdc.apply import ApplySpec
from sparkcdc.apply.evolution import Evolution, EvolutionPolicy
from sparkcdc.apply.fold import fold_changes
from sparkcdc.apply.spec import DEFAULT_SEQUENCE, ResolvedSpec
from sparkcdc.apply.targets import ApplyTarget, TargetColumn, target_for
from sparkcdc.apply.targets.delta import DeltaTarget
from sparkcdc.apply.targets.iceberg import IcebergTarget, batch_property, pipeline_property
from sparkcdc.apply.targets.postgres import PostgresTarget

COLUMNS = [
    TargetColumn("id", pa.int64(), nullable=False),
    TargetColumn("name", pa.string()),
    TargetColumn("body", pa.string()),
    TargetColumn("qty", pa.int64()),
]
SEQ_COLUMNS = [TargetColumn(name, pa.int64(), nullable=False) for name in DEFAULT_SEQUENCE]
SEQ_TYPE = pa.struct([(name, pa.int64()) for name in DEFAULT_SEQUENCE])


class Feed:
    """Typed change events as the Spark view hands them over, with increasing sequences."""

    def __init__(self, columns: list[TargetColumn] = COLUMNS) -> None:
        self.columns = columns
        self.lsn = itertools.count(1000, 10)

    def event(self, op: str = "u", *, lsn: int | None = None, unchanged: tuple[str, ...] = (), **values: Any) -> dict[str, Any]:
        lsn = next(self.lsn) if lsn is None else lsn
        row = {c.name: values.get(c.name) for c in self.columns}
        row.update(__is_delete=op == "d", __is_truncate=op == "t", __unchanged=list(unchanged),
                   __commit_lsn=lsn, __lsn=lsn + 1, __ordinal=0)
        return row

    def table(self, events: list[dict[str, Any]]) -> pa.Table:
        fields = [pa.field(c.name, c.arrow_type) for c in self.columns] + [
            pa.field("__is_delete", pa.bool_()), pa.field("__is_truncate", pa.bool_()),
            pa.field("__unchanged", pa.list_(pa.string())),
            pa.field("__commit_lsn", pa.int64()), pa.field("__lsn", pa.int64()), pa.field("__ordinal", pa.int64()),
        ]
        schema = pa.schema(fields)
        return pa.table({f.name: pa.array([e[f.name] for e in events], type=f.type) for f in schema}, schema=schema)


class LakeHarness:
    """One target table of a fresh lake target under ``root``; the formats say how to look inside."""

    #: The write methods a test can make crash (SCD type -> method of the target class).
    write_methods: dict[int, str]
    target_class: type[Any]
    #: What a failed write's error says after "applying batch 1 to public.items".
    failure_where: str
    #: The stored type of the default sequence (a struct of its columns).
    seq_type: pa.DataType

    def __init__(self, root: Path, spec: ApplySpec, columns: list[TargetColumn] = COLUMNS,
                 sequence: list[TargetColumn] = SEQ_COLUMNS, target: Any | None = None, policy: EvolutionPolicy | None = None) -> None:
        self.root = root
        self.target = target or self.open(root)
        self.columns = columns
        self.resolved: ResolvedSpec = spec.resolve([c.name for c in columns], [columns[0].name])
        self.feed = Feed(columns)
        #: What ``prepare`` did to bring an existing table to the columns (sparkcdc.apply.evolution).
        self.evolution: Evolution = self.target.prepare(self.resolved, columns, sequence, policy)
        self.batch = itertools.count(0)
        schema, _, name = self.resolved.target.rpartition(".")
        self.schema_name, self.name = schema or "public", name
        self.last_changes = None

    def open(self, root: Path) -> ApplyTarget:
        raise NotImplementedError

    @classmethod
    def create(cls, root: Path, name: str, schema: pa.Schema, rows: pa.Table | None = None) -> None:
        """Make the table ``schema.table`` the way its owner would, before any target (with ``rows``)."""
        raise NotImplementedError

    def run(self, events: list[dict[str, Any]], *, batch_id: int | None = None, pipeline: str = "pipe",
            replace_at: tuple[Any, ...] | None = None) -> bool:
        table = self.feed.table(events)
        index = [self.resolved.columns.index(k) for k in self.resolved.keys]
        keys = {tuple(e[self.resolved.columns[i]] for i in index) for e in events if not e["__is_truncate"]}
        changes = fold_changes(
            self.resolved, table,
            tombstones=self.target.tombstones(self.resolved, keys),
            open_versions=self.target.open_versions(self.resolved, keys) if self.resolved.scd_type == 2 else None,
            replace_at=replace_at,
        )
        self.last_changes = changes
        return self.target.apply(changes, pipeline_id=pipeline, batch_id=next(self.batch) if batch_id is None else batch_id)

    def rows(self) -> list[dict[str, Any]]:
        return sorted(self.stored(), key=lambda r: (r["id"], start_of(r)))

    def state(self) -> dict[int, dict[str, Any]]:
        return {r["id"]: r for r in self.rows()}

    # -- what the format says -----------------------------------------------------------------------

    def stored(self, tombstones: bool = False) -> list[dict[str, Any]]:
        """The rows of the table (or of its tombstones), unsorted."""
        raise NotImplementedError

    def schema(self, tombstones: bool = False) -> pa.Schema:
        raise NotImplementedError

    def has_tombstones(self) -> bool:
        """Whether the tombstone table exists (it is created with the first delete)."""
        raise NotImplementedError

    def commits(self, tombstones: bool = False) -> int:
        """How many commits the table (or its tombstones) has had."""
        raise NotImplementedError

    def fingerprint(self, tombstones: bool = False) -> Any:
        """Changes with any write to the table (or its tombstones)."""
        raise NotImplementedError

    def position(self, pipeline: str) -> int | None:
        """The batch of ``pipeline`` the table records, read the format's own way."""
        raise NotImplementedError


class DeltaHarness(LakeHarness):
    write_methods = {1: "_merge_scd1", 2: "_merge_scd2"}
    target_class = DeltaTarget
    seq_type = SEQ_TYPE
    failure_where = "at "

    def open(self, root: Path) -> DeltaTarget:
        return DeltaTarget(str(root))

    @classmethod
    def create(cls, root: Path, name: str, schema: pa.Schema, rows: pa.Table | None = None) -> None:
        table = DeltaTable.create(str(root.joinpath(*name.split("."))), schema=schema)
        if rows is not None:
            table.merge(rows, "t.id = s.id", source_alias="s", target_alias="t").when_not_matched_insert_all().execute()

    @property
    def path(self) -> Path:
        return self.root / self.schema_name / self.name

    def table(self, tombstones: bool = False) -> DeltaTable:
        path = self.root / "_sparkcdc/tombstones" / self.schema_name / self.name if tombstones else self.path
        return DeltaTable(str(path))

    def stored(self, tombstones: bool = False) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = self.table(tombstones).to_pyarrow_table().to_pylist()
        return rows

    def schema(self, tombstones: bool = False) -> pa.Schema:
        return pa.schema(self.table(tombstones).schema().to_arrow())

    def has_tombstones(self) -> bool:
        return (self.root / "_sparkcdc").exists()

    def commits(self, tombstones: bool = False) -> int:
        return self.table(tombstones).version() + 1

    def fingerprint(self, tombstones: bool = False) -> Any:
        return self.version(tombstones)

    def version(self, tombstones: bool = False) -> int:
        return int(self.table(tombstones).version())

    def position(self, pipeline: str) -> int | None:
        return self.table().transaction_version(f"sparkcdc:{pipeline}")


class IcebergHarness(LakeHarness):
    write_methods = {1: "_write_scd1", 2: "_write_scd2"}
    target_class = IcebergTarget
    seq_type = pa.struct([pa.field(name, pa.int64(), nullable=False) for name in DEFAULT_SEQUENCE])  # required fields
    failure_where = r".* at iceberg\+file://"

    def open(self, root: Path) -> IcebergTarget:
        return IcebergTarget(location(root))

    @classmethod
    def create(cls, root: Path, name: str, schema: pa.Schema, rows: pa.Table | None = None) -> None:
        catalog = IcebergTarget(location(root)).catalog()
        catalog.create_namespace_if_not_exists(name.split(".")[0])
        table = catalog.create_table(name, schema=schema)
        if rows is not None:
            table.append(rows)

    @property
    def identifier(self) -> tuple[str, str]:
        return self.schema_name, self.name

    def table(self, suffix: str = "") -> Any:
        return self.target.catalog().load_table((self.schema_name, self.name + suffix))

    def _of(self, tombstones: bool) -> Any:
        return self.table("__sparkcdc_tombstones" if tombstones else "")

    def stored(self, tombstones: bool = False) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = self._of(tombstones).scan().to_arrow().to_pylist()
        return rows

    def schema(self, tombstones: bool = False) -> pa.Schema:
        return self._of(tombstones).schema().as_arrow()

    def has_tombstones(self) -> bool:
        return bool(self.target.catalog().table_exists((self.schema_name, self.name + "__sparkcdc_tombstones")))

    def commits(self, tombstones: bool = False) -> int:
        return len(self._of(tombstones).metadata.metadata_log) + 1

    def fingerprint(self, tombstones: bool = False) -> Any:
        table = self._of(tombstones)
        return table.metadata_location, len(table.snapshots())

    def snapshots(self, suffix: str = "") -> int:
        return len(self.table(suffix).snapshots())

    def metadata(self) -> str:
        return str(self.table().metadata_location)

    def position(self, pipeline: str) -> int | None:
        properties = self.table().properties
        if batch_property(pipeline) not in properties:
            return None
        assert properties[pipeline_property(pipeline)] == pipeline
        return int(properties[batch_property(pipeline)])


HARNESSES: dict[str, type[LakeHarness]] = {"delta": DeltaHarness, "iceberg": IcebergHarness}


def location(root: Path) -> str:
    return f"iceberg+file://{root}"


def start_of(row: dict[str, Any]) -> tuple[Any, ...]:
    start = row.get("__START_AT")
    return () if start is None else tuple(start.values()) if isinstance(start, dict) else (start,)


def seq(lsn: int) -> dict[str, int]:
    return {"__commit_lsn": lsn, "__lsn": lsn + 1, "__ordinal": 0}


def data(rows: list[dict[str, Any]], *names: str) -> list[tuple[Any, ...]]:
    return [tuple(r[n] for n in names) for r in rows]


def open_counts(rows: list[dict[str, Any]]) -> dict[int, int]:
    """SCD2: per key, how many of its versions are open."""
    counts: dict[int, int] = {}
    for r in rows:
        counts[r["id"]] = counts.get(r["id"], 0) + (r["__END_AT"] is None)
    return counts


_PG_ARROW = {"bigint": pa.int64(), "integer": pa.int32(), "text": pa.string(), "bigint[]": SEQ_TYPE}


class PostgresHarness(LakeHarness):
    """The same interface over a PostgreSQL target: the table lives in its own ``schema`` of the
    session cluster (``url``); a sequence of several columns is stored as ``bigint[]`` and read
    back as the struct the lake formats store. PostgreSQL commits a batch in one transaction, so
    "nothing written" is checked on the rows' ``xmin``."""

    write_methods = {1: "_apply_segment", 2: "_apply_segment"}
    target_class = PostgresTarget
    failure_where = "in "
    seq_type = SEQ_TYPE

    def __init__(self, root: Path, spec: ApplySpec, columns: list[TargetColumn] = COLUMNS,
                 sequence: list[TargetColumn] = SEQ_COLUMNS, target: Any | None = None, policy: EvolutionPolicy | None = None,
                 *, url: str, schema: str) -> None:
        self.url = url
        self.conn = psycopg.connect(url, autocommit=True)
        super().__init__(root, replace(spec, target=f"{schema}.{spec.qualified_table.rpartition('.')[2]}"), columns, sequence,
                         target, policy)

    def open(self, root: Path) -> ApplyTarget:
        return target_for(self.url)

    def close(self) -> None:
        self.target.close()
        self.conn.close()

    def _name(self, tombstones: bool) -> str:
        return f'"{self.schema_name}"."{self.name}{"__sparkcdc_tombstones" if tombstones else ""}"'

    def stored(self, tombstones: bool = False) -> list[dict[str, Any]]:
        with self.conn.cursor(row_factory=dict_row) as cur:
            rows = cur.execute(f"SELECT * FROM {self._name(tombstones)}").fetchall()
        names = list(self.resolved.sequence)
        for row in rows:
            for column in ("__START_AT", "__END_AT", "__SEQUENCE"):
                if isinstance(row.get(column), list):
                    row[column] = dict(zip(names, row[column], strict=True))
        return rows

    def schema(self, tombstones: bool = False) -> pa.Schema:
        with self.conn.cursor() as cur:
            cur.execute(
                "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a WHERE a.attrelid = %s::regclass"
                " AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum", (self._name(tombstones),))
            return pa.schema([(name, _PG_ARROW[type_]) for name, type_ in cur.fetchall()])

    def fingerprint(self, tombstones: bool = False) -> Any:
        with self.conn.cursor() as cur:
            cur.execute(f"SELECT xmin::text FROM {self._name(tombstones)} ORDER BY 1")
            return [row[0] for row in cur.fetchall()]

    def position(self, pipeline: str) -> int | None:
        with self.conn.cursor() as cur:
            cur.execute("SELECT batch_id FROM sparkcdc.apply_positions WHERE pipeline_id = %s AND target = %s",
                        (pipeline, self.resolved.target))
            row = cur.fetchone()
        return None if row is None else int(row[0])
