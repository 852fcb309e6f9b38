"""Where ``sparkcdc run`` puts the streaming state: one absolute directory every process names alike.

On a cluster an executor resolves a relative path against its own working directory, so the runner
makes the state location absolute on the driver (tests/spark/test_standalone_cluster.py shows it on
a real standalone cluster); a checkpoint URI gives no local default and is refused before Spark starts.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkcdc.errors import ConfigurationError
from sparkcdc.spark.run_locations import state_location
from sparkcdc.spark.runner import run_pipeline


def test_a_relative_checkpoint_gives_an_absolutestate_location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert state_location(None, "ck") == str(tmp_path / "ck" / "sparkcdc-state")
    assert state_location(None, str(tmp_path / "ck")) == str(tmp_path / "ck" / "sparkcdc-state")
    assert state_location(None, f"file://{tmp_path}/ck") == str(tmp_path / "ck" / "sparkcdc-state")


def test_a_configured_state_location_is_kept_and_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert state_location("state", "s3a://bucket/ck") == str(tmp_path / "state")
    assert state_location("/mnt/shared/state", "ck") == "/mnt/shared/state"
    assert state_location("file:///mnt/shared/state", "ck") == "/mnt/shared/state"


@pytest.mark.parametrize(("configured", "checkpoint"), [(None, "s3a://bucket/ck"), (None, "hdfs://nn:8020/ck"),
                                                        ("s3a://bucket/state", "ck"), ("file://elsewhere/state", "ck")])
def test_a_location_that_is_not_a_local_path_is_refused(configured: str | None, checkpoint: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        state_location(configured, checkpoint)
    assert info.value.property == "sparkcdc.state.location"


def test_run_refuses_a_uri_checkpoint_without_a_state_location_before_spark_starts(tmp_path: Path) -> None:
    props = {"name": "c", "database.hostname": "127.0.0.1", "database.user": "u", "database.dbname": "d",
             "topic.prefix": "p"}
    with pytest.raises(ConfigurationError, match="sparkcdc.state.location"):
        run_pipeline(props, output=tmp_path / "out", checkpoint="s3a://bucket/ck", once=True)
