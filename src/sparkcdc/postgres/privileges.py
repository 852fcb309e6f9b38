"""What the connecting role may do, and the statement that gives it what it lacks.

sparkcdc runs on managed services (RDS, Cloud SQL, Azure) as a role with only ``REPLICATION`` (or
``rds_replication``) and ``SELECT`` on the captured tables. Whatever more a configuration asks for
(watermark rows in the signal table, a heartbeat action query, a replica identity to set) is checked
here *before* it is attempted, so that the refusal names the privilege and prints the ``GRANT`` (or
``ALTER``) that fixes it, instead of PostgreSQL's bare "permission denied" half-way through a run.

Every function only reads the catalog (``has_*_privilege``, ``pg_has_role``) or ``EXPLAIN``\\ s a
statement without running it, so ``validate --connect`` may call them on its read-only connection.
Names in the statements are quoted by the server's own ``quote_ident`` (only where needed), so
they can be pasted into psql as they are.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import psycopg

from ..errors import ServerError

__all__ = [
    "InsufficientPrivilegeError",
    "MissingPrivilege",
    "TableAccess",
    "alter_role_replication",
    "current_role",
    "describe_missing",
    "sql_identifiers",
    "statement_denied",
    "table_access",
]

INSUFFICIENT_PRIVILEGE = "42501"
_SYNTAX_ERROR = "42601"


class InsufficientPrivilegeError(ServerError):
    """The connecting role lacks a privilege sparkcdc needs for what the configuration asks; ``fix``
    is the statement (``GRANT ...;``, ``ALTER ROLE ...;``) that gives it, ``prop`` the property that asked."""

    fix: str
    prop: str | None

    def __init__(self, message: str, *, fix: str, prop: str | None = None, table: str | None = None) -> None:
        super().__init__(f"{prop}: {message}" if prop else message, sqlstate=INSUFFICIENT_PRIVILEGE, table=table)
        self.fix = fix
        self.prop = prop


@dataclass(frozen=True)
class MissingPrivilege:
    """Privileges ``role`` lacks on one object, and the statement that grants them."""

    role: str
    privileges: tuple[str, ...]  # e.g. ("INSERT", "DELETE"), or ("USAGE",) on a schema
    on: str  # "table public.sig", "schema inventory"
    fix: str  # GRANT INSERT, DELETE ON public.sig TO cdc;


@dataclass(frozen=True)
class TableAccess:
    """One table as the role sees it: its name as SQL, whether the role owns it (ALTER TABLE, adding
    it to a publication), and what it lacks of the privileges asked for (the schema's USAGE first)."""

    schema: str
    table: str
    sql_name: str  # public.orders, "Mixed".x: quoted only where needed
    owner: str
    owned: bool
    missing: tuple[MissingPrivilege, ...]


def current_role(conn: psycopg.Connection) -> str:
    """The connecting role's name, quoted as SQL only where needed."""
    row = conn.execute("SELECT quote_ident(current_user)").fetchone()
    assert row is not None
    return str(row[0])


def sql_identifiers(conn: psycopg.Connection, *names: str) -> list[str]:
    """``names`` as SQL identifiers, quoted by the server only where needed (a keyword, capitals)."""
    row = conn.execute("SELECT ARRAY(SELECT quote_ident(n) FROM unnest(%s::text[]) WITH ORDINALITY AS u(n, i) ORDER BY i)",
                       (list(names),)).fetchone()
    assert row is not None
    return list(row[0])


def describe_missing(missing: Sequence[MissingPrivilege]) -> str:
    """``role cdc lacks USAGE on schema lp and INSERT, DELETE on table lp.sig``."""
    if not missing:
        return ""
    return f"role {missing[0].role} lacks " + " and ".join(f"{', '.join(m.privileges)} on {m.on}" for m in missing)


def alter_role_replication(role: str) -> str:
    """What gives ``role`` (SQL-quoted) the right to open replication connections and create slots."""
    return f"ALTER ROLE {role} REPLICATION;"


def table_access(conn: psycopg.Connection, schema: str, table: str, privileges: Sequence[str]) -> TableAccess | None:
    """``privileges`` (SELECT, INSERT, UPDATE, DELETE, TRUNCATE) on ``schema.table`` for the connecting
    role: what it lacks and the GRANTs. None when the table does not exist."""
    row = conn.execute(
        """SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname), quote_ident(n.nspname),
                  quote_ident(current_user), pg_get_userbyid(c.relowner)::text, pg_has_role(c.relowner, 'USAGE'),
                  has_schema_privilege(n.oid, 'USAGE'),
                  ARRAY(SELECT p FROM unnest(%s::text[]) WITH ORDINALITY AS u(p, i)
                         WHERE NOT has_table_privilege(c.oid, p) ORDER BY i)
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = %s AND c.relname = %s""",
        (list(privileges), schema, table),
    ).fetchone()
    if row is None:
        return None
    sql_name, sql_schema, role, owner, owned, schema_usage, lacking = row
    missing = []
    if not schema_usage:
        missing.append(MissingPrivilege(role, ("USAGE",), f"schema {sql_schema}", f"GRANT USAGE ON SCHEMA {sql_schema} TO {role};"))
    if lacking:
        lacking = tuple(lacking)
        missing.append(MissingPrivilege(role, lacking, f"table {sql_name}", f"GRANT {', '.join(lacking)} ON {sql_name} TO {role};"))
    return TableAccess(schema, table, sql_name, owner, owned, tuple(missing))


#: The table a heartbeat-style statement writes, and the privileges that writing takes (ON CONFLICT
#: DO UPDATE adds UPDATE, and SELECT on the conflict target's columns).
_WRITES = re.compile(
    r"""^\s*(?:WITH\b.*?\)\s*)?(?P<verb>INSERT\s+INTO|UPDATE(?:\s+ONLY)?|DELETE\s+FROM(?:\s+ONLY)?|MERGE\s+INTO)\s+
        (?P<name>(?:"(?:[^"]|"")+"|[A-Za-z_][\w$]*)(?:\s*\.\s*(?:"(?:[^"]|"")+"|[A-Za-z_][\w$]*))?)""",
    re.IGNORECASE | re.VERBOSE | re.DOTALL,
)


def statement_denied(conn: psycopg.Connection, statement: str) -> tuple[str, tuple[str, ...]] | None:
    """Whether running ``statement`` would be refused for a missing privilege, found without running
    it: ``EXPLAIN`` plans the statement and checks its privileges, and executes nothing (not even
    in a read-only transaction does it complain of a write).

    Returns None when the statement passes, or cannot be judged this way (``EXPLAIN`` takes no
    ``CALL`` or ``DO``); else (the server's message, the GRANTs that fix it where the statement's
    shape tells which table it writes: ``INSERT INTO``, ``UPDATE``, ``DELETE FROM``, ``MERGE INTO``;
    else none).
    Other errors (a table that does not exist) are raised as the server reported them."""
    try:
        conn.execute(f"EXPLAIN {statement}".encode())
    except psycopg.errors.InsufficientPrivilege as exc:
        return (exc.diag.message_primary or str(exc)).strip(), _grants_for(conn, statement)
    except psycopg.errors.SyntaxError:
        return None  # not explainable (CALL, DO): it is judged when it runs
    return None


def _grants_for(conn: psycopg.Connection, statement: str) -> tuple[str, ...]:
    match = _WRITES.match(statement)
    if match is None:
        return ()
    verb = match.group("verb").split()[0].upper()
    wanted = {"INSERT": ["INSERT"], "UPDATE": ["UPDATE", "SELECT"], "DELETE": ["DELETE", "SELECT"],
              "MERGE": ["INSERT", "UPDATE", "DELETE", "SELECT"]}[verb]
    if verb == "INSERT" and re.search(r"\bON\s+CONFLICT\b", statement, re.IGNORECASE):
        wanted += ["SELECT"] + (["UPDATE"] if re.search(r"\bDO\s+UPDATE\b", statement, re.IGNORECASE) else [])
    if verb in ("UPDATE", "DELETE") and not re.search(r"\b(WHERE|RETURNING)\b", statement, re.IGNORECASE):
        wanted.remove("SELECT")  # a statement that reads no column needs no SELECT
    try:
        # By the catalog, not to_regclass(): that one fails on a schema the role has no USAGE on,
        # which is one of the things to report. An unqualified name goes by the search path.
        row = conn.execute(
            """WITH name AS (SELECT parse_ident(%s) AS parts)
               SELECT n.nspname::text, c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace, name
                WHERE c.relname = parts[cardinality(parts)]
                  AND CASE WHEN cardinality(parts) = 2 THEN n.nspname = parts[1] ELSE n.nspname = ANY(current_schemas(true)) END
                ORDER BY array_position(current_schemas(true), n.nspname) LIMIT 1""",
            (match.group("name"),)).fetchone()
    except psycopg.Error:
        return ()  # a name parse_ident does not take: no GRANT to suggest
    if row is None:
        return ()
    access = table_access(conn, row[0], row[1], list(dict.fromkeys(wanted)))
    return () if access is None else tuple(m.fix for m in access.missing)
