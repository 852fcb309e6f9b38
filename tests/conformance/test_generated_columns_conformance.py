"""Generated columns against Debezium 3.6.3, on every major (this module runs on 15 and 18).

Before PostgreSQL 18 pgoutput never sends a generated column; 18 sends stored ones when the
publication says ``publish_generated_columns = stored`` (the default stays ``none``). What each
connector makes of the column, in the snapshot and in the stream, is compared here.
"""

from __future__ import annotations

import pytest

from .differential import run_conformance


def _table(t: str) -> list[str]:
    return [
        f"CREATE TABLE {t} (id int PRIMARY KEY, a int, g int GENERATED ALWAYS AS (a * 2) STORED, note text)",
        f"INSERT INTO {t} (id, a, note) VALUES (1, 10, 'snap'), (2, NULL, 'snap')",
    ]


def _workload(t: str) -> list[str]:
    return [
        f"INSERT INTO {t} (id, a, note) VALUES (3, 7, 'stream')",
        f"UPDATE {t} SET a = 8 WHERE id = 3",
        f"UPDATE {t} SET note = 'changed' WHERE id = 1",
        f"DELETE FROM {t} WHERE id = 2",
    ]


def test_generated_columns(debezium_oracle, pg_cluster, db, unique_name: str) -> None:
    """The default publication (what both connectors create): the generated column as each
    connector carries it in snapshot rows and streamed changes."""
    t = f"gen_{unique_name[-4:].strip('_')}"
    debezium, ours = run_conformance(
        debezium_oracle, pg_cluster, db, unique_name, setup=_table(t), tables=[f"public.{t}"], workload=_workload(t),
        **{"snapshot.mode": "initial"},
    )
    ops = [r.value_payload["op"] for r in ours if r.value_payload and "op" in r.value_payload]
    assert ops[:2] == ["r", "r"] and ops[2:] == ["c", "u", "u", "d"], ops


def test_published_generated_columns(debezium_oracle, pg_cluster, pg_major: str, db, unique_name: str) -> None:
    """PostgreSQL 18's ``publish_generated_columns = stored``: the publications are made by the
    owner (``publication.autocreate.mode=disabled``) and send the generated column's value."""
    if int(pg_major) < 18:
        pytest.skip("publish_generated_columns is PostgreSQL 18's")
    t = f"pgen_{unique_name[-4:].strip('_')}"
    setup = _table(t) + [
        f'CREATE PUBLICATION "{unique_name}_{side}" FOR TABLE {t} WITH (publish_generated_columns = stored)'
        for side in ("d", "s")
    ]
    _, ours = run_conformance(
        debezium_oracle, pg_cluster, db, unique_name, setup=setup, tables=[f"public.{t}"], workload=_workload(t),
        **{"snapshot.mode": "initial", "publication.autocreate.mode": "disabled"},
    )
    inserted = next(r for r in ours if r.value_payload and r.value_payload.get("op") == "c")
    assert inserted.value_payload["after"]["g"] == 14, inserted.value_payload
