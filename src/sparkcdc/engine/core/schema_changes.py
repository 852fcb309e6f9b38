"""When a schema change record is due (``include.schema.changes``; the records: sparkcdc.debezium.schema_changes).

pgoutput sends a table's Relation message before the table's first change on every replication
connection, and again after anything invalidated the table's cached description (a DDL, but also an
ANALYZE or a SET NOT NULL, which leave the message's content as it was). So a Relation message
means "this is the table now", not "the table changed": a change is a message whose *content*
differs from the last one known for the table. The content is what pgoutput puts in it: the
column names, type OIDs and type modifiers (in attribute order), the replica identity's key flags
and the replica identity; :func:`relation_digest` names it.

What is known is carried from micro-batch to micro-batch in the stream state (``StreamState.
relations``: the state the task reading a batch writes at its end, and the next batch's task reads
at its start), and the initial snapshot's planner writes the snapshotted tables' digests, computed
from the catalog in the exported snapshot (:func:`table_digest`, the same content as the Relation
message the stream then sends for an unchanged table). So a batch read again starts from the same
knowledge and yields the same records, and a batch never reports a table the batch before it
already described.

Tables are known by name: a table of a name never seen (or whose relation OID changed: dropped and
created again) is ``CREATE``, a known one whose content changed ``ALTER``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import orjson

from ...catalog import TableInfo
from ...pgoutput.messages import Relation

__all__ = ["RelationShapes", "relation_digest", "relation_message_digest", "table_digest"]

#: A known table: (schema, table, relation OID, digest of its Relation content).
Shape = tuple[str, str, int, str]


def relation_digest(columns: Iterable[tuple[str, int, int, bool]], replica_identity: str) -> str:
    """A short name of a Relation message's content: (name, type OID, type modifier, key flag) per
    column in the message's order, and the replica identity (``d``, ``n``, ``f`` or ``i``)."""
    text = orjson.dumps([replica_identity, [list(column) for column in columns]])
    return hashlib.sha1(text).hexdigest()[:16]


def relation_message_digest(relation: Relation) -> str:
    return relation_digest(((c.name, c.type_oid, c.type_modifier, c.is_key) for c in relation.columns),
                           relation.replica_identity.value)


def table_digest(info: TableInfo) -> str:
    """The digest of the Relation message pgoutput sends for the table as the catalog describes it:
    its live, not generated columns in attribute order, flagged as the replica identity's key
    (every column for FULL, the primary key's for DEFAULT, the index's for INDEX, none for NOTHING)."""
    identity = info.replica_identity
    columns = sorted((c for c in info.columns if not c.generated), key=lambda c: c.attnum)
    if identity == "f":
        key = {c.name for c in columns}
    elif identity == "d":
        key = set(info.primary_key)
    elif identity == "i":
        key = set(info.replica_identity_index)
    else:
        key = set()
    return relation_digest(((c.name, c.type_oid, c.type_modifier, c.name in key) for c in columns), identity)


class RelationShapes:
    """The last Relation content known of each captured table, and what a new message means."""

    def __init__(self, known: Iterable[Shape] = ()) -> None:
        self._known: dict[tuple[str, str], tuple[int, str]] = {}
        self.load(known)

    def load(self, known: Iterable[Shape]) -> None:
        """What the state at the batch's start says (replaces what was known)."""
        self._known = {(schema, table): (int(oid), str(digest)) for schema, table, oid, digest in known}

    def change(self, relation: Relation) -> str | None:
        """``CREATE``, ``ALTER`` or None (the content is the one known) for a captured table's Relation
        message; the message's content is known from now on."""
        key = (relation.namespace, relation.name)
        shape = (relation.relation_id, relation_message_digest(relation))
        previous = self._known.get(key)
        if previous == shape:
            return None
        if previous is None or previous[0] != shape[0]:
            # A table renamed (the same OID under another name) leaves its old name: not kept forever.
            for other in [k for k, v in self._known.items() if v[0] == shape[0] and k != key]:
                del self._known[other]
            self._known[key] = shape
            return "CREATE"
        self._known[key] = shape
        return "ALTER"

    def entries(self) -> tuple[Shape, ...]:
        """Everything known, in name order (what the state at the batch's end holds)."""
        return tuple((schema, table, oid, digest) for (schema, table), (oid, digest) in sorted(self._known.items()))
