"""What Spark's launcher reads before a driver JVM starts: Spark's home and its ``spark-defaults.conf``.

Why a module of its own: the driver JVM's flags (:mod:`.driver_jvm`), the class archive's key
(:mod:`.class_archive`), its training run (:mod:`.archive_training`) and the fork server's decision
(:mod:`.spark_session`) all need the value a setting would have when ``--conf`` does not give it, read
as Spark's launcher reads it; none of them is the others' source of it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = ["JAVA_OPTIONS", "spark_defaults", "spark_home"]

#: The Spark setting sparkcdc's driver JVM flags go into, ahead of what is already there.
JAVA_OPTIONS = "spark.driver.extraJavaOptions"

_DEFAULTS_LINE = re.compile(r"([^\s=:]+)\s*[\s=:]\s*(.*)")


def spark_home() -> Path:
    """``SPARK_HOME``, else the Spark installation PySpark finds (its own, in a pip install)."""
    from pyspark.find_spark_home import _find_spark_home

    return Path(os.environ.get("SPARK_HOME") or _find_spark_home())


def spark_defaults() -> dict[str, str]:
    """``spark-defaults.conf`` as Spark's launcher reads it (``SPARK_CONF_DIR``, else ``conf`` of
    Spark's home): a key, then whitespace or ``=``, then the value."""
    directory = os.environ.get("SPARK_CONF_DIR") or str(spark_home() / "conf")
    path = Path(directory) / "spark-defaults.conf"
    if not path.is_file():
        return {}
    found: dict[str, str] = {}
    for line in path.read_text(errors="replace").splitlines():
        entry = _DEFAULTS_LINE.match(line.strip())
        if entry and not line.strip().startswith(("#", "!")):
            found[entry.group(1)] = entry.group(2).strip()
    return found
