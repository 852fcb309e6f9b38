"""The ``postgres-cdc`` source's options given one by one (``.option(name, value)``).

PySpark gives a Python data source its options in a ``CaseInsensitiveDict``, which keeps names in
lower case (values keep theirs). sparkcdc.spark.source.options matches names against the property table
case-insensitively and takes the case of a table in ``snapshot.select.statement.overrides.<schema>.<table>``
from the list of overrides; a hash salt, which nothing can restore, is warned about.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql.datasource import CaseInsensitiveDict

from sparkcdc.errors import ConfigurationError
from sparkcdc.spark.source.options import options_for, properties_from_options

from .support import properties


@pytest.mark.slow
def test_options_one_by_one_keep_the_case_of_a_tables_override(spark, pg_cluster, db, tmp_path: Path, unique_name: str) -> None:
    table = f"Mixed_{unique_name}"  # a quoted, mixed-case table name
    db.execute(f'CREATE TABLE public."{table}" (id int PRIMARY KEY, "Label" text)')
    db.execute(f'INSERT INTO public."{table}" SELECT g, \'Row \' || g FROM generate_series(1, 10) g')
    props = properties(pg_cluster, unique_name, [f"public.{table}"], **{
        "database.tcpKeepAlive": "true",
        "snapshot.select.statement.overrides": f"public.{table}",
        f"snapshot.select.statement.overrides.public.{table}": f'SELECT * FROM public."{table}" WHERE id <= 3',
        "sparkcdc.state.location": str(tmp_path / "state"),
    })
    reader = spark.readStream.format("postgres-cdc")
    for name, value in props.items():
        reader = reader.option(name, value)
    rows: list[dict] = []
    query = (reader.load().writeStream.foreachBatch(lambda df, _id: rows.extend(r.asDict() for r in df.collect()))
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    query.awaitTermination()
    assert query.exception() is None, query.exception()
    snapshot = [r for r in rows if r["op"] == "r"]
    # the override applied (its name's table found again): 3 rows, not the table's 10
    assert sorted(json.loads(r["value"])["payload"]["after"]["id"] for r in snapshot) == [1, 2, 3]
    assert {r["topic"] for r in snapshot} == {f"srv.public.{table}"}  # values keep their case
    assert json.loads(snapshot[0]["value"])["payload"]["after"]["Label"].startswith("Row ")


def _lowered(properties: dict[str, str]) -> CaseInsensitiveDict:
    """Options as PySpark hands them to a data source."""
    return CaseInsensitiveDict(properties)


def test_pyspark_keeps_option_names_in_lower_case() -> None:
    assert list(_lowered({"database.tcpKeepAlive": "false"}).data) == ["database.tcpkeepalive"]


def test_names_are_matched_case_insensitively_and_tables_take_the_case_listed() -> None:
    properties, warnings = properties_from_options(_lowered({
        "database.tcpKeepAlive": "false", "Database.Hostname": "db.example",
        "snapshot.select.statement.overrides": "inv.Orders,inv.lines",
        "snapshot.select.statement.overrides.inv.Orders": "SELECT * FROM inv.\"Orders\" WHERE \"Region\" = 'EU'",
        "snapshot.select.statement.overrides.inv.lines": "SELECT * FROM inv.lines",
        "snapshot.select.statement.overrides.inv.other": "SELECT 1",
    }))
    assert properties == {
        "database.tcpKeepAlive": "false", "database.hostname": "db.example",
        "snapshot.select.statement.overrides": "inv.Orders,inv.lines",
        "snapshot.select.statement.overrides.inv.Orders": "SELECT * FROM inv.\"Orders\" WHERE \"Region\" = 'EU'",
        "snapshot.select.statement.overrides.inv.lines": "SELECT * FROM inv.lines",
        "snapshot.select.statement.overrides.inv.other": "SELECT 1",  # not listed: kept, and the config warns it has no effect
    }
    assert warnings == []


def test_the_list_of_overrides_may_come_from_the_json_option() -> None:
    options = {**options_for({"snapshot.select.statement.overrides": "inv.Orders"}),
               "snapshot.select.statement.overrides.inv.orders": "SELECT 2"}
    properties, _ = properties_from_options(_lowered(options))
    assert properties["snapshot.select.statement.overrides.inv.Orders"] == "SELECT 2"


def test_tables_that_differ_only_in_case_are_refused_with_the_way_out() -> None:
    with pytest.raises(ConfigurationError) as info:
        properties_from_options(_lowered({"snapshot.select.statement.overrides": "inv.T,inv.t",
                                          "snapshot.select.statement.overrides.inv.T": "SELECT 1"}))
    assert info.value.property == "snapshot.select.statement.overrides.inv.t" and "sparkcdc.config" in str(info.value)


def test_a_salt_spark_lowered_is_warned_about_and_json_keeps_it() -> None:
    name = "column.mask.hash.SHA-256.with.salt.CzQMA0cB5K"
    _, warnings = properties_from_options(_lowered({name: "inv.customers.email"}))
    assert len(warnings) == 1 and warnings[0].startswith("column.mask.hash.sha-256.with.salt.czqma0cb5k: Spark passes")
    _, quiet = properties_from_options(_lowered({"column.mask.hash.SHA-256.with.salt.123": "inv.customers.email"}))
    assert quiet == []  # digits only: nothing was lost
    properties, warnings = properties_from_options(_lowered(options_for({name: "inv.customers.email"})))
    assert properties == {name: "inv.customers.email"} and warnings == []
    _, unlowered = properties_from_options({name: "inv.customers.email"})  # a plain dict (not through Spark) keeps the case
    assert unlowered == []


def test_json_wins_over_a_plain_option() -> None:
    properties, _ = properties_from_options(_lowered({**options_for({"database.port": "5433"}), "database.port": "5432"}))
    assert properties["database.port"] == "5433"
