"""A PostgreSQL database as the apply target: executors COPY into a staging table, the driver MERGEs.

Staging: each target table has an UNLOGGED table ``sparkcdc."<table>__stage_<hash of its layout>"``
(created by ``prepare``): the pipeline (a hash of its id), the batch, the tag of the task attempt
that staged the row, the row's segment, whether it is a tombstone, then the data columns (typed as
the target's), ``__sparkcdc_delete`` / ``__sparkcdc_unchanged`` (SCD1) or ``__START_AT`` /
``__END_AT`` (SCD2), and ``__SEQUENCE`` (tombstones). Executors fill it by COPY in parallel, each
partition of a batch under a tag of its own (:mod:`.pg_copy`: CSV rendered by pyarrow).

Commit: everything a batch does to a table (its segments, its tombstones, its position in
``sparkcdc.apply_positions``, and the removal of its staged rows) commits in one transaction, under
an advisory lock on (pipeline, table): per segment the truncate, one MERGE from the staged rows of
the tags the driver collected, the image's removal of the keys no partition staged; then the
tombstones and the position. An image (one segment, no truncate) into a table that holds no row
(checked under a lock that keeps other writers out until the commit) is one INSERT of the staged
rows instead: no MERGE, nothing to remove. A replayed batch finds its position recorded and changes nothing; a
crash before COMMIT leaves no trace but staged rows, which the pipeline's next commit of the table
removes (every row of its batches up to the one it commits, whatever their tag).

Tables are created from the source's own column types, keyed like the source (SCD2: keys plus
``__START_AT``). Deletes are remembered in ``<table>__sparkcdc_tombstones`` (key columns,
``__SEQUENCE``, ``__DELETED_AT``) for ``tombstone_retention``.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import psycopg
import pyarrow as pa
import pyarrow.compute as pc
from psycopg import sql
from psycopg.types.json import Jsonb

from ...postgres.connections import ConnectionSettingError, connect
from ...secrets import redact_conninfo
from ..errors import TargetError
from ..evolution import (
    SAME,
    UNSAFE,
    WIDER,
    AddColumn,
    DropNotNull,
    Evolution,
    EvolutionPolicy,
    Operation,
    RenameColumn,
    SetNotNull,
    StoredColumn,
    WidenColumn,
    plan_evolution,
)
from ..fold import END_AT, START_AT, Key
from ..spec import ResolvedSpec
from ..staged import DELETE, SEGMENT, UNCHANGED, Folded, StagedBatch, StagedPart, pipeline_hash
from ..target_column import TargetColumn
from .base import Keys, already_applied
from .pg_copy import copy_table, int_list_column
from .pg_vectors import vector_kind, vector_text
from .prepared_tables import PreparedTables
from .table_names import DELETED_AT, SEQUENCE, TOMBSTONE_SUFFIX, split_target

__all__ = ["PostgresTarget", "pg_type_verdict"]


#: How a connection refused for a setting names it: the part of the target's URL that sets it.
_URL_PARAMETERS = {"host": "the host in the apply target's URL", "port": "the port in the apply target's URL",
                   "user": "the user in the apply target's URL", "password": "the password in the apply target's URL",
                   "dbname": "the database in the apply target's URL",
                   **{k: f"{k} (a parameter of the apply target's URL)" for k in ("sslmode", "sslrootcert", "sslcert", "sslkey", "sslpassword")}}
POSITIONS = sql.SQL("sparkcdc.apply_positions")
#: Per target table: the source table it mirrors, its relation id and key, and each column's source
#: identity (``attnum``), which tells a renamed source column from a new one (see ..evolution).
IDENTITIES = sql.SQL("sparkcdc.apply_identities")
#: A batch that staged at least this many rows empties the staging with TRUNCATE (when nothing else
#: is staged there) instead of deleting its rows: see ``PostgresTarget._truncate_stage``. Below it a
#: DELETE is cheap and needs no exclusive lock on the staging table.
TRUNCATE_STAGING_ROWS = 100_000
# The staging table's own columns, before the data columns.
PIPELINE = "__sparkcdc_pipeline"
BATCH = "__sparkcdc_batch"
TAG = "__sparkcdc_tag"
TOMBSTONE = "__sparkcdc_tombstone"

_ARROW_TO_PG: dict[pa.DataType, str] = {
    pa.bool_(): "boolean", pa.int8(): "smallint", pa.int16(): "smallint", pa.int32(): "integer", pa.int64(): "bigint",
    pa.float32(): "real", pa.float64(): "double precision", pa.string(): "text", pa.large_string(): "text",
    pa.binary(): "bytea", pa.large_binary(): "bytea", pa.date32(): "date",
}


class _Table:
    """What the target knows of one target table."""

    def __init__(self, spec: ResolvedSpec, columns: Sequence[TargetColumn], sequence: Sequence[TargetColumn]) -> None:
        self.schema, self.name = split_target(spec.target)
        self.ident = sql.Identifier(self.schema, self.name)
        self.tombstones = sql.Identifier(self.schema, self.name + TOMBSTONE_SUFFIX)
        self.spec = spec
        self.columns = list(columns)
        self.sequence = list(sequence)
        self.keys = [c for c in columns if c.name in spec.keys]
        self.sequence_type = _sequence_type(spec, sequence)
        self.stage = sql.Identifier("sparkcdc", _stage_name(self))
        #: NOT NULL the source set since: set by the next commit, after its rows are in (see ..evolution).
        self.tighten: tuple[SetNotNull, ...] = ()


class PostgresTarget(PreparedTables[_Table]):
    """Tables of one PostgreSQL database (a ``postgresql://`` URL)."""

    def __init__(self, url: str, *, connect_timeout: int = 10) -> None:
        super().__init__()
        self.url = self.location = url
        self.connect_timeout = connect_timeout
        self.description = redact_conninfo(url)
        try:
            self.conn = connect(url, _URL_PARAMETERS, autocommit=False, connect_timeout=connect_timeout,
                                application_name="sparkcdc-apply")
        except (psycopg.Error, ConnectionSettingError) as exc:  # scrubbed of the URL's passwords by connect
            raise TargetError(f"cannot connect to the apply target {self.description}: {exc}".strip()) from None
        self._temp = itertools.count()

    def close(self) -> None:
        self.conn.close()

    def open_options(self) -> dict[str, Any]:
        return {"connect_timeout": self.connect_timeout}

    # -- set-up ---------------------------------------------------------------------------------

    def attach(self, spec: ResolvedSpec, columns: Sequence[TargetColumn], sequence: Sequence[TargetColumn]) -> None:
        self._register(spec, _Table(spec, columns, sequence), columns, sequence)

    def prepare(self, spec: ResolvedSpec, columns: Sequence[TargetColumn], sequence: Sequence[TargetColumn],
                policy: EvolutionPolicy | None = None, *, relation_id: int = 0) -> Evolution:
        """Create the target table, or bring it to the source's shape (:mod:`..evolution`: added,
        renamed, widened columns, NOT NULL relaxed, dropped ones kept or dropped), with its
        tombstone and staging tables and the identity it records, in one transaction."""
        policy = policy or EvolutionPolicy()
        with self.conn.transaction(), self.conn.cursor() as cur:
            _check_vector_columns(cur, spec, columns)
            cur.execute("CREATE SCHEMA IF NOT EXISTS sparkcdc")
            cur.execute(sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} (pipeline_id text NOT NULL, target text NOT NULL, batch_id bigint NOT NULL, "
                "applied_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (pipeline_id, target))"
            ).format(POSITIONS))
            cur.execute(sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} (target text PRIMARY KEY, source text NOT NULL, relation bigint NOT NULL, "
                "keys text[] NOT NULL, columns jsonb NOT NULL, evolved_at timestamptz NOT NULL DEFAULT now())"
            ).format(IDENTITIES))
            schema, name = split_target(spec.target)
            cur.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
            cur.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 1))", (spec.target,))  # one evolution at a time
            existing = self._existing_columns(cur, schema, name)
            relation = relation_id
            if existing:
                evolution = self._evolve(cur, spec, columns, existing, relation, policy)
            else:
                created = [c for c in columns if not (c.dropped and policy.dropped_columns == "drop")]
                evolution = Evolution((), tuple(created), {c.name: c.attnum for c in created})
                cur.execute(self._create_table_sql(_Table(spec, created, sequence)))
            table = _Table(spec, evolution.columns, sequence)
            table.tighten = evolution.tighten
            cur.execute(sql.SQL(
                "INSERT INTO {} (target, source, relation, keys, columns) VALUES (%s, %s, %s, %s, %s) ON CONFLICT (target) "
                "DO UPDATE SET source = EXCLUDED.source, relation = EXCLUDED.relation, keys = EXCLUDED.keys, "
                "columns = EXCLUDED.columns, evolved_at = now()"
            ).format(IDENTITIES), (spec.target, spec.spec.qualified_table, relation, list(spec.keys), Jsonb(dict(evolution.identity))))
            key_defs = [sql.SQL("{} {} NOT NULL").format(sql.Identifier(c.name), sql.SQL(_pg_type(c))) for c in table.keys]
            cur.execute(sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} ({}, {} {} NOT NULL, {} timestamptz NOT NULL DEFAULT now(), PRIMARY KEY ({}))"
            ).format(
                table.tombstones, sql.SQL(", ").join(key_defs), sql.Identifier(SEQUENCE), sql.SQL(table.sequence_type),
                sql.Identifier(DELETED_AT), sql.SQL(", ").join(sql.Identifier(c.name) for c in table.keys),
            ))
            cur.execute(self._create_stage_sql(table))
            cur.execute(sql.SQL("COMMENT ON TABLE {} IS {}").format(
                table.stage, sql.Literal(f"sparkcdc: rows staged for {spec.target} (stored_as_scd_type={spec.scd_type})")))
        self._register(spec, table, evolution.columns, sequence)
        return evolution

    def _evolve(self, cur: psycopg.Cursor[Any], spec: ResolvedSpec, columns: Sequence[TargetColumn],
                existing: dict[str, tuple[str, bool]], relation: int, policy: EvolutionPolicy) -> Evolution:
        """Plan and carry out the changes that bring an existing target table to ``columns``."""
        cur.execute(sql.SQL("SELECT relation, keys, columns FROM {} WHERE target = %s").format(IDENTITIES), (spec.target,))
        recorded = cur.fetchone()
        identity: dict[str, int] = dict(recorded[2]) if recorded else {}
        stored = [StoredColumn(name, pg_type, nullable, int(identity.get(name, 0))) for name, (pg_type, nullable) in existing.items()
                  if name not in (START_AT, END_AT)]
        if spec.scd_type == 2 and not {START_AT, END_AT} <= set(existing):
            raise TargetError(f"target table {spec.target} in {self.description} exists without {START_AT}/{END_AT}: it is not "
                              "an SCD2 history (stored_as_scd_type=2)")
        same_relation = recorded is None or not relation or int(recorded[0]) in (0, relation)
        evolution = plan_evolution(
            spec.target, spec.spec.qualified_table, stored, columns, spec.keys, policy, _PG_TYPES,
            tighten=spec.scd_type == 1, same_relation=same_relation, stored_keys=list(recorded[1]) if recorded else None,
            continue_hint=lambda column: (f"alter the mirror column yourself (ALTER TABLE {spec.target} ALTER COLUMN {column} "
                                          f"TYPE <the source's type>) in {self.description}"),
        )
        ident = sql.Identifier(*split_target(spec.target))
        for operation in evolution.operations:
            cur.execute(_alter_sql(ident, operation))
            if isinstance(operation, AddColumn) and operation.column.fill is not None:
                # The value PostgreSQL gave the source's older rows, given to the mirror's the same way
                # (a default, which the table keeps for the rows it holds), then dropped: later rows
                # carry their own values.
                cur.execute(sql.SQL("ALTER TABLE {} ALTER COLUMN {} DROP DEFAULT").format(ident, sql.Identifier(operation.column.name)))
            if isinstance(operation, WidenColumn) and operation.name in spec.keys:
                # The tombstones are keyed like the table: a widened key is widened there too.
                schema, name = split_target(spec.target)
                cur.execute("SELECT to_regclass(%s) IS NOT NULL", (sql.Identifier(schema, name + TOMBSTONE_SUFFIX).as_string(cur),))
                row = cur.fetchone()
                if row and row[0]:
                    cur.execute(_alter_sql(sql.Identifier(schema, name + TOMBSTONE_SUFFIX), operation))
        evolution.report(spec.target, f"in {self.description}", spec.spec.qualified_table)
        return evolution

    def _create_stage_sql(self, table: _Table) -> sql.Composed:
        """The staging table: unlogged (a crash loses only what the replay stages again), its data
        columns typed as the target table's."""
        seq = sql.SQL(table.sequence_type)
        head = [
            sql.SQL("NULL::text AS {}").format(sql.Identifier(PIPELINE)), sql.SQL("NULL::bigint AS {}").format(sql.Identifier(BATCH)),
            sql.SQL("NULL::text AS {}").format(sql.Identifier(TAG)), sql.SQL("NULL::integer AS {}").format(sql.Identifier(SEGMENT)),
            sql.SQL("NULL::boolean AS {}").format(sql.Identifier(TOMBSTONE)),
        ]
        data = [sql.SQL("t.{}").format(sql.Identifier(c.name)) for c in table.columns]
        if table.spec.scd_type == 1:
            tail = [sql.SQL("NULL::boolean AS {}").format(sql.Identifier(DELETE)), sql.SQL("NULL::text[] AS {}").format(sql.Identifier(UNCHANGED))]
        else:
            tail = [sql.SQL("NULL::{} AS {}").format(seq, sql.Identifier(name)) for name in (START_AT, END_AT)]
        tail.append(sql.SQL("NULL::{} AS {}").format(seq, sql.Identifier(SEQUENCE)))
        return sql.SQL("CREATE UNLOGGED TABLE IF NOT EXISTS {} AS SELECT {} FROM {} t WITH NO DATA").format(
            table.stage, sql.SQL(", ").join([*head, *data, *tail]), table.ident)

    def _create_table_sql(self, table: _Table) -> sql.Composed:
        definitions = [
            sql.SQL("{} {}{}").format(
                sql.Identifier(c.name), sql.SQL(_pg_type(c)),
                sql.SQL(" NOT NULL" if c.name in table.spec.keys or not c.nullable else ""),
            )
            for c in table.columns
        ]
        primary = [sql.Identifier(k) for k in table.spec.keys]
        if table.spec.scd_type == 2:
            definitions.append(sql.SQL("{} {} NOT NULL").format(sql.Identifier(START_AT), sql.SQL(table.sequence_type)))
            definitions.append(sql.SQL("{} {}").format(sql.Identifier(END_AT), sql.SQL(table.sequence_type)))
            primary.append(sql.Identifier(START_AT))
        definitions.append(sql.SQL("PRIMARY KEY ({})").format(sql.SQL(", ").join(primary)))
        return sql.SQL("CREATE TABLE {} ({})").format(table.ident, sql.SQL(", ").join(definitions))

    @staticmethod
    def _existing_columns(cur: psycopg.Cursor[Any], schema: str, name: str) -> dict[str, tuple[str, bool]]:
        """The target table's columns in order: name -> (its type as ``format_type`` writes it, nullable)."""
        cur.execute(
            "SELECT a.attname, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull FROM pg_attribute a"
            " JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = %s AND c.relname = %s AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
            (schema, name),
        )
        return {row[0]: (row[1], row[2]) for row in cur.fetchall()}

    # -- reads ----------------------------------------------------------------------------------

    def applied_batch(self, spec: ResolvedSpec, pipeline_id: str) -> int | None:
        with self.conn.transaction(), self.conn.cursor() as cur:
            cur.execute("SELECT to_regclass('sparkcdc.apply_positions') IS NOT NULL")
            row = cur.fetchone()
            if not row or not row[0]:
                return None  # nothing was ever applied to this database
            cur.execute(sql.SQL("SELECT batch_id FROM {} WHERE pipeline_id = %s AND target = %s").format(POSITIONS),
                        (pipeline_id, spec.target))
            row = cur.fetchone()
        return None if row is None else int(row[0])

    def tombstones(self, spec: ResolvedSpec, keys: Keys) -> dict[Key, tuple[Any, ...]]:
        table = self._table(spec)
        with self.conn.transaction(), self.conn.cursor() as cur:
            cur.execute(sql.SQL("SELECT EXISTS (SELECT 1 FROM {})").format(table.tombstones))
            row = cur.fetchone()
            if not row or not row[0]:
                return {}
            found = self._join_keys(
                cur, table, keys, table.tombstones, [sql.Identifier(SEQUENCE)],
                sql.SQL("t.{} > now() - %s").format(sql.Identifier(DELETED_AT)), (spec.spec.tombstone_retention,),
            )
        return {key: _sequence_from_pg(values[0], table) for key, values in found.items()}

    def open_versions(self, spec: ResolvedSpec, keys: Keys) -> dict[Key, tuple[list[Any], tuple[Any, ...]]]:
        table = self._table(spec)
        selected = [sql.Identifier(c.name) for c in table.columns] + [sql.Identifier(START_AT)]
        with self.conn.transaction(), self.conn.cursor() as cur:
            found = self._join_keys(cur, table, keys, table.ident, selected, sql.SQL("t.{} IS NULL").format(sql.Identifier(END_AT)), ())
        return {key: (list(values[:-1]), _sequence_from_pg(values[-1], table)) for key, values in found.items()}

    def stored_rows(self, spec: ResolvedSpec, keys: Keys) -> dict[Key, list[Any]]:
        table = self._table(spec)
        keys = keys if isinstance(keys, pa.Table) else list(keys)
        if not len(keys):
            return {}
        selected = [sql.Identifier(c.name) for c in table.columns]
        with self.conn.transaction(), self.conn.cursor() as cur:
            found = self._join_keys(cur, table, keys, table.ident, selected, sql.SQL("TRUE"), ())
        return {key: list(values) for key, values in found.items()}

    def _join_keys(
        self, cur: psycopg.Cursor[Any], table: _Table, keys: Keys, source: sql.Composable,
        selected: list[sql.Identifier], condition: sql.Composable, params: tuple[Any, ...],
    ) -> dict[Key, tuple[Any, ...]]:
        """Rows of ``source`` for those keys: the keys go in by COPY, then one join."""
        lookup = sql.Identifier(f"sparkcdc_keys_{next(self._temp)}")
        key_names = [sql.Identifier(c.name) for c in table.keys]
        cur.execute(sql.SQL("CREATE TEMP TABLE {} ON COMMIT DROP AS SELECT {} FROM {} WITH NO DATA").format(
            lookup, sql.SQL(", ").join(key_names), table.ident))
        if isinstance(keys, pa.Table):
            cur.execute("SET LOCAL TIME ZONE 'UTC'")
            copy_table(cur, lookup, keys.select([c.name for c in table.keys]))
        else:
            with cur.copy(sql.SQL("COPY {} FROM STDIN").format(lookup)) as copy:
                for key in keys:
                    copy.write_row(list(key))
        join = sql.SQL(" AND ").join(sql.SQL("t.{0} = k.{0}").format(k) for k in key_names)
        cur.execute(sql.SQL("SELECT {}, {} FROM {} t JOIN {} k ON {} WHERE {}").format(
            sql.SQL(", ").join(sql.SQL("t.{}").format(k) for k in key_names),
            sql.SQL(", ").join(sql.SQL("t.{}").format(c) for c in selected), source, lookup, join, condition,
        ), params)
        width = len(key_names)
        return {tuple(row[:width]): tuple(row[width:]) for row in cur.fetchall()}

    # -- staging --------------------------------------------------------------------------------------

    def stage(self, folded: Folded, *, pipeline_id: str, batch_id: int, tag: str) -> StagedPart:
        """COPY the fold's rows and tombstones into the table's staging table under ``tag``."""
        spec = folded.spec
        table = self._table(spec)
        constants = [(PIPELINE, pipeline_hash(pipeline_id)), (BATCH, batch_id), (TAG, tag)]
        try:
            with self.conn.transaction(), self.conn.cursor() as cur:
                cur.execute("SET LOCAL TIME ZONE 'UTC'")  # timestamps with a zone go as UTC wall time (see pg_copy)
                if folded.rows.num_rows:
                    rows = folded.rows
                    data = {SEGMENT: rows.column(SEGMENT), TOMBSTONE: pa.array(np.zeros(rows.num_rows, dtype=bool))}
                    data |= {c.name: _staged_column(rows.column(c.name), c) for c in table.columns}
                    if spec.scd_type == 1:
                        data |= {DELETE: rows.column(DELETE), UNCHANGED: rows.column(UNCHANGED)}
                    else:
                        data |= {name: _staged_sequence(rows.column(name), table) for name in (START_AT, END_AT)}
                    copy_table(cur, table.stage, pa.table(data), constants)
                if folded.tombstones.num_rows:
                    tombs = folded.tombstones
                    data = {SEGMENT: pa.array(np.zeros(tombs.num_rows, dtype=np.int32)), TOMBSTONE: pa.array(np.ones(tombs.num_rows, dtype=bool))}
                    data |= {c.name: _staged_column(tombs.column(c.name), c) for c in table.keys}
                    data[SEQUENCE] = _staged_sequence(tombs.column(SEQUENCE), table)
                    copy_table(cur, table.stage, pa.table(data), constants)
        except psycopg.OperationalError:
            raise  # the server went away: as the reads, a failure a restart may cure (sparkcdc.spark.restarts)
        except psycopg.Error as exc:
            raise TargetError(f"staging batch {batch_id} of {spec.target} in {self.description} failed: {exc}".strip()) from exc
        return StagedPart.of(folded, tag)

    def _staged(self, table: _Table, staged: StagedBatch, names: Sequence[str], *, segment: int | None = None) -> sql.Composed:
        """The staged rows of the batch's collected tags (of ``segment``; else its tombstones) as a subquery."""
        kind = sql.SQL("NOT {} AND {} = {}").format(sql.Identifier(TOMBSTONE), sql.Identifier(SEGMENT), sql.Literal(segment))
        if segment is None:
            kind = sql.SQL("{}").format(sql.Identifier(TOMBSTONE))
        return sql.SQL("(SELECT {} FROM {} WHERE {} IN ({}) AND {})").format(
            sql.SQL(", ").join(sql.Identifier(name) for name in names), table.stage, sql.Identifier(TAG),
            sql.SQL(", ").join(sql.Literal(tag) for tag in staged.tags), kind,
        )

    def _unstage(self, cur: psycopg.Cursor[Any], table: _Table, pipeline_id: str, batch_id: int) -> None:
        """Remove the pipeline's staged rows of this table up to ``batch_id``, whatever their tag."""
        cur.execute(sql.SQL("DELETE FROM {} WHERE {} = %s AND {} <= %s").format(
            table.stage, sql.Identifier(PIPELINE), sql.Identifier(BATCH)), (pipeline_hash(pipeline_id), batch_id))

    def _truncate_stage(self, cur: psycopg.Cursor[Any], table: _Table, pipeline_id: str, batch_id: int) -> bool:
        """Empty the staging table with TRUNCATE when it holds nothing but the pipeline's rows up to
        ``batch_id`` (what :meth:`_unstage` would delete); whether it did. The caller holds the
        table's ACCESS EXCLUSIVE lock, so no COPY is under way and every staged row is visible.

        Why: after a big batch (an initial snapshot's image) a DELETE costs a scan and a dead tuple per
        row (0.3-0.4 s per 1,000,000 rows measured, before the vacuum), and until autovacuum
        comes the next batches' staging is read through them; TRUNCATE frees the table at once."""
        cur.execute(sql.SQL("SELECT EXISTS (SELECT 1 FROM {} WHERE {} <> %s OR {} > %s)").format(
            table.stage, sql.Identifier(PIPELINE), sql.Identifier(BATCH)), (pipeline_hash(pipeline_id), batch_id))
        row = cur.fetchone()
        if row is None or row[0]:
            return False
        cur.execute(sql.SQL("TRUNCATE {}").format(table.stage))
        return True

    # -- the commit -------------------------------------------------------------------------------------

    def commit(self, staged: StagedBatch, *, pipeline_id: str, batch_id: int) -> bool:
        table = self._table(staged.spec)
        target = staged.spec.target
        try:
            with self.conn.transaction(), self.conn.cursor() as cur:
                cur.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"{pipeline_id}\x1f{target}",))
                cur.execute(sql.SQL("SELECT batch_id FROM {} WHERE pipeline_id = %s AND target = %s").format(POSITIONS),
                            (pipeline_id, target))
                row = cur.fetchone()
                if already_applied(None if row is None else int(row[0]), batch_id, image=staged.is_image):
                    self._unstage(cur, table, pipeline_id, batch_id)
                    return False
                emptied = staged.rows + staged.tombstones >= TRUNCATE_STAGING_ROWS
                if emptied:  # before the staged rows are read: a later upgrade could deadlock with another commit
                    cur.execute(sql.SQL("LOCK TABLE {} IN ACCESS EXCLUSIVE MODE").format(table.stage))
                if self._into_empty(cur, table, staged):
                    self._insert_image(cur, table, staged)
                else:
                    for segment in range(len(staged.segments)):
                        self._apply_segment(cur, table, staged, segment)
                pending = self._tighten(cur, table)
                if staged.tombstones:
                    self._record_tombstones(cur, table, self._staged(table, staged, [c.name for c in table.keys] + [SEQUENCE]))
                cur.execute(sql.SQL(
                    "INSERT INTO {} (pipeline_id, target, batch_id) VALUES (%s, %s, %s) ON CONFLICT (pipeline_id, target) "
                    "DO UPDATE SET batch_id = EXCLUDED.batch_id, applied_at = now()"
                ).format(POSITIONS), (pipeline_id, target, batch_id))
                if not (emptied and self._truncate_stage(cur, table, pipeline_id, batch_id)):
                    self._unstage(cur, table, pipeline_id, batch_id)
        except psycopg.Error as exc:
            raise TargetError(f"applying batch {batch_id} to {target} in {self.description} failed: {exc}".strip()) from exc
        table.tighten = pending
        return True

    def _tighten(self, cur: psycopg.Cursor[Any], table: _Table) -> tuple[SetNotNull, ...]:
        """Set the NOT NULL the source set since, each in a savepoint of the commit; those the
        mirror's rows do not allow yet stay pending for the next commit. Why: NOT NULL comes from the
        catalog as it is when the stream reads a table's Relation message, which may be after the
        rows of the batch (the stream runs behind): the rows that make the column non-null come in
        a later batch."""
        pending = []
        for tightened in table.tighten:
            try:
                with self.conn.transaction():
                    cur.execute(_alter_sql(table.ident, tightened))
            except psycopg.errors.NotNullViolation:
                pending.append(tightened)
        return tuple(pending)

    @staticmethod
    def _into_empty(cur: psycopg.Cursor[Any], table: _Table, staged: StagedBatch) -> bool:
        """Whether the batch is an image (one segment, no truncate) of a table that holds no row:
        then its staged rows are the table, inserted as they are (no MERGE, no removal of absent
        keys). The table is locked against other writers first (readers go on), so that it is still
        empty when the rows go in; the lock ends with the commit."""
        if len(staged.segments) != 1 or staged.segments[0].replace_at is None or staged.segments[0].truncate_at is not None:
            return False
        cur.execute(sql.SQL("LOCK TABLE {} IN SHARE ROW EXCLUSIVE MODE").format(table.ident))
        cur.execute(sql.SQL("SELECT NOT EXISTS (SELECT 1 FROM {})").format(table.ident))
        row = cur.fetchone()
        return bool(row and row[0])

    def _insert_image(self, cur: psycopg.Cursor[Any], table: _Table, staged: StagedBatch) -> None:
        """An image into an empty table: one INSERT of its staged rows (SCD1 without its deletes:
        rows an ``apply_as_deletes`` condition marked; SCD2 every version the fold made)."""
        if not staged.rows_in(0):
            return
        names = [c.name for c in table.columns] + ([START_AT, END_AT] if table.spec.scd_type == 2 else [])
        source = self._staged(table, staged, [*names, DELETE] if table.spec.scd_type == 1 else names, segment=0)
        kept = sql.SQL(" WHERE NOT s.{}").format(sql.Identifier(DELETE)) if table.spec.scd_type == 1 else sql.SQL("")
        columns = sql.SQL(", ").join(sql.Identifier(name) for name in names)
        cur.execute(sql.SQL("INSERT INTO {} ({}) SELECT {} FROM {} s{}").format(
            table.ident, columns, sql.SQL(", ").join(sql.SQL("s.{}").format(sql.Identifier(n)) for n in names), source, kept))

    def _apply_segment(self, cur: psycopg.Cursor[Any], table: _Table, staged: StagedBatch, segment: int) -> None:
        bounds = staged.segments[segment]
        if bounds.truncate_at is not None:
            self._remove(cur, table, bounds.truncate_at, absent_from=None)
        source = None
        if staged.rows_in(segment):
            data = [c.name for c in table.columns]
            if table.spec.scd_type == 1:
                source = self._staged(table, staged, [*data, DELETE, UNCHANGED], segment=segment)
                self._merge_scd1(cur, table, source, set(staged.kept))
            else:
                source = self._staged(table, staged, [*data, START_AT, END_AT], segment=segment)
                self._merge_scd2(cur, table, source)
        if bounds.replace_at is not None:
            self._remove(cur, table, bounds.replace_at, absent_from=source)

    def _remove(self, cur: psycopg.Cursor[Any], table: _Table, at: tuple[Any, ...], absent_from: sql.Composable | None) -> None:
        """Delete the rows (SCD1) or close the open versions at ``at`` (SCD2) whose key the staged
        rows ``absent_from`` lack; every one when there are none (a truncate, an empty image)."""
        if absent_from is None:
            absent = sql.SQL("TRUE")
        else:
            absent = sql.SQL("NOT EXISTS (SELECT 1 FROM {} s WHERE {})").format(absent_from, sql.SQL(" AND ").join(
                sql.SQL("t.{0} = s.{0}").format(sql.Identifier(k.name)) for k in table.keys))
        if table.spec.scd_type == 1:
            cur.execute(sql.SQL("DELETE FROM {} t WHERE {}").format(table.ident, absent))
        else:
            cur.execute(sql.SQL("UPDATE {} t SET {} = %s WHERE t.{} IS NULL AND {}").format(
                table.ident, sql.Identifier(END_AT), sql.Identifier(END_AT), absent), (_sequence_to_pg(at, table),))

    def _merge_scd1(self, cur: psycopg.Cursor[Any], table: _Table, source: sql.Composable, kept_anywhere: set[str]) -> None:
        keys = [c.name for c in table.keys]
        on = sql.SQL(" AND ").join(sql.SQL("t.{0} = s.{0}").format(sql.Identifier(k)) for k in keys)
        others = [c.name for c in table.columns if c.name not in table.spec.keys]
        assignments = [
            sql.SQL("{0} = CASE WHEN {1} = ANY(s.{2}) THEN t.{0} ELSE s.{0} END").format(
                sql.Identifier(name), sql.Literal(name), sql.Identifier(UNCHANGED))
            if name in kept_anywhere else sql.SQL("{0} = s.{0}").format(sql.Identifier(name))
            for name in others
        ]
        all_names = [sql.Identifier(c.name) for c in table.columns]
        update = (sql.SQL(" WHEN MATCHED THEN UPDATE SET ") + sql.SQL(", ").join(assignments)) if assignments else sql.SQL("")
        cur.execute(sql.SQL(
            "MERGE INTO {table} t USING {source} s ON {on} WHEN MATCHED AND s.{delete} THEN DELETE{update}"
            " WHEN NOT MATCHED AND NOT s.{delete} THEN INSERT ({names}) VALUES ({values})"
        ).format(
            table=table.ident, source=source, on=on, delete=sql.Identifier(DELETE), update=update,
            names=sql.SQL(", ").join(all_names), values=sql.SQL(", ").join(sql.SQL("s.{}").format(n) for n in all_names),
        ))

    def _merge_scd2(self, cur: psycopg.Cursor[Any], table: _Table, source: sql.Composable) -> None:
        keys = [*table.spec.keys, START_AT]
        on = sql.SQL(" AND ").join(sql.SQL("t.{0} = s.{0}").format(sql.Identifier(k)) for k in keys)
        updated = [c.name for c in table.columns if c.name not in table.spec.keys] + [END_AT]
        all_names = [sql.Identifier(c.name) for c in table.columns] + [sql.Identifier(START_AT), sql.Identifier(END_AT)]
        cur.execute(sql.SQL(
            "MERGE INTO {table} t USING {source} s ON {on} WHEN MATCHED THEN UPDATE SET {set}"
            " WHEN NOT MATCHED THEN INSERT ({names}) VALUES ({values})"
        ).format(
            table=table.ident, source=source, on=on,
            set=sql.SQL(", ").join(sql.SQL("{0} = s.{0}").format(sql.Identifier(n)) for n in updated),
            names=sql.SQL(", ").join(all_names), values=sql.SQL(", ").join(sql.SQL("s.{}").format(n) for n in all_names),
        ))

    def _record_tombstones(self, cur: psycopg.Cursor[Any], table: _Table, source: sql.Composable) -> None:
        key_names = [sql.Identifier(c.name) for c in table.keys]
        cur.execute(sql.SQL(
            "INSERT INTO {tomb} AS t ({keys}, {seq}) SELECT {keys}, {seq} FROM {source} s ON CONFLICT ({keys}) DO UPDATE"
            " SET {seq} = EXCLUDED.{seq}, {at} = now() WHERE t.{seq} < EXCLUDED.{seq}"
        ).format(tomb=table.tombstones, keys=sql.SQL(", ").join(key_names), seq=sql.Identifier(SEQUENCE),
                 source=source, at=sql.Identifier(DELETED_AT)))
        cur.execute(sql.SQL("DELETE FROM {} WHERE {} < now() - %s").format(table.tombstones, sql.Identifier(DELETED_AT)),
                    (table.spec.spec.tombstone_retention,))


def _stage_name(table: _Table) -> str:
    """The staging table of a target table with this layout: named after the table (readable) and
    a hash of the layout (a pipeline with other columns stages elsewhere), within PostgreSQL's 63 bytes."""
    layout = repr((table.spec.target, table.spec.scd_type, [(c.name, _pg_type(c)) for c in table.columns], table.sequence_type))
    digest = hashlib.sha1(layout.encode("utf-8")).hexdigest()[:12]
    return table.name.encode("utf-8")[:40].decode("utf-8", errors="ignore") + f"__stage_{digest}"


def _staged_sequence(column: Any, table: _Table) -> Any:
    """A staged sequence (a struct of its fields) as the table stores it: one column's values, or
    the integer fields as an array (bigint[])."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if len(table.sequence) == 1:
        return pc.struct_field(column, 0)
    return int_list_column([pc.struct_field(column, i) for i in range(column.type.num_fields)], mask=column.is_null())


def _check_vector_columns(cur: psycopg.Cursor[Any], spec: ResolvedSpec, columns: Sequence[TargetColumn]) -> None:
    """pgvector columns need the extension in the target, and arrays of them are not mirrored."""
    kinds = {c.name: kind for c in columns if (kind := vector_kind(c.pg_type)) is not None}
    arrays = sorted(name for name, kind in kinds.items() if kind.endswith("[]"))
    if arrays:
        raise TargetError(f"{spec.target}: column(s) {', '.join(arrays)} are arrays of pgvector values, which sparkcdc "
                          "does not mirror into PostgreSQL (leave them out with column.exclude.list)")
    wanted = sorted(set(kinds.values()))
    if wanted:
        found = {row[0] for row in cur.execute("SELECT typname FROM pg_type WHERE typname = ANY(%s)", (wanted,)).fetchall()}
        missing = [name for name, kind in sorted(kinds.items()) if kind not in found]
        if missing:
            raise TargetError(f"{spec.target}: column(s) {', '.join(missing)} have pgvector types, but the target database has "
                              "no pgvector extension (CREATE EXTENSION vector there first)")


def _staged_column(column: Any, target: TargetColumn) -> Any:
    """A typed column as COPY reads it into the target's type (pgvector values as their text)."""
    kind = vector_kind(target.pg_type)
    return column if kind is None else vector_text(column, kind)


def _pg_type(column: TargetColumn) -> str:
    if column.pg_type:
        return column.pg_type
    return _arrow_pg_type(column.arrow_type, column.name)


def _arrow_pg_type(arrow_type: pa.DataType, name: str) -> str:
    if arrow_type in _ARROW_TO_PG:
        return _ARROW_TO_PG[arrow_type]
    if pa.types.is_decimal(arrow_type):
        return f"numeric({arrow_type.precision},{arrow_type.scale})"
    if pa.types.is_timestamp(arrow_type):
        return "timestamp with time zone" if arrow_type.tz else "timestamp without time zone"
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return _arrow_pg_type(arrow_type.value_type, name) + "[]"
    raise TargetError(f"column {name}: no PostgreSQL type for Arrow type {arrow_type}")


def _sequence_type(spec: ResolvedSpec, sequence: Sequence[TargetColumn]) -> str:
    """One sequence column keeps its type; several integer columns become ``bigint[]`` (arrays
    compare element by element, as sequences must)."""
    if len(sequence) == 1:
        return _pg_type(sequence[0])
    if all(pa.types.is_integer(c.arrow_type) for c in sequence):
        return "bigint[]"
    raise TargetError(
        f"sequence_by {list(spec.sequence)}: a PostgreSQL target stores a sequence of several columns only when all are integers"
    )


def _sequence_to_pg(sequence: tuple[Any, ...], table: _Table) -> Any:
    return sequence[0] if len(table.sequence) == 1 else list(sequence)


def _sequence_from_pg(value: Any, table: _Table) -> tuple[Any, ...]:
    return (value,) if len(table.sequence) == 1 else tuple(value)


def _alter_sql(table: sql.Identifier, operation: Operation) -> sql.Composed:
    """The ALTER TABLE statement of one evolution operation."""
    if isinstance(operation, AddColumn):
        column = operation.column
        default = sql.SQL("")
        if column.fill is not None:
            default = sql.SQL(" DEFAULT {}::{}").format(sql.Literal(column.fill), sql.SQL(_pg_type(column)))
        return sql.SQL("ALTER TABLE {} ADD COLUMN {} {}{}").format(table, sql.Identifier(column.name), sql.SQL(_pg_type(column)), default)
    if isinstance(operation, RenameColumn):
        return sql.SQL("ALTER TABLE {} RENAME COLUMN {} TO {}").format(table, sql.Identifier(operation.old), sql.Identifier(operation.new))
    if isinstance(operation, WidenColumn):
        name = sql.Identifier(operation.name)
        wanted = sql.SQL(_pg_type(operation.column))
        return sql.SQL("ALTER TABLE {} ALTER COLUMN {} TYPE {} USING {}::{}").format(table, name, wanted, name, wanted)
    if isinstance(operation, DropNotNull):
        return sql.SQL("ALTER TABLE {} ALTER COLUMN {} DROP NOT NULL").format(table, sql.Identifier(operation.name))
    if isinstance(operation, SetNotNull):
        return sql.SQL("ALTER TABLE {} ALTER COLUMN {} SET NOT NULL").format(table, sql.Identifier(operation.name))
    return sql.SQL("ALTER TABLE {} DROP COLUMN {}").format(table, sql.Identifier(operation.name))


class _PostgresTypes:
    """What a PostgreSQL mirror can widen a column to, by the types' text (``format_type``)."""

    def compare(self, stored: str, column: TargetColumn) -> str:
        return pg_type_verdict(stored, _pg_type(column))

    def name(self, stored: str) -> str:
        return stored

    def wanted(self, column: TargetColumn) -> str:
        return _pg_type(column)


_PG_TYPES = _PostgresTypes()
_INTEGERS = ("smallint", "integer", "bigint")
_VARCHAR = re.compile(r"character varying(?:\((\d+)\))?")
_NUMERIC = re.compile(r"numeric(?:\((\d+),(\d+)\))?")
_PRECISION = re.compile(r"(timestamp|time)(?:\((\d)\))? (with|without) time zone")


def pg_type_verdict(old: str, new: str) -> str:
    """Whether a mirror column of type ``old`` can become ``new`` keeping every value: the same
    type, a wider one (an integer of more bytes, ``real`` to ``double precision``, a longer or
    unbounded ``varchar``, ``text``, a ``numeric`` with more digits on both sides of the point or
    none, a time or timestamp of more fractional digits; arrays of such), or unsafe."""
    if old == new:
        return SAME
    if old.endswith("[]") and new.endswith("[]"):
        return pg_type_verdict(old[:-2], new[:-2])
    if old in _INTEGERS and new in _INTEGERS:
        return WIDER if _INTEGERS.index(new) > _INTEGERS.index(old) else UNSAFE
    if old == "real" and new == "double precision":
        return WIDER
    old_varchar, new_varchar = _VARCHAR.fullmatch(old), _VARCHAR.fullmatch(new)
    if old_varchar and (new == "text" or (new_varchar and (new_varchar[1] is None or (
            old_varchar[1] is not None and int(new_varchar[1]) >= int(old_varchar[1]))))):
        return WIDER
    if old == "text" and new == "character varying":
        return WIDER
    old_numeric, new_numeric = _NUMERIC.fullmatch(old), _NUMERIC.fullmatch(new)
    if old_numeric and new_numeric:
        if new_numeric[1] is None:
            return WIDER
        if old_numeric[1] is None:
            return UNSAFE
        old_p, old_s, new_p, new_s = int(old_numeric[1]), int(old_numeric[2]), int(new_numeric[1]), int(new_numeric[2])
        return WIDER if new_s >= old_s and new_p - new_s >= old_p - old_s else UNSAFE
    old_time, new_time = _PRECISION.fullmatch(old), _PRECISION.fullmatch(new)
    if old_time and new_time and old_time[1] == new_time[1] and old_time[3] == new_time[3]:
        return WIDER if int(new_time[2] or 6) >= int(old_time[2] or 6) else UNSAFE
    return UNSAFE
