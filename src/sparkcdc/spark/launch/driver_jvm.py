"""The driver JVM sparkcdc launches: its flags (the class archive, a quick JIT) and its start.

Why a quick JIT (``-XX:TieredStopAtLevel=1``: the C1 compiler only): measured on this project's
two-core machine with ``sparkcdc run --once`` over a 330,000-change backlog (CPU of the run's
process tree from /proc), the driver JVM spent 8.0 s of CPU streaming into topic files and 17.4 s
applying to PostgreSQL, most of it the C2 compiler optimising Spark's code, while the records were
in Python workers the whole time; with C1 only, 4.5 s and 9.3 s, the same batches, and 3 s less to
the query's start. A run's hot loops are Python (decoding, JSON, folding), not the JVM's, so C2's
faster code never repaid its compile time, and it took the cores the workers needed.

A session doing heavy JVM work of its own (large Spark SQL joins and aggregations in a long-lived
local session) may want C2 back: ``-XX:TieredStopAtLevel=4`` in ``spark.driver.extraJavaOptions``
(``--conf`` or ``spark-defaults.conf``) replaces the quick JIT, as does ``-XX:-TieredCompilation``.
Executors of a cluster are other JVMs and keep their own flags.

Two costs of a new driver's start are cut in :func:`launch_driver_jvm` (measured with
``sparkcdc run --once``, a process monitor and py-spy, docs/performance.md "Start-up"):

- PySpark's first py4j call with arguments imports ``pyspark.testing.utils`` (its NumPy argument
  converter asks it whether NumPy is there), which imports pandas: 0.6 s of the driver's Python,
  on the path to the first batch. It is imported beside the JVM's launch instead, while this
  process only waits for the JVM.
- Spark looks for *static* Python data sources (installed ``pyspark_*`` modules with a
  ``DefaultSource``) the first time any data source is resolved, in a Python interpreter of its
  own: 0.5 s to 0.8 s before ``postgres-cdc`` (registered at run time) could even be looked up. A
  JVM sparkcdc launches is for sparkcdc's reads, so it is told there are none. A session one
  starts oneself (sparkcdc then reuses it) or a ``spark-submit``'s JVM still looks them up; in
  sparkcdc's own, register such a source with ``spark.dataSource.register``.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Mapping
from typing import Any

from .class_archive import archive_option
from .spark_defaults import JAVA_OPTIONS, spark_defaults

__all__ = ["QUICK_JIT", "launch_driver_jvm", "launch_settings", "static_data_sources_skipped"]

log = logging.getLogger(__name__)

QUICK_JIT = "-XX:TieredStopAtLevel=1"
#: Flags of one's own that already choose the JIT: the quick JIT then stays out.
_OWN_JIT_FLAGS = ("TieredStopAtLevel", "TieredCompilation")


def launch_settings(settings: Mapping[str, str]) -> dict[str, str]:
    """``settings`` (``--conf``) with the driver's ``spark.driver.extraJavaOptions`` completed.

    Spark takes one value for the setting (``--conf`` over ``spark-defaults.conf``), so sparkcdc's
    flags go ahead of the value that would otherwise apply: every flag of the user's is kept, and
    comes later, so it wins where the JVM takes the last of two."""
    own = settings.get(JAVA_OPTIONS, spark_defaults().get(JAVA_OPTIONS, ""))
    flags = [archive_option(settings, own)]
    if not any(flag in own for flag in _OWN_JIT_FLAGS):
        flags.append(QUICK_JIT)
    given = [flag for flag in flags if flag]
    if not given:
        return dict(settings)
    return {**settings, JAVA_OPTIONS: " ".join([*given, own]).strip()}


#: What PySpark's py4j argument converters import on their first use (pandas among them).
_CONVERTERS_MODULE = "pyspark.testing.utils"
#: Spark's registry of data sources; its companion object holds the static Python data sources.
_DATA_SOURCE_MANAGER = "DataSourceManager$"


def launch_driver_jvm(settings: Mapping[str, str]) -> None:
    """Launch the driver JVM and its py4j gateway with ``settings`` (:func:`launch_settings` applied),
    importing what py4j's first call needs in the meantime; then tell the JVM it has no static
    Python data sources (see the module's docstring)."""
    from pyspark import SparkConf
    from pyspark.core.context import SparkContext

    importer = threading.Thread(target=_import_quietly, args=(_CONVERTERS_MODULE,), name="sparkcdc-py4j-converters", daemon=True)
    importer.start()
    SparkContext._ensure_initialized(conf=SparkConf(loadDefaults=False).setAll(list(launch_settings(settings).items())))
    importer.join()
    _skip_static_data_sources(SparkContext._jvm)


def static_data_sources_skipped(jvm: Any) -> bool:
    """Whether the JVM behind ``jvm`` (a py4j view) has its static Python data sources settled as none."""
    builders = _data_source_manager(jvm).dataSourceBuilders()
    return bool(builders.isDefined()) and int(builders.get().size()) == 0


def _import_quietly(module: str) -> None:
    try:
        importlib.import_module(module)
    except Exception as exc:  # noqa: BLE001 - a head start only: py4j's first call imports it otherwise
        log.debug("importing %s ahead of py4j's first call failed: %s", module, exc)


def _data_source_manager(jvm: Any) -> Any:
    return getattr(jvm.org.apache.spark.sql.execution.datasources, _DATA_SOURCE_MANAGER).__getattr__("MODULE$")


def _skip_static_data_sources(jvm: Any) -> None:
    """Settle the JVM's static Python data sources as none, unless they were looked up already.

    Spark keeps them in ``DataSourceManager.dataSourceBuilders`` (an ``Option``, empty until the
    first lookup fills it): set to an empty map, Spark takes the lookup as done. This is Spark's
    internal state (as Spark 4.3, the version sparkcdc pins, keeps it): where it is not there, the lookup
    simply happens.
    """
    try:
        manager = _data_source_manager(jvm)
        if manager.dataSourceBuilders().isEmpty():
            none = jvm.org.apache.spark.api.python.PythonUtils.toScalaMap(jvm.java.util.HashMap())
            getattr(manager, "dataSourceBuilders_$eq")(jvm.scala.Option.apply(none))
    except Exception as exc:  # noqa: BLE001 - py4j's errors; the lookup then costs its interpreter as before
        log.debug("could not spare Spark's lookup of static Python data sources: %s", exc)
