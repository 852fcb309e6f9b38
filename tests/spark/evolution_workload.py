"""Source tables whose shape changes while a pipeline mirrors them, and checks that mirrors follow.

``<p>_a`` goes through every change of issue 27's list, with random row changes between them
(:class:`EvolvingWriter`); ``<p>_b`` is created mid-way (a new table matching the include list);
``<p>_c`` is dropped mid-way (pgoutput says nothing of it: its mirror stays as it was). Checks:
:func:`pg_mismatches` (a PostgreSQL mirror: every source column, its type and NOT NULL, and every
row), :func:`pg_history_mismatches` (an SCD2 history's open versions), :func:`lake_mismatches` (a
Delta or Iceberg mirror's rows, SCD1 or the open versions of SCD2).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

import psycopg

ROWS = 200


def tables(prefix: str) -> list[str]:
    return [f"public.{prefix}_{name}" for name in ("a", "b", "c")]


def include_list(prefix: str) -> str:
    return rf"public\.{prefix}_(a|b|c)"


def create(conn: psycopg.Connection, prefix: str) -> None:
    conn.execute(f"""
        CREATE TABLE {prefix}_a (id integer PRIMARY KEY, name varchar(10), qty integer NOT NULL, price numeric(10,2),
                                 ratio real, label varchar(10), note text, gone text);
        CREATE TABLE {prefix}_c (id integer PRIMARY KEY, v text);
        CREATE TABLE {prefix}_signal (id varchar(64) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048));
    """)
    rng = random.Random(5)
    with conn.cursor() as cur:
        cur.executemany(f"INSERT INTO {prefix}_a VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                        [(i, f"n{i}", i, Decimal(rng.randint(0, 10**6)) / 100, rng.random(), f"l{i % 7}",
                          None if i % 5 == 0 else f"note {i}", f"g{i}") for i in range(1, ROWS + 1)])
        cur.executemany(f"INSERT INTO {prefix}_c VALUES (%s, %s)", [(i, f"c{i}") for i in range(1, 21)])


class EvolvingWriter:
    """Random inserts, updates and deletes of ``<p>_a`` (and ``<p>_b`` once it exists) in small
    transactions, using the columns the table has at the time; :attr:`steps` are the shape
    changes, made in order by :meth:`run`, with row changes before and after each."""

    def __init__(self, conn: psycopg.Connection, prefix: str, seed: int = 11) -> None:
        self.conn = conn
        self.prefix = prefix
        self.rng = random.Random(seed)
        self.keys = {row[0] for row in conn.execute(f"SELECT id FROM {prefix}_a").fetchall()}
        self.b_keys: set[int] = set()
        self.next_key = 10_000
        self.name = "name"  # renamed to title
        self.extra: dict[str, Callable[[], Any]] = {}  # added columns the writer sets
        self.has_b = False
        self.steps: list[tuple[str, Callable[[], None]]] = [
            ("add a nullable column", lambda: self._ddl("ALTER TABLE {a} ADD COLUMN added_null integer", added_null=self._int)),
            ("add a column with a constant default",
             lambda: self._ddl("ALTER TABLE {a} ADD COLUMN added_const text NOT NULL DEFAULT 'dflt'", added_const=self._text)),
            ("add a column with a volatile default",
             lambda: self._ddl("ALTER TABLE {a} ADD COLUMN added_volatile double precision DEFAULT random()")),
            ("drop a column", lambda: self._ddl("ALTER TABLE {a} DROP COLUMN gone")),
            ("rename a column", self._rename),
            ("widen int to bigint", lambda: self._ddl("ALTER TABLE {a} ALTER COLUMN qty TYPE bigint")),
            ("widen varchar(10) to varchar(40)", lambda: self._ddl("ALTER TABLE {a} ALTER COLUMN label TYPE varchar(40)")),
            ("widen varchar(40) to text", lambda: self._ddl("ALTER TABLE {a} ALTER COLUMN label TYPE text")),
            ("widen numeric(10,2) to numeric(14,2)", lambda: self._ddl("ALTER TABLE {a} ALTER COLUMN price TYPE numeric(14,2)")),
            ("widen real to double precision", lambda: self._ddl("ALTER TABLE {a} ALTER COLUMN ratio TYPE double precision")),
            ("set NOT NULL", lambda: self._ddl("UPDATE {a} SET note = 'filled' WHERE note IS NULL; "
                                               "ALTER TABLE {a} ALTER COLUMN note SET NOT NULL")),
            ("a new table", self._new_table),
            ("drop NOT NULL", lambda: self._ddl("ALTER TABLE {a} ALTER COLUMN qty DROP NOT NULL")),
            ("drop a table", lambda: self._ddl("DROP TABLE {c}")),
            ("drop a column and add one of the same name",
             lambda: self._ddl("ALTER TABLE {a} DROP COLUMN added_null; ALTER TABLE {a} ADD COLUMN added_null text",
                               added_null=self._text)),
        ]

    # -- row changes -------------------------------------------------------------------------------------

    def _int(self) -> int:
        return self.rng.randint(0, 1000)

    def _text(self) -> str:
        return f"t{self.rng.randint(0, 1000)}"

    def changes(self, count: int) -> None:
        """``count`` random row changes, in transactions of a few."""
        done = 0
        while done < count:
            with self.conn.transaction():
                for _ in range(min(5, count - done)):
                    done += 1
                    self._change()

    def _change(self) -> None:
        a = f"{self.prefix}_a"
        roll = self.rng.random()
        if self.has_b and roll < 0.15:
            self._change_b()
            return
        if roll < 0.35 or not self.keys:
            self.next_key += 1
            extra = {name: make() for name, make in self.extra.items()}
            names = ["id", self.name, "qty", "price", "ratio", "label", "note", *extra]
            values = [self.next_key, f"i{self.next_key % 1000}", self._int(), Decimal(self.rng.randint(0, 10**6)) / 100,
                      self.rng.random(), f"L{self.rng.randint(0, 9)}", f"note {self.next_key}", *extra.values()]
            self.conn.execute(f"INSERT INTO {a} ({', '.join(names)}) VALUES ({', '.join(['%s'] * len(names))})", values)
            self.keys.add(self.next_key)
        elif roll < 0.85:
            key = self.rng.choice(sorted(self.keys))
            sets = {"qty": self._int(), "price": Decimal(self.rng.randint(0, 10**6)) / 100, self.name: f"u{self._int()}"}
            if self.extra and self.rng.random() < 0.5:
                name = self.rng.choice(sorted(self.extra))
                sets[name] = self.extra[name]()
            assignments = ", ".join(f"{name} = %s" for name in sets)
            self.conn.execute(f"UPDATE {a} SET {assignments} WHERE id = %s", [*sets.values(), key])
        else:
            key = self.rng.choice(sorted(self.keys))
            self.conn.execute(f"DELETE FROM {a} WHERE id = %s", (key,))
            self.keys.discard(key)

    def _change_b(self) -> None:
        b = f"{self.prefix}_b"
        if self.rng.random() < 0.6 or not self.b_keys:
            self.next_key += 1
            self.conn.execute(f"INSERT INTO {b} VALUES (%s, %s, now())", (self.next_key, f"b{self.next_key}"))
            self.b_keys.add(self.next_key)
        else:
            key = self.rng.choice(sorted(self.b_keys))
            self.conn.execute(f"UPDATE {b} SET word = word || '+' WHERE id = %s", (key,))

    # -- shape changes ---------------------------------------------------------------------------------------

    def _ddl(self, statements: str, **setters: Callable[[], Any]) -> None:
        with self.conn.transaction():
            for statement in statements.split("; "):
                self.conn.execute(statement.format(a=f"{self.prefix}_a", c=f"{self.prefix}_c"))
        self.extra.update(setters)

    def _rename(self) -> None:
        self._ddl("ALTER TABLE {a} RENAME COLUMN name TO title")
        self.name = "title"

    def _new_table(self) -> None:
        b = f"{self.prefix}_b"
        with self.conn.transaction():
            self.conn.execute(f"CREATE TABLE {b} (id integer PRIMARY KEY, word text, at timestamptz)")
            self.conn.execute(f"INSERT INTO {b} SELECT g, 'w' || g, now() FROM generate_series(1, 30) g")
        self.b_keys = set(range(1, 31))
        self.has_b = True

    def run(self, steps: Sequence[tuple[str, Callable[[], None]]], changes_between: int) -> None:
        for _, step in steps:
            self.changes(changes_between)
            step()
        self.changes(changes_between)


# -- checks ----------------------------------------------------------------------------------------------


def _columns(conn: psycopg.Connection, table: str) -> list[tuple[str, str, bool]]:
    """(name, type, NOT NULL) of a table's live columns, in order; [] when there is no such table."""
    return conn.execute(
        "SELECT a.attname::text, format_type(a.atttypid, a.atttypmod), a.attnotnull FROM pg_attribute a"
        " WHERE a.attrelid = to_regclass(%s) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum", (table,)).fetchall()


def _rows(conn: psycopg.Connection, table: str, columns: Sequence[str], where: str = "") -> list[tuple[Any, ...]]:
    return conn.execute(f"SELECT {', '.join(columns)} FROM {table} {where} ORDER BY id").fetchall()


def pg_mismatches(source: psycopg.Connection, mirror: psycopg.Connection, prefix: str, *, history: bool = False) -> list[str]:
    """How a PostgreSQL mirror (an SCD2 history: its open versions) differs from the live source
    tables, column by column: each source column is in the mirror with the same type (and the same
    NOT NULL, SCD1), and the rows are equal. A dropped table's mirror is still there."""
    problems = []
    for table in tables(prefix)[:2]:
        source_columns = _columns(source, table)
        if not source_columns:
            problems.append(f"{table}: no such source table")
            continue
        mirrored = {name: (kind, not_null) for name, kind, not_null in _columns(mirror, table)}
        for name, kind, not_null in source_columns:
            if name not in mirrored:
                problems.append(f"{table}: the mirror has no column {name}")
            elif mirrored[name][0] != kind:
                problems.append(f"{table}.{name}: the mirror's type is {mirrored[name][0]}, the source's {kind}")
            elif not history and mirrored[name][1] != not_null:
                problems.append(f"{table}.{name}: the mirror's NOT NULL is {mirrored[name][1]}, the source's {not_null}")
        if any(p.startswith(f"{table}: the mirror has no") for p in problems):
            continue
        names = [name for name, _, _ in source_columns]
        expected = _rows(source, table, names)
        found = _rows(mirror, table, names, 'WHERE "__END_AT" IS NULL' if history else "")
        if found != expected:
            problems.append(f"{table}: rows differ ({len(found)} in the mirror, {len(expected)} in the source; first differing: "
                            f"{next((pair for pair in zip(found, expected, strict=False) if pair[0] != pair[1]), None)})")
    if not _columns(mirror, tables(prefix)[2]):
        problems.append(f"{tables(prefix)[2]}: the mirror of the dropped table is gone")
    return problems


def lake_mismatches(source: psycopg.Connection, read: Callable[[str], list[dict[str, Any]]], prefix: str, *,
                    history: bool = False) -> list[str]:
    """How a lake mirror differs from the source tables: ``read(table)`` gives its rows as dicts."""
    problems = []
    for table in tables(prefix)[:2]:
        names = [name for name, _, _ in _columns(source, table)]
        stored = [row for row in read(table) if not history or row.get("__END_AT") is None]
        missing = [name for name in names if stored and name not in stored[0]]
        if missing:
            problems.append(f"{table}: the mirror has no column(s) {missing}")
            continue
        found = sorted((tuple(row[name] for name in names) for row in stored), key=lambda row: row[0])
        expected = _rows(source, table, names)
        if [_plain(row) for row in found] != [_plain(row) for row in expected]:
            problems.append(f"{table}: rows differ ({len(found)} in the mirror, {len(expected)} in the source)")
    return problems


def _plain(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """Values compared across stores: floats as they round-trip, everything else as it is."""
    return tuple(round(value, 12) if isinstance(value, float) else value for value in row)
