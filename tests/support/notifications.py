"""Debezium's notification records as the oracle facts show them, and checks of ours against them.

The sample is read from docs/incremental-snapshot-oracle-facts.md §5 (observed from Debezium 3.6.3),
so the tests compare with what was captured, not with a copy of it.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

FACTS = Path(__file__).resolve().parents[2] / "docs" / "incremental-snapshot-oracle-facts.md"
_KEY_NAME = '"name":"io.debezium.connector.common.NotificationKey"'


@cache
def debezium_sample() -> tuple[str, str]:
    """The key and value texts of the notification record in the facts file."""
    lines = FACTS.read_text(encoding="utf-8").splitlines()
    index = next(i for i, line in enumerate(lines) if line.startswith("key:") and _KEY_NAME in line)
    key, value = lines[index], lines[index + 1]
    assert value.startswith("value:")
    return key.split(":", 1)[1].strip(), value.split(":", 1)[1].strip()


def schema_text(text: str) -> str:
    """The ``{"schema":...`` part of a JsonConverter text, verbatim (so field order counts)."""
    head, _, _ = text.partition(',"payload":')
    return head


def assert_debezium_shape(key: str, value: str, headers: Any) -> dict[str, Any]:
    """A notification record has Debezium's key and value schemas (text for text), payload field
    order and no headers; returns the value's payload."""
    their_key, their_value = debezium_sample()
    assert schema_text(key) == schema_text(their_key)
    assert schema_text(value) == schema_text(their_value)
    payload = json.loads(value)["payload"]
    assert list(payload) == list(json.loads(their_value)["payload"])
    assert json.loads(key)["payload"] == {"id": payload["id"]}
    assert all(isinstance(v, str) for v in payload["additional_data"].values())
    assert not headers
    return payload


#: The composite keys of the facts' table ``b`` (§2): 7 rows, ordered (1,x) (1,y) (2,a) (2,b) (3,z) (4,m) (10,q).
B_KEYS = [(1, "x"), (1, "y"), (2, "a"), (2, "b"), (3, "z"), (4, "m"), (10, "q")]


def create_facts_tables(db: Any, name: str) -> tuple[str, str, str]:
    """The oracle facts' set-up under ``name``: a signal table, ``<name>_a`` (ids 1-10) and
    ``<name>_b`` (:data:`B_KEYS`); their qualified names."""
    db.execute(f"CREATE TABLE {name}_signal (id varchar(64) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048))")
    db.execute(f"CREATE TABLE {name}_a (id int PRIMARY KEY, v text)")
    db.execute(f"INSERT INTO {name}_a SELECT g, 'v' || g FROM generate_series(1, 10) g")
    db.execute(f"CREATE TABLE {name}_b (k1 int, k2 text, v int, PRIMARY KEY (k1, k2))")
    db.cursor().executemany(f"INSERT INTO {name}_b VALUES (%s, %s, 0)", B_KEYS)
    return f"public.{name}_signal", f"public.{name}_a", f"public.{name}_b"


def incremental_types(payloads: list[dict[str, Any]], snapshot_id: str) -> list[str]:
    return [p["type"] for p in payloads if p["aggregate_type"] == "Incremental Snapshot" and p["id"] == snapshot_id]


def expected_incremental_sequence(chunks_per_table: list[int]) -> list[str]:
    """Debezium's sequence for an incremental snapshot (facts §5): one IN_PROGRESS per non-empty chunk."""
    out = ["STARTED"]
    for chunks in chunks_per_table:
        out += ["IN_PROGRESS"] * chunks + ["TABLE_SCAN_COMPLETED"]
    return out + ["COMPLETED"]
