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
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

from ...environment import switch
from ...errors import PipelineError
from .spark_defaults import spark_defaults, spark_home

__all__ = ["ClassArchiveError", "TRAINING_MODULE", "archive_directory", "archive_option", "archive_path", "build"]

log = logging.getLogger(__name__)

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
#: The module a fresh Python runs to make an archive (``python -m``, see :func:`build`).
TRAINING_MODULE = "sparkcdc.spark.launch.archive_training"


class ClassArchiveError(PipelineError):
    """The class archive could not be made."""


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
    if not switch(SWITCH):
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
    argv = [sys.executable, "-m", TRAINING_MODULE, str(partial), *(f"{key}={value}" for key, value in settings.items())]
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
    jars = spark_home() / "jars"
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
