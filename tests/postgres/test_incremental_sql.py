"""The key queries of incremental snapshots order by the key's type, not by its text."""

from __future__ import annotations

from sparkcdc.postgres.incremental import chunk_upper_bound, maximum_key


def test_keys_are_ordered_as_their_type_though_returned_as_text(db, unique_name) -> None:
    db.execute(f"CREATE TABLE {unique_name} (id int, part text, PRIMARY KEY (id, part))")
    db.execute(f"INSERT INTO {unique_name} SELECT g, 'p' FROM generate_series(1, 20) g")  # as text, '9' > '20'
    keys, types = ("id", "part"), ("integer", "text")
    assert maximum_key(db, "public", unique_name, keys, None) == ("20", "p")
    assert maximum_key(db, "public", unique_name, keys, "id < 15") == ("14", "p")
    assert chunk_upper_bound(db, "public", unique_name, keys, types, None, ("20", "p"), None, 7) == (("7", "p"), 7)
    assert chunk_upper_bound(db, "public", unique_name, keys, types, ("7", "p"), ("20", "p"), None, 7) == (("14", "p"), 7)
    assert chunk_upper_bound(db, "public", unique_name, keys, types, ("14", "p"), ("20", "p"), None, 7) == (None, 6)
