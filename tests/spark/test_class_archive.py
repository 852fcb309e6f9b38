"""The driver JVM's flags: the class archive (sparkcdc.spark.launch.class_archive), made for one class
path and used only by it, mapped by the driver JVMs sparkcdc starts, and the quick JIT
(sparkcdc.spark.launch.driver_jvm); one's own flags come later and win."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sparkcdc.spark.launch import class_archive
from sparkcdc.spark.launch.driver_jvm import QUICK_JIT, launch_settings
from sparkcdc.spark.launch.spark_defaults import JAVA_OPTIONS


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


def test_a_jar_installed_again_is_another_archive(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The JVM checks every jar's size and modification time against the archive (a mismatch turns
    class sharing off altogether): a Spark installed again at the same path, same jars, is another key."""
    jar = cache / "spark" / "jars" / "spark-core.jar"
    jar.parent.mkdir(parents=True)
    jar.write_bytes(b"PK jar")
    monkeypatch.setenv("SPARK_HOME", str(cache / "spark"))
    before = class_archive.archive_path()
    os.utime(jar, ns=(jar.stat().st_atime_ns, jar.stat().st_mtime_ns + 1_000_000_000))
    assert class_archive.archive_path() != before


def test_the_driver_gets_the_archive_and_the_quick_jit_ahead_of_its_own_flags(cache: Path) -> None:
    options = JAVA_OPTIONS
    assert launch_settings({}) == {options: QUICK_JIT}, "no archive made yet: nothing to map"
    path = _fake_archive()
    assert launch_settings({}) == {options: f"-XX:SharedArchiveFile={path} {QUICK_JIT}"}
    given = {options: "-Dmine=1 -XX:+UseG1GC", "spark.executor.memory": "2g"}
    assert launch_settings(given) == {options: f"-XX:SharedArchiveFile={path} {QUICK_JIT} -Dmine=1 -XX:+UseG1GC",
                                      "spark.executor.memory": "2g"}


def test_spark_defaults_flags_are_kept(cache: Path) -> None:
    (cache / "conf").mkdir()
    (cache / "conf" / "spark-defaults.conf").write_text("# site settings\nspark.driver.extraJavaOptions   -Dsite=1 -Dsite.b=2\n")
    path = _fake_archive()
    assert launch_settings({}) == {JAVA_OPTIONS: f"-XX:SharedArchiveFile={path} {QUICK_JIT} -Dsite=1 -Dsite.b=2"}


@pytest.mark.parametrize("own", ["-Xshare:off", "-XX:SharedArchiveFile=/elsewhere.jsa", "-XX:ArchiveClassesAtExit=/x.jsa"])
def test_own_class_sharing_flags_win(cache: Path, own: str) -> None:
    _fake_archive()
    assert launch_settings({JAVA_OPTIONS: own}) == {JAVA_OPTIONS: f"{QUICK_JIT} {own}"}


@pytest.mark.parametrize("own", ["-XX:TieredStopAtLevel=4", "-XX:-TieredCompilation"])
def test_own_jit_flags_win(cache: Path, own: str) -> None:
    path = _fake_archive()
    assert launch_settings({JAVA_OPTIONS: own}) == {JAVA_OPTIONS: f"-XX:SharedArchiveFile={path} {own}"}


def test_turned_off(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_archive()
    monkeypatch.setenv(class_archive.SWITCH, "off")
    assert launch_settings({}) == {JAVA_OPTIONS: QUICK_JIT}


def test_a_new_driver_jvm_maps_spark_classes_from_the_archive(tmp_path: Path) -> None:
    """The real thing: the archive of this machine's Spark (``make venv`` makes it with ``sparkcdc
    prepare``; made here if missing) is mapped by a driver JVM that ``launch.session`` launches, as
    the JVM's class-loading log shows, and the session works."""
    env = {key: value for key, value in os.environ.items() if key not in (class_archive.SWITCH, "SPARK_CONF_DIR")}
    made = subprocess.run([sys.executable, "-m", "sparkcdc.cli", "prepare"], capture_output=True, text=True, env=env, timeout=900, check=False)
    assert made.returncode == 0, made.stderr
    loaded = tmp_path / "classes.log"
    probe = ("from sparkcdc.spark import launch\n"
             f"spark = launch.session('local[1]', extra={{'spark.driver.extraJavaOptions': '-Xlog:class+load=info:file={loaded}'}})\n"
             "assert spark.range(5).count() == 5\n"
             "spark.stop()\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    # Spark's own classes (lambda forms are made at run time, most of them not archived)
    spark_lines = [line for line in loaded.read_text().splitlines() if " org.apache.spark." in line and "$$Lambda" not in line]
    shared = [line for line in spark_lines if "shared objects file (top)" in line]
    assert len(shared) > 0.95 * len(spark_lines) > 1000, (len(shared), len(spark_lines))
