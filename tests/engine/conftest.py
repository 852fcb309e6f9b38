"""Fixtures of the engine tests."""

from __future__ import annotations

import pytest

from sparkcdc.postgres import drop_slot, get_slot

from ..support.incremental import create_tables


@pytest.fixture
def tables(db, unique_name):
    """A signal table and two tables to snapshot incrementally: ``<name>_a`` (id 1..40) and ``<name>_b``
    (33 rows, a two-column key); yields the name."""
    create_tables(db, unique_name, rows_a=40, rows_b=33)
    yield unique_name
    if get_slot(db, unique_name) is not None:
        drop_slot(db, unique_name, wait=30)
    db.execute(f'DROP PUBLICATION IF EXISTS "{unique_name}"')
