"""Every ``publication.autocreate.mode``, through the connector's real start-up path."""

from __future__ import annotations

import psycopg
import pytest

from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.engine.planner import ConnectorPlanner
from sparkcdc.engine.setup import SetupError
from sparkcdc.errors import ConfigurationError
from sparkcdc.postgres import drop_slot, publication_tables
from sparkcdc.postgres.publications import publication_members


def _config(pg_cluster, name: str, **extra: str) -> ConnectorConfig:
    return ConnectorConfig({
        "database.hostname": pg_cluster.host, "database.port": pg_cluster.port, "database.user": "postgres",
        "database.dbname": "postgres", "topic.prefix": "srv", "slot.name": name, "publication.name": name,
        "snapshot.mode": "no_data", **extra,
    })


def _start(config: ConnectorConfig) -> dict:
    planner = ConnectorPlanner(config)
    try:
        return planner.initial_offset()
    finally:
        planner.stop()


def _publication(db: psycopg.Connection, name: str) -> tuple | None:
    return db.execute("SELECT puballtables, pubinsert, pubupdate, pubdelete, pubtruncate FROM pg_publication WHERE pubname = %s",
                      (name,)).fetchone()


@pytest.fixture
def tables(db: psycopg.Connection, unique_name: str) -> list[str]:
    names = [f"a_{unique_name}", f"b_{unique_name}", f"c_{unique_name}"]
    for name in names:
        db.execute(f"CREATE TABLE {name} (id int PRIMARY KEY)")
    return names


def test_filtered_lists_the_captured_tables_and_follows_changes(db, pg_cluster, unique_name, tables) -> None:
    include = f"public\\.{tables[1]},public\\.{tables[0]}"
    _start(_config(pg_cluster, unique_name, **{"publication.autocreate.mode": "filtered", "table.include.list": include}))
    assert publication_tables(db, unique_name) == sorted([("public", tables[0]), ("public", tables[1])])
    assert _publication(db, unique_name) == (False, True, True, True, True)
    # A changed include list re-sets the existing publication's tables.
    _start(_config(pg_cluster, unique_name, **{"publication.autocreate.mode": "filtered", "table.include.list": f"public\\.{tables[2]}"}))
    assert publication_tables(db, unique_name) == [("public", tables[2])]
    # Skipping inserts, updates or deletes narrows what the publication publishes.
    db.execute(f'DROP PUBLICATION "{unique_name}"')
    _start(_config(pg_cluster, unique_name, **{"publication.autocreate.mode": "filtered", "table.include.list": f"public\\.{tables[2]}",
                                               "skipped.operations": "u,d"}))
    assert _publication(db, unique_name) == (False, True, False, False, True)
    drop_slot(db, unique_name, wait=30)
    db.execute(f'DROP PUBLICATION "{unique_name}"')


def test_filtered_with_a_partitioned_table_and_a_partition(db, pg_cluster, unique_name) -> None:
    """The publication names the listed root and partition; the server publishes the root as its leaves."""
    root, other = f"r_{unique_name}", f"o_{unique_name}"
    for name in (root, other):
        db.execute(f"CREATE TABLE {name} (id int, k int, PRIMARY KEY (id, k)) PARTITION BY LIST (k)")
        db.execute(f"CREATE TABLE {name}_1 PARTITION OF {name} FOR VALUES IN (1)")
        db.execute(f"CREATE TABLE {name}_2 PARTITION OF {name} FOR VALUES IN (2)")
    include = f"public\\.{root},public\\.{other}_2"
    config = _config(pg_cluster, unique_name, **{"publication.autocreate.mode": "filtered", "table.include.list": include})
    _start(config)
    assert publication_members(db, unique_name) == sorted([("public", root), ("public", f"{other}_2")])
    assert publication_tables(db, unique_name) == sorted([("public", f"{root}_1"), ("public", f"{root}_2"), ("public", f"{other}_2")])
    _start(config)  # a second start compares the tables the publication names, and keeps them
    assert publication_members(db, unique_name) == sorted([("public", root), ("public", f"{other}_2")])
    drop_slot(db, unique_name, wait=30)
    db.execute(f'DROP PUBLICATION "{unique_name}"')


def test_all_tables(db, pg_cluster, unique_name, tables) -> None:
    _start(_config(pg_cluster, unique_name, **{"publication.autocreate.mode": "all_tables", "table.include.list": f"public\\.{tables[0]}"}))
    assert _publication(db, unique_name)[0] is True  # type: ignore[index]
    drop_slot(db, unique_name, wait=30)
    db.execute(f'DROP PUBLICATION "{unique_name}"')


def test_no_tables(db, pg_cluster, unique_name, tables) -> None:
    _start(_config(pg_cluster, unique_name, **{"publication.autocreate.mode": "no_tables"}))
    assert _publication(db, unique_name) == (False, True, True, True, True)
    assert publication_tables(db, unique_name) == []
    drop_slot(db, unique_name, wait=30)
    db.execute(f'DROP PUBLICATION "{unique_name}"')


def test_disabled_requires_the_publication(db, pg_cluster, unique_name, tables) -> None:
    config = _config(pg_cluster, unique_name, **{"publication.autocreate.mode": "disabled", "table.include.list": f"public\\.{tables[0]}"})
    with pytest.raises(SetupError, match=f"publication '{unique_name}' does not exist and publication.autocreate.mode is disabled"):
        _start(config)
    db.execute(f'CREATE PUBLICATION "{unique_name}" FOR TABLE {tables[1]}')
    _start(config)
    assert publication_tables(db, unique_name) == [("public", tables[1])], "a disabled mode never changes the publication"
    drop_slot(db, unique_name, wait=30)
    db.execute(f'DROP PUBLICATION "{unique_name}"')


def test_filtered_without_any_matching_table_names_the_property(pg_cluster, unique_name) -> None:
    config = _config(pg_cluster, unique_name, **{"publication.autocreate.mode": "filtered", "table.include.list": "public\\.no_such_table"})
    with pytest.raises(ConfigurationError, match="table.include.list"):
        _start(config)
