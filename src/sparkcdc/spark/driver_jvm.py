"""The flags sparkcdc gives a driver JVM it launches: the class archive, and a quick JIT.

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
"""

from __future__ import annotations

from collections.abc import Mapping

from .class_archive import JAVA_OPTIONS, archive_option, spark_defaults

__all__ = ["QUICK_JIT", "launch_settings"]

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
