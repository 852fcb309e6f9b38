"""The start of a driver JVM sparkcdc launches (sparkcdc.spark.launch.driver_jvm): Spark's lookup of static
Python data sources is spared there, and only there; py4j's argument converters are imported
beside the launch. Each case starts its own JVM in a subprocess (a JVM's lookup happens once)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

#: A static Python data source as Spark finds them: a ``pyspark_*`` module with a ``DefaultSource``.
#: Importing it leaves a mark, so a test sees whether Spark's lookup ran at all.
STATIC_SOURCE = '''
import os
from pathlib import Path
from pyspark.sql.datasource import DataSource, DataSourceReader

Path(os.environ["PROBE_MARK"]).write_text("imported")


class _Reader(DataSourceReader):
    def read(self, partition):
        yield (1,)


class DefaultSource(DataSource):
    @classmethod
    def name(cls):
        return "probe_static"

    def schema(self):
        return "one int"

    def reader(self, schema):
        return _Reader()
'''


@pytest.fixture
def static_source(tmp_path: Path) -> dict[str, str]:
    """The environment of a process whose Python (and Spark's Python processes) can import the probe."""
    modules = tmp_path / "modules"
    modules.mkdir()
    (modules / "pyspark_probe_static.py").write_text(STATIC_SOURCE)
    env = {key: value for key, value in os.environ.items() if key != "SPARK_CONF_DIR"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(modules), env.get("PYTHONPATH")]))
    env["PROBE_MARK"] = str(tmp_path / "mark")
    env["PYSPARK_PYTHON"] = sys.executable  # as one's own session must be told, for its Python processes
    return env


def _run(probe: str, env: dict[str, str]) -> None:
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]


def test_a_driver_jvm_sparkcdc_launches_does_not_look_for_static_data_sources(static_source: dict[str, str]) -> None:
    probe = """
import sys
from sparkcdc.spark.launch.driver_jvm import static_data_sources_skipped
from sparkcdc.spark import launch
from sparkcdc.spark.source import PostgresCdcDataSource, register

spark = launch.session("local[1]")
assert "pyspark.testing.utils" in sys.modules, "py4j's converters were not imported beside the launch"
assert static_data_sources_skipped(spark._jvm)
register(spark)
assert spark._jsparkSession.sessionState().dataSourceManager().dataSourceExists("postgres-cdc")
try:
    spark.read.format("probe_static").load().collect()
except Exception as exc:
    assert "probe_static" in str(exc), exc
else:
    raise AssertionError("a static data source was found: Spark looked them up")
spark.stop()
"""
    _run(probe, static_source)
    assert not Path(static_source["PROBE_MARK"]).exists(), "Spark's lookup imported the pyspark_* module"


def test_a_session_started_by_its_user_still_finds_static_data_sources(static_source: dict[str, str]) -> None:
    """Where the user starts Spark, sparkcdc reuses the session and leaves Spark's lookup alone."""
    probe = """
from pyspark.sql import SparkSession
from sparkcdc.spark.launch.driver_jvm import static_data_sources_skipped
from sparkcdc.spark import launch

mine = SparkSession.builder.master("local[1]").getOrCreate()
spark = launch.session()
assert spark is mine
assert [tuple(row) for row in spark.read.format("probe_static").load().collect()] == [(1,)]
assert not static_data_sources_skipped(spark._jvm)
spark.stop()
"""
    _run(probe, static_source)
    assert Path(static_source["PROBE_MARK"]).read_text() == "imported"
