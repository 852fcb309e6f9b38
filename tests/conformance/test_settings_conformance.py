"""Properties honoured for issue 10 (docs/properties.md), against Debezium 3.6.3."""

from __future__ import annotations

from .differential import run_conformance


def test_skip_messages_without_change(debezium_oracle, pg_cluster, db, unique_name: str) -> None:
    """An UPDATE whose captured columns did not change emits nothing, when the old row is known
    (REPLICA IDENTITY FULL); under DEFAULT there is no old row to compare, so it is emitted."""
    t = f"skipu_{unique_name[-3:].strip('_')}"
    setup = [
        f"CREATE TABLE {t}_full (id int PRIMARY KEY, name text, note text)",
        f"ALTER TABLE {t}_full REPLICA IDENTITY FULL",
        f"CREATE TABLE {t}_dflt (id int PRIMARY KEY, name text, note text)",
        f"INSERT INTO {t}_full VALUES (1, 'same', 'n0'), (2, 'b', 'n0')",
        f"INSERT INTO {t}_dflt VALUES (1, 'same', 'n0')",
    ]
    workload = [
        f"UPDATE {t}_full SET note = 'n1' WHERE id = 1",  # only an excluded column changes: skipped
        f"UPDATE {t}_full SET name = 'same' WHERE id = 1",  # the same value again: skipped
        f"UPDATE {t}_full SET name = 'new', note = 'n2' WHERE id = 1",  # emitted
        f"UPDATE {t}_full SET id = 3 WHERE id = 2",  # a key change: emitted (delete, tombstone, create)
        f"UPDATE {t}_dflt SET note = 'n1' WHERE id = 1",  # no old row under DEFAULT: emitted
    ]
    _, ours = run_conformance(
        debezium_oracle, pg_cluster, db, unique_name, setup=setup, tables=[f"public.{t}_full", f"public.{t}_dflt"],
        workload=workload, **{"skip.messages.without.change": "true", "column.exclude.list": rf"public\.{t}_(full|dflt)\.note"},
    )
    updates = [r for r in ours if r.value_payload and r.value_payload.get("op") == "u"]
    assert [(r.topic.rsplit(".", 1)[1], r.value_payload["after"]["name"]) for r in updates] == [(f"{t}_full", "new"), (f"{t}_dflt", "same")]
