"""The JVM class archive (sparkcdc.spark.class_archive): made for one class path, used only by it,
and mapped by the driver JVMs sparkcdc starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sparkcdc.spark import class_archive


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(class_archive.DIRECTORY, str(tmp_path / "cache"))
    monkeypatch.delenv(class_archive.SWITCH, raising=False)
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path / "conf"))  # no spark-defaults.conf there
    return tmp_path


def _fake_archive(settings: dict[str, str] | None = None) -> Path:
    path = class_archive.archive_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"archive")
    return path


def test_an_archive_is_named_by_the_class_path_it_was_made_for(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = class_archive.archive_path()
    assert plain == class_archive.archive_path({"spark.executor.memory": "2g"}), "a setting that does not shape the driver JVM"
    assert plain != class_archive.archive_path({"spark.driver.extraClassPath": "/opt/jdbc.jar"})
    assert plain != class_archive.archive_path({"spark.driver.memory": "40g"})
    monkeypatch.setenv("SPARK_CONF_DIR", str(cache / "other-conf"))  # the launcher puts it on the class path
    assert plain != class_archive.archive_path()


def test_the_driver_gets_the_archive_ahead_of_its_own_flags(cache: Path) -> None:
    assert class_archive.driver_java_options({}) == {}, "no archive made yet: nothing to map"
    path = _fake_archive()
    assert class_archive.driver_java_options({}) == {class_archive.JAVA_OPTIONS: f"-XX:SharedArchiveFile={path}"}
    given = {class_archive.JAVA_OPTIONS: "-Dmine=1 -XX:+UseG1GC"}
    assert class_archive.driver_java_options(given) == {class_archive.JAVA_OPTIONS: f"-XX:SharedArchiveFile={path} -Dmine=1 -XX:+UseG1GC"}


def test_spark_defaults_flags_are_kept(cache: Path) -> None:
    (cache / "conf").mkdir()
    (cache / "conf" / "spark-defaults.conf").write_text("# site settings\nspark.driver.extraJavaOptions   -Dsite=1 -Dsite.b=2\n")
    path = _fake_archive()
    assert class_archive.driver_java_options({}) == {class_archive.JAVA_OPTIONS: f"-XX:SharedArchiveFile={path} -Dsite=1 -Dsite.b=2"}


@pytest.mark.parametrize("own", ["-Xshare:off", "-XX:SharedArchiveFile=/elsewhere.jsa", "-XX:ArchiveClassesAtExit=/x.jsa"])
def test_own_class_sharing_flags_win(cache: Path, own: str) -> None:
    _fake_archive()
    assert class_archive.driver_java_options({class_archive.JAVA_OPTIONS: own}) == {}


def test_turned_off(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_archive()
    monkeypatch.setenv(class_archive.SWITCH, "off")
    assert class_archive.driver_java_options({}) == {}


def test_a_new_driver_jvm_maps_spark_classes_from_the_archive(tmp_path: Path) -> None:
    """The real thing: the archive of this machine's Spark (``make venv`` makes it with ``sparkcdc
    prepare``; made here if missing) is mapped by a driver JVM that ``spark_session`` launches, as
    the JVM's class-loading log shows, and the session works."""
    env = {key: value for key, value in os.environ.items() if key not in (class_archive.SWITCH, "SPARK_CONF_DIR")}
    made = subprocess.run([sys.executable, "-m", "sparkcdc.cli", "prepare"], capture_output=True, text=True, env=env, timeout=900, check=False)
    assert made.returncode == 0, made.stderr
    loaded = tmp_path / "classes.log"
    probe = ("from sparkcdc.spark.session import spark_session\n"
             f"spark = spark_session('local[1]', extra={{'spark.driver.extraJavaOptions': '-Xlog:class+load=info:file={loaded}'}})\n"
             "assert spark.range(5).count() == 5\n"
             "spark.stop()\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    # Spark's own classes (lambda forms are made at run time, most of them not archived)
    spark_lines = [line for line in loaded.read_text().splitlines() if " org.apache.spark." in line and "$$Lambda" not in line]
    shared = [line for line in spark_lines if "shared objects file (top)" in line]
    assert len(shared) > 0.95 * len(spark_lines) > 1000, (len(shared), len(spark_lines))
