"""What sparkcdc.spark.launch.spark_session decides before Spark starts: a packed environment's relative
interpreter path must resolve on the driver too (the source's planning runs it there)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkcdc.errors import ConfigurationError
from sparkcdc.spark.launch.spark_session import _check_on_the_driver


def test_a_relative_python_missing_in_the_drivers_directory_is_refused_with_the_way_out(tmp_path: Path,
                                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigurationError) as info:
        _check_on_the_driver("./environment/bin/python")
    assert info.value.property == "spark.pyspark.python"
    assert str(tmp_path) in str(info.value) and "tar -xzf ENV.tar.gz -C environment" in str(info.value)


def test_a_python_the_driver_can_start_passes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "environment" / "bin").mkdir(parents=True)
    (tmp_path / "environment" / "bin" / "python").symlink_to("/usr/bin/env")
    _check_on_the_driver("./environment/bin/python")  # unpacked (or linked) in the driver's directory too
    _check_on_the_driver("python3")  # found on PATH, by the driver and the executors alike
    _check_on_the_driver("/opt/python/bin/python3")  # absolute: the same installation on every node
