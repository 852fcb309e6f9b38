"""spark-submit's entry point: ``spark-submit [options] <this file> run CONFIG --checkpoint DIR ...``.

spark-submit needs the path of a ``.py`` file (``sparkcdc submit-script`` prints this one's); the
arguments after it are ``sparkcdc``'s. The session is spark-submit's: its ``--master``, ``--conf``
and ``--name`` stay as given (:mod:`sparkcdc.spark.launch.spark_session`), so ``run --master`` is refused here.
The driver's Python (spark-submit's ``spark.pyspark.driver.python``, ``PYSPARK_DRIVER_PYTHON`` or
``PYSPARK_PYTHON``) must have sparkcdc installed.
"""

from __future__ import annotations

import os
import sys


def _main() -> None:
    # Python puts the script's own directory first on sys.path: the modules beside this file
    # (sparkcdc.cli's) must not be importable as top-level modules.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    from sparkcdc.cli.app import main

    main()


if __name__ == "__main__":
    _main()
