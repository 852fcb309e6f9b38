"""post.processors with Debezium's ReselectColumnsPostProcessor, against Debezium 3.6.3.

A table whose text and text[] values are TOASTed (md5 chains: more than 2 kB that compress poorly),
REPLICA IDENTITY DEFAULT: an UPDATE of another column carries them as unchanged, so both connectors
emit the unavailable-value placeholder, which the post processor reads again by key; null columns
are read again too (reselect.null.values). Both connectors read the row as it is when they read it
(not as of the change), so the workload never changes a column after an event that reads it again:
what each reads is then the same whenever it reads. Snapshot rows (op r) are never read again.
"""

from __future__ import annotations

import pytest

from .differential import run_conformance

RESELECT = "io.debezium.processors.reselect.ReselectColumnsPostProcessor"


def _chain(seed: str, count: int) -> str:
    """SQL for an md5 chain: ``count`` digests, each of the previous one (random-looking hex, > 2 kB at 64+)."""
    return (f"(WITH RECURSIVE c(i, h) AS (SELECT 1, md5('{seed}') UNION ALL SELECT i + 1, md5(h) FROM c WHERE i < {count}) "
            "SELECT string_agg(h, '' ORDER BY i) FROM c)")


def _tags(seed: str, count: int) -> str:
    return (f"(WITH RECURSIVE c(i, h) AS (SELECT 1, md5('{seed}') UNION ALL SELECT i + 1, md5(h) FROM c WHERE i < {count}) "
            "SELECT array_agg(h ORDER BY i) FROM c)")


def _setup(t: str) -> list[str]:
    return [
        f"CREATE TABLE {t} (id int PRIMARY KEY, n int, big text, note text, tags text[])",
        f"INSERT INTO {t} VALUES (1, 1, {_chain('one', 200)}, 'a', {_tags('t1', 200)})",
        f"INSERT INTO {t} VALUES (2, 1, {_chain('two', 200)}, NULL, NULL)",
        f"INSERT INTO {t} VALUES (3, 1, NULL, NULL, NULL)",
        f"INSERT INTO {t} VALUES (6, 1, {_chain('six', 200)}, 'f', {_tags('t6', 200)})",
        # the values are stored out of line (what an UPDATE of another column then leaves out of the WAL)
        f"DO $$ BEGIN IF (SELECT pg_column_size(big) FROM {t} WHERE id = 1) < 2000 THEN RAISE 'big is not TOASTed'; END IF; END $$",
    ]


def _workload(t: str) -> list[str]:
    return [
        f"UPDATE {t} SET n = 10 WHERE id = 1",                               # big, tags unchanged: placeholders
        f"UPDATE {t} SET n = 20 WHERE id = 2",                               # big unchanged; note, tags null
        f"UPDATE {t} SET n = 30, big = {_chain('three', 150)} WHERE id = 3",  # big given; note, tags null
        f"INSERT INTO {t} VALUES (4, 1, NULL, 'x', NULL)",                   # an insert with nulls
        f"UPDATE {t} SET id = 7 WHERE id = 6",                               # a key change: the create by the new key
        f"BEGIN; UPDATE {t} SET n = 11 WHERE id = 1; UPDATE {t} SET n = 12 WHERE id = 1; COMMIT",  # one key twice
    ]


CONFIGURATIONS = {
    "without": lambda t: {},
    "include_list": lambda t: {
        "post.processors": "reselector",
        "post.processors.reselector.type": RESELECT,
        "post.processors.reselector.reselect.columns.include.list": rf"public\.{t}:(big|tags|note)",
    },
    # the deprecated <name>.* settings, an exclude list, and only placeholders (not nulls) read again
    "old_names_exclude_list_unavailable_only": lambda t: {
        "post.processors": "toast",
        "toast.type": RESELECT,
        "toast.reselect.columns.exclude.list": rf"public\.{t}:note",
        "toast.reselect.null.values": "false",
    },
    # nulls only: the placeholders stay
    "null_values_only": lambda t: {
        "post.processors": "reselector",
        "post.processors.reselector.type": RESELECT,
        "post.processors.reselector.reselect.unavailable.values": "false",
    },
}


@pytest.mark.parametrize("configuration", sorted(CONFIGURATIONS))
def test_reselect_columns(debezium_oracle, pg_cluster, db, unique_name: str, configuration: str) -> None:
    t = f"rs_{configuration[:8]}_{unique_name[-3:].strip('_')}"
    debezium, ours = run_conformance(
        debezium_oracle, pg_cluster, db, unique_name,
        setup=_setup(t), tables=[f"public.{t}"], workload=_workload(t), **CONFIGURATIONS[configuration](t),
    )
    # The test shows what it must: an unchanged TOASTed value arrives as the placeholder, and (with the
    # post processor reading it again) leaves as the row's value.
    updates = [r.value_payload["after"] for r in ours if r.op == "u" and r.value_payload["after"]["id"] == 1]
    assert len(updates) == 3
    expected_read = configuration in ("include_list", "old_names_exclude_list_unavailable_only")
    assert all((a["big"] != "__debezium_unavailable_value") == expected_read for a in updates), updates
    assert all((a["tags"] != ["__debezium_unavailable_value"]) == expected_read for a in updates)
    if expected_read:
        assert all(len(a["big"]) == 6400 and len(a["tags"]) == 200 for a in updates)
        moved = [r.value_payload["after"] for r in ours if r.op == "c" and r.value_payload["after"]["id"] == 7]
        assert len(moved) == 1 and len(moved[0]["big"]) == 6400  # read again by the new key
