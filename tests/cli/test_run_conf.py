"""``sparkcdc run --conf KEY=VALUE`` with the real runner and a real SparkSession.

The suite shares one SparkSession (tests/conftest.py), and Spark applies only runtime SQL settings
to a session that already exists: such a setting reaches it, any other is named in a warning
instead of being dropped without a word. A new session taking every setting (static ones, the
JVM's) is shown through spark-submit, in a process of its own (tests/spark/test_spark_submit.py).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sparkcdc.cli.app import app

from ..spark.support import properties


@pytest.mark.slow
def test_conf_reaches_the_session_and_a_static_one_is_named(spark, pg_cluster, db, tmp_path: Path, unique_name: str,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    table = f"conf_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, v text)")
    db.execute(f"INSERT INTO {table} VALUES (1, 'a'), (2, 'b')")
    config = tmp_path / "c.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in properties(pg_cluster, unique_name, [f"public.{table}"]).items()))
    before = spark.conf.get("spark.sql.shuffle.partitions")
    assert before != "7"
    try:
        with caplog.at_level(logging.WARNING, logger="sparkcdc.spark.launch.spark_session"):
            result = CliRunner().invoke(app, [
                "run", str(config), "--checkpoint", str(tmp_path / "ck"), "--output", str(tmp_path / "out"), "--once",
                "--conf", "spark.sql.shuffle.partitions=7", "--conf", "spark.sql.session.timeZone=America/St_Johns",
                "--conf", "spark.executor.memory=3g",
                "--summary", str(tmp_path / "summary.json")])
        assert result.exit_code == 0, result.output
        summary = json.loads((tmp_path / "summary.json").read_text())
        assert summary["records"] == 2
        # the start-up's milestones, from the process's start (here the test process's), in their order
        phases = summary["startup_phases"]
        assert list(phases) == ["runner", "session", "source", "query", "first_batch"], phases
        # (the first batch's trigger may begin a moment before start() returns to the runner)
        assert 0 < phases["runner"] <= phases["session"] <= phases["source"] <= min(phases["query"], phases["first_batch"]), phases
        assert spark.conf.get("spark.sql.shuffle.partitions") == "7"
        assert spark.conf.get("spark.sql.session.timeZone") == "America/St_Johns"  # the value's case is kept
        # a core setting cannot change a running SparkContext: said, not silently dropped
        assert spark.sparkContext.getConf().get("spark.executor.memory") != "3g"
        warned = [r.getMessage() for r in caplog.records if "not applied" in r.getMessage()]
        assert len(warned) == 1 and warned[0].endswith(": spark.executor.memory"), warned
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before)
        spark.conf.unset("spark.sql.session.timeZone")
