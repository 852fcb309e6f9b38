"""``spark-submit ... "$(sparkcdc submit-script)" run ...``: sparkcdc as a spark-submit application.

The venv's own ``spark-submit`` (pyspark's ``bin``) runs a small ``run --once`` with
``--master local[1]``: the run works, and the Spark event log's record of the SparkContext's
settings shows spark-submit's master, name and settings kept (sparkcdc's defaults fill only the
gaps), and the settings of ``run --conf`` applied to the new session, static ones included.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ..support.processes import GroupProcess
from ..support.spark_event_log import spark_properties
from ..support.standalone_cluster import QUICK_JVM, spark_home
from .support import output_lines, properties

pytestmark = pytest.mark.slow


def _submit_script() -> str:
    out = subprocess.run([sys.executable, "-m", "sparkcdc.cli", "submit-script"], check=True, capture_output=True, text=True)
    return out.stdout.strip()


def test_submit_script_is_a_python_file_of_the_installed_package() -> None:
    import sparkcdc

    path = Path(_submit_script())
    assert path.is_file() and path.suffix == ".py"
    assert path.is_relative_to(Path(sparkcdc.__file__).resolve().parent)


def test_run_under_spark_submit_keeps_its_settings_and_takes_run_conf(pg_cluster, db, tmp_path: Path, unique_name: str) -> None:
    table = f"ss_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, v text)")
    db.execute(f"INSERT INTO {table} SELECT g, 'v' || g FROM generate_series(1, 50) g")
    config = tmp_path / "connector.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in properties(pg_cluster, unique_name, [f"public.{table}"]).items()))
    events, output = tmp_path / "events", tmp_path / "out"
    events.mkdir()
    argv = [str(spark_home() / "bin" / "spark-submit"), "--master", "local[1]", "--name", "cdc-by-submit",
            "--conf", "spark.sql.shuffle.partitions=3", "--conf", f"spark.driver.extraJavaOptions={QUICK_JVM}",
            _submit_script(),
            "run", str(config), "--checkpoint", str(tmp_path / "ck"), "--output", str(output), "--once",
            "--summary", str(tmp_path / "summary.json"),
            "--conf", "spark.eventLog.enabled=true", "--conf", f"spark.eventLog.dir={events.as_uri()}",
            "--conf", "spark.eventLog.compress=false", "--conf", "spark.executor.memory=700m"]
    log = tmp_path / "submit.log"
    process = GroupProcess(argv, log, env={"PYSPARK_PYTHON": sys.executable})
    try:
        code = process.wait(240)
    except subprocess.TimeoutExpired:
        process.kill()
        raise
    assert code == 0, log.read_text(errors="replace")[-6000:]
    assert json.loads((tmp_path / "summary.json").read_text())["records"] == 50
    assert len([line for line in output_lines(output) if line["topic"] == f"srv.public.{table}"]) == 50

    (props,) = spark_properties(events)
    assert props["spark.master"] == "local[1]"  # spark-submit's master, not sparkcdc's default
    assert props["spark.app.name"] == "cdc-by-submit"
    assert props["spark.sql.shuffle.partitions"] == "3"  # spark-submit's --conf beats sparkcdc's default (4)
    assert props["spark.ui.enabled"] == "false"  # a default where nobody set one
    assert props["spark.executor.memory"] == "700m"  # run --conf, a static setting, on the new session


def test_run_master_under_spark_submit_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "c.properties"
    config.write_text("database.hostname=127.0.0.1\ndatabase.user=u\ndatabase.dbname=d\ntopic.prefix=p\n")
    log = tmp_path / "submit.log"
    process = GroupProcess([str(spark_home() / "bin" / "spark-submit"), "--master", "local[1]",
                            "--conf", f"spark.driver.extraJavaOptions={QUICK_JVM}", _submit_script(),
                            "run", str(config), "--checkpoint", str(tmp_path / "ck"), "--output", str(tmp_path / "o"),
                            "--master", "local[2]"], log, env={"PYSPARK_PYTHON": sys.executable})
    try:
        code = process.wait(120)
    except subprocess.TimeoutExpired:
        process.kill()
        raise
    text = log.read_text(errors="replace")
    assert code == 2, text[-4000:]
    assert "--master: spark-submit chose the master 'local[1]'" in text
