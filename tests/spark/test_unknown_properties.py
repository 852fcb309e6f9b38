"""A property name sparkcdc does not know is reported on every Spark path, with the closest known name,
and refused under ``sparkcdc.strict=true``: the ``postgres-cdc`` source's options, the typed views
(``describe_table``) and ``apply_changes``.

The source's options are read in a Python worker that Spark starts (``schema()`` of the data source):
a report there is a ``ConfigWarning`` on that worker's stderr, which Spark forwards to its own (the
driver's console or log); a refusal is the error ``load()`` raises. ``describe_table`` and
``apply_changes`` build their configuration in the caller's process: the warning is the caller's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest
from pyspark.sql.datasource import CaseInsensitiveDict

from sparkcdc.debezium import config as config_module
from sparkcdc.debezium.config import ConfigWarning
from sparkcdc.errors import ConfigurationError
from sparkcdc.spark.source.options import config_from_options, options_for, properties_from_options

from .support import properties

TYPO = "table.include.lst"  # a misspelt table.include.list: without a report, every table would be captured
REPORT = f"{TYPO}: is not a property sparkcdc knows; did you mean table.include.list? (ignored)"
REFUSAL = f"{TYPO}: is not a property sparkcdc knows; did you mean table.include.list?"


@pytest.fixture(autouse=True)
def _report_again(monkeypatch) -> None:
    """Each warning is reported once per process; every test here wants to see it."""
    monkeypatch.setattr(config_module, "_reported", set())


def _config_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, ConfigWarning)]


@pytest.mark.slow
def test_the_source_reports_a_misspelt_option_with_the_closest_name(pg_cluster, tmp_path: Path, unique_name: str) -> None:
    """As a user sees it: a local session of its own reads ``postgres-cdc`` with the options one by one."""
    props = properties(pg_cluster, unique_name, [f"public.t_{unique_name}"]) | {TYPO: f"public\\.t_{unique_name}"}
    props.pop("table.include.list")
    script = textwrap.dedent(f"""
        import json
        from sparkcdc.spark import launch
        from sparkcdc.spark.source import register
        spark = launch.session("local[1]", app_name="unknown-option")
        register(spark)
        reader = spark.readStream.format("postgres-cdc")
        for name, value in json.loads({json.dumps(json.dumps(props))}).items():
            reader = reader.option(name, value)
        print("schema:", reader.load().schema.simpleString()[:30], flush=True)
        spark.stop()
    """)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "schema: struct<topic:string" in done.stdout  # the query can be built: the name is ignored, not refused
    assert f"ConfigWarning: {REPORT}" in done.stderr, done.stderr[-3000:]


@pytest.mark.slow
def test_the_source_refuses_a_misspelt_option_under_strict(spark, pg_cluster, tmp_path: Path, unique_name: str) -> None:
    props = properties(pg_cluster, unique_name, [f"public.t_{unique_name}"])
    with pytest.raises(Exception, match=REFUSAL.replace(".", r"\.").replace("?", r"\?")):
        spark.readStream.format("postgres-cdc").options(**props, **{TYPO: "x", "sparkcdc.strict": "true"}).load()
    with pytest.raises(Exception, match=r"snapshot\.mod: is not a property sparkcdc knows; did you mean snapshot\.mode\?"):
        spark.readStream.format("postgres-cdc").options(**options_for(props | {"snapshot.mod": "never", "sparkcdc.strict": "true"})).load()
    # Spark's own options are not the connector's: load(path) is no typo
    assert spark.readStream.format("postgres-cdc").options(**props, **{"sparkcdc.strict": "true"}).load("ignored").schema


def test_sparks_own_options_are_not_connector_properties() -> None:
    """What Spark puts in a data source's options (the reader's ``path``; a writer's ``checkpointLocation``,
    ``queryName``, ``path``) is left out of the connector's properties, so strict mode does not refuse it."""
    given = CaseInsensitiveDict({"database.hostname": "h", "database.user": "u", "database.dbname": "d", "topic.prefix": "srv",
                                 "path": "out", "checkpointLocation": "ck", "queryName": "q", "sparkcdc.strict": "true"})
    props, _ = properties_from_options(given)
    assert set(props) == {"database.hostname", "database.user", "database.dbname", "topic.prefix", "sparkcdc.strict"}
    assert config_from_options(given).strict


def test_the_library_reports_unknown_names_once_as_config_warnings() -> None:
    base = {"database.hostname": "h", "database.user": "u", "database.dbname": "d", "topic.prefix": "srv"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        config_from_options(options_for(base | {TYPO: "x"}))
        config_from_options(base | {TYPO: "x"})
    assert _config_warnings(caught) == [REPORT]


@pytest.mark.slow
def test_describe_table_reports_and_strict_refuses(pg_cluster, db, unique_name: str) -> None:
    from sparkcdc.spark.views import describe_table

    table = f"t_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, secret text)")
    props = properties(pg_cluster, unique_name, [f"public.{table}"]) | {"column.mask.with.3.char": rf"public\.{table}\.secret"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        view = describe_table(props, f"public.{table}")
    assert [c.name for c in view.columns] == ["id", "secret"]
    assert _config_warnings(caught) == ["column.mask.with.3.char: is not a property sparkcdc knows; did you mean "
                                        "column.mask.with.<n>.chars? (ignored)"]
    with pytest.raises(ConfigurationError) as refused:
        describe_table(props | {"sparkcdc.strict": "true"}, f"public.{table}")
    assert refused.value.property == "column.mask.with.3.char" and "did you mean column.mask.with.<n>.chars?" in str(refused.value)


def test_apply_changes_reports_and_strict_refuses(spark, tmp_path: Path) -> None:
    from sparkcdc.spark.apply import apply_changes

    props = {"database.hostname": "127.0.0.1", "database.user": "u", "database.dbname": "d", "topic.prefix": "srv",
             "sparkcdc.apply.schema.evolutoin": "strict"}
    source = spark.readStream.format("rate").load()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        apply_changes(source, "postgresql://127.0.0.1/mirror", properties=props, checkpoint_location=str(tmp_path / "ck"),
                      table="public.orders")
    assert "sparkcdc.apply.schema.evolutoin: is not a property sparkcdc knows; did you mean sparkcdc.apply.schema.evolution? " \
           "(ignored)" in _config_warnings(caught)
    with pytest.raises(ConfigurationError, match=r"did you mean sparkcdc\.apply\.schema\.evolution\?") as refused:
        apply_changes(source, "postgresql://127.0.0.1/mirror", properties=props | {"sparkcdc.strict": "true"},
                      checkpoint_location=str(tmp_path / "ck"), table="public.orders")
    assert refused.value.property == "sparkcdc.apply.schema.evolutoin"
