"""Fixtures of the engine tests."""

from __future__ import annotations

import pytest

from sparkcdc.postgres import drop_slot, get_slot

SIGNAL_DDL = "CREATE TABLE {name}_signal (id varchar(64) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048))"


@pytest.fixture
def tables(db, unique_name):
    """A signal table and two tables to snapshot incrementally: ``<name>_a`` (id 1..40) and ``<name>_b``
    (33 rows, a two-column key); yields the name."""
    db.execute(SIGNAL_DDL.format(name=unique_name))
    db.execute(f"CREATE TABLE {unique_name}_a (id int PRIMARY KEY, v text)")
    db.execute(f"CREATE TABLE {unique_name}_b (k1 int, k2 text, v int, PRIMARY KEY (k1, k2))")
    db.execute(f"INSERT INTO {unique_name}_a SELECT g, 'a' || g FROM generate_series(1, 40) g")
    db.execute(f"INSERT INTO {unique_name}_b SELECT g % 5, 'k' || g, g FROM generate_series(1, 33) g")
    yield unique_name
    if get_slot(db, unique_name) is not None:
        drop_slot(db, unique_name, wait=30)
    db.execute(f'DROP PUBLICATION IF EXISTS "{unique_name}"')
