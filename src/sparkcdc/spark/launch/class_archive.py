"""A class-data-sharing archive of the classes Spark's driver JVM loads: start-up at half the CPU.

Why: measured on this project's two-core machine, a local driver JVM spent 14 s of CPU from its
launch to the end of its first job, most of it loading, parsing and verifying some 12,000 classes
out of Spark's 280 jars, on the cores the snapshot and the stream need. With a dynamic CDS archive
of those classes (JDK 13 and later: ``-XX:ArchiveClassesAtExit`` makes one as a JVM exits,
``-XX:SharedArchiveFile`` maps it ready-made into the next) the same start took 7.9 s of CPU.

An archive is valid only for the JVM and the class path it was made with, and a JVM handed one
whose class path does not match drops class sharing altogether (the JDK's own base archive with it)
and starts slower than with none. So an archive is named by a key over everything that makes the
driver's JVM and launch class path (the ``java`` binary and its release, Spark's jars with their
sizes and modification times, which the JVM checks, the
configuration directories Spark's launcher puts on the class path, ``spark.driver.extraClassPath``,
the heap size), and a session uses only the archive of its own key.

``sparkcdc prepare`` makes the archive (``make venv`` runs it); sessions sparkcdc starts use it
when it is there. ``SPARKCDC_CLASS_ARCHIVE=off`` turns it off, as does a ``-XX:SharedArchiveFile``,
``-XX:ArchiveClassesAtExit`` or ``-Xshare:off`` of one's own in ``spark.driver.extraJavaOptions``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from ...errors import PipelineError

__all__ = ["ClassArchiveError", "archive_directory", "archive_path", "archive_option", "build", "spark_defaults",
           "turned_off"]

log = logging.getLogger(__name__)

#: The Spark setting the archive's JVM flag goes into, ahead of what is already there.
JAVA_OPTIONS = "spark.driver.extraJavaOptions"
#: Set to ``off`` (or ``0``, ``false``, ``no``) to start the driver JVM without the archive.
SWITCH = "SPARKCDC_CLASS_ARCHIVE"
#: Where the archives are kept, if not under the user's cache directory.
DIRECTORY = "SPARKCDC_CACHE_DIR"
#: Flags of one's own that already decide class sharing: the archive then stays out of the way.
_OWN_SHARING_FLAGS = ("-XX:SharedArchiveFile", "-XX:ArchiveClassesAtExit", "-Xshare:off", "-XX:-UseSharedSpaces")
#: Settings that change the driver JVM's class path or its object layout.
_KEYED_SETTINGS = ("spark.driver.extraClassPath", "spark.driver.memory")
#: Environment variables Spark's launcher builds the class path from.
_KEYED_ENVIRONMENT = ("JAVA_HOME", "SPARK_HOME", "SPARK_CONF_DIR", "HADOOP_CONF_DIR", "YARN_CONF_DIR", "SPARK_DIST_CLASSPATH",
                      "SPARK_PREPEND_CLASSES", "SPARK_SCALA_VERSION")


class ClassArchiveError(PipelineError):
    """The class archive could not be made."""


def turned_off(variable: str) -> bool:
    """An environment switch of the driver's start-up (``SPARKCDC_CLASS_ARCHIVE``,
    ``SPARKCDC_PYTHON_FORKS``) set to ``off``, ``0``, ``false`` or ``no``."""
    return os.environ.get(variable, "").strip().lower() in ("off", "0", "false", "no")


def archive_directory() -> Path:
    explicit = os.environ.get(DIRECTORY)
    if explicit:
        return Path(explicit) / "jvm"
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "sparkcdc" / "jvm"


def archive_path(settings: Mapping[str, str] | None = None) -> Path:
    """Where the archive for a driver JVM launched here with ``settings`` (``--conf``) lives."""
    return archive_directory() / f"classes-{_key(settings or {})}.jsa"


def archive_option(settings: Mapping[str, str], own: str) -> str | None:
    """The JVM flag that maps the archive into a new driver JVM launched with ``settings`` (``--conf``)
    whose own ``spark.driver.extraJavaOptions`` are ``own``: None when there is no archive for it,
    when it is turned off, or when ``own`` decides class sharing itself."""
    if turned_off(SWITCH):
        return None
    if any(flag in own for flag in _OWN_SHARING_FLAGS):
        return None
    path = archive_path(settings)
    if not path.is_file():
        log.info("no JVM class archive for this Spark (%s): `sparkcdc prepare` makes the driver start faster", path)
        return None
    return f"-XX:SharedArchiveFile={path}"


def build(settings: Mapping[str, str] | None = None, *, timeout: float = 600) -> Path:
    """Make the archive for ``settings``: a fresh Python process starts a driver JVM that dumps the
    classes it loaded at its exit, after a training run of what sparkcdc's driver does (Python data
    source planning, a streaming micro-batch into ``foreachBatch``, Arrow exchanges with Python
    workers, Parquet, a shuffle). Written beside its final name and renamed once complete, so a
    session never maps half an archive."""
    settings = dict(settings or {})
    final = archive_path(settings)
    final.parent.mkdir(parents=True, exist_ok=True)
    partial = final.with_name(f"{final.name}.{os.getpid()}.partial")
    partial.unlink(missing_ok=True)
    argv = [sys.executable, "-m", __name__, str(partial), *(f"{key}={value}" for key, value in settings.items())]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env={**os.environ, SWITCH: "off"}, check=False)
    if done.returncode != 0 or not partial.is_file() or partial.stat().st_size == 0:
        partial.unlink(missing_ok=True)
        tail = (done.stderr or done.stdout)[-3000:]
        raise ClassArchiveError(f"the JVM class archive {final} was not made (exit code {done.returncode}): {tail}")
    os.replace(partial, final)
    return final


def _key(settings: Mapping[str, str]) -> str:
    digest = hashlib.sha256()
    for part in _key_parts(settings):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()[:20]


def _key_parts(settings: Mapping[str, str]) -> Iterator[str]:
    java = _java()
    yield java
    release = Path(java).resolve().parent.parent / "release"
    yield release.read_text(errors="replace") if release.is_file() else ""
    jars = _spark_home() / "jars"
    yield str(jars.resolve())  # the class path names the jars by path: another installation is another key
    for jar in sorted(jars.glob("*.jar")) if jars.is_dir() else ():
        facts = jar.stat()  # the JVM checks each jar's size and modification time against the archive's
        yield f"{jar.name}:{facts.st_size}:{facts.st_mtime_ns}"
    defaults = spark_defaults()
    for name in _KEYED_SETTINGS:
        yield f"{name}={settings.get(name, defaults.get(name, ''))}"
    for name in _KEYED_ENVIRONMENT:
        yield f"{name}={os.environ.get(name, '')}"


def _java() -> str:
    """The ``java`` Spark's launcher runs: ``$JAVA_HOME/bin/java``, else the one on the PATH."""
    home = os.environ.get("JAVA_HOME")
    found = os.path.join(home, "bin", "java") if home else shutil.which("java")
    return os.path.realpath(found) if found else ""


def _spark_home() -> Path:
    from pyspark.find_spark_home import _find_spark_home

    return Path(os.environ.get("SPARK_HOME") or _find_spark_home())


def spark_defaults() -> dict[str, str]:
    """``spark-defaults.conf`` as Spark's launcher reads it (``SPARK_CONF_DIR``, else ``conf`` of
    Spark's home): a key, then whitespace or ``=``, then the value."""
    directory = os.environ.get("SPARK_CONF_DIR") or str(_spark_home() / "conf")
    path = Path(directory) / "spark-defaults.conf"
    if not path.is_file():
        return {}
    found: dict[str, str] = {}
    for line in path.read_text(errors="replace").splitlines():
        entry = _DEFAULTS_LINE.match(line.strip())
        if entry and not line.strip().startswith(("#", "!")):
            found[entry.group(1)] = entry.group(2).strip()
    return found


_DEFAULTS_LINE = re.compile(r"([^\s=:]+)\s*[\s=:]\s*(.*)")


def _train(partial: str, settings: dict[str, str]) -> None:
    """The training run, in this process: its driver JVM writes the archive to ``partial`` as it exits."""
    from pyspark.core.context import SparkContext

    from .spark_session import spark_session

    own = settings.get(JAVA_OPTIONS, spark_defaults().get(JAVA_OPTIONS, ""))
    settings[JAVA_OPTIONS] = f"-XX:ArchiveClassesAtExit={partial} -Xlog:cds=off -Xlog:cds+dynamic=off {own}".strip()
    spark = spark_session("local[2]", app_name="sparkcdc-class-archive", extra=settings)
    with tempfile.TemporaryDirectory(prefix="sparkcdc-class-archive-") as work:
        _exercise(spark, Path(work))
    spark.stop()
    gateway = SparkContext._gateway
    process = getattr(gateway, "proc", None)
    if process is None:
        raise ClassArchiveError("the driver JVM was not started by this process (spark-submit?): no archive can be made here")
    process.stdin.close()  # PySpark's gateway JVM exits when its standard input ends, and dumps the archive then
    code = process.wait(timeout=300)
    if code not in (0, None):
        raise ClassArchiveError(f"the driver JVM exited with {code} while writing {partial}")


def _exercise(spark: object, work: Path) -> None:
    from pyspark.sql import SparkSession

    from .. import source

    assert isinstance(spark, SparkSession)
    source.register(spark)
    training = _training_source()
    spark.dataSource.register(training)
    frame = spark.range(0, 100_000, numPartitions=2).selectExpr("id", "cast(id % 97 as string) AS k", "repeat('x', 64) AS v")
    passed = frame.mapInArrow(lambda batches: batches, frame.schema)
    passed.groupBy("k").count().collect()
    passed.write.parquet(str(work / "parquet"))
    spark.read.parquet(str(work / "parquet")).count()

    def each_batch(batch: object, batch_id: int) -> None:
        batch.write.mode("append").parquet(str(work / "stream"))  # type: ignore[attr-defined]

    query = (spark.readStream.format(training.name()).load().writeStream.foreachBatch(each_batch)
             .option("checkpointLocation", str(work / "checkpoint")).trigger(availableNow=True).start())
    query.awaitTermination(300)
    spark.read.parquet(str(work / "stream")).count()


def _training_source() -> type:
    from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
    from pyspark.sql.streaming.datasource import ReadLimit, SupportsTriggerAvailableNow

    class _Range(InputPartition):
        def __init__(self, start: int, end: int) -> None:
            self.start, self.end = start, end

    class _Reader(DataSourceStreamReader, SupportsTriggerAvailableNow):
        def initialOffset(self) -> dict:  # noqa: N802 - Spark's method names
            return {"at": 0}

        def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802
            pass

        def latestOffset(self, start: dict, limit: ReadLimit) -> dict:  # noqa: N802
            return {"at": 2_000}

        def partitions(self, start: dict, end: dict) -> list:
            middle = (start["at"] + end["at"]) // 2
            return [_Range(start["at"], middle), _Range(middle, end["at"])]

        def read(self, partition: InputPartition) -> Iterator[tuple]:
            assert isinstance(partition, _Range)
            for value in range(partition.start, partition.end):
                yield (value, f"row {value}")

        def commit(self, end: dict) -> None:
            pass

    class TrainingSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return "sparkcdc-class-archive-training"

        def schema(self) -> str:
            return "id long, text string"

        def streamReader(self, schema: object) -> DataSourceStreamReader:  # noqa: N802
            return _Reader()

    return TrainingSource


if __name__ == "__main__":
    _train(sys.argv[1], dict(argument.split("=", 1) for argument in sys.argv[2:]))
