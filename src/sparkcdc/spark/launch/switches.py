"""The environment switches of the driver's start-up, read one way.

``SPARKCDC_CLASS_ARCHIVE`` (:mod:`.class_archive`) and ``SPARKCDC_PYTHON_FORKS`` (:mod:`.python_forks`)
each turn off one head start of a driver sparkcdc launches; both are read by :func:`turned_off`, so
that the two accept the same words.
"""

from __future__ import annotations

import os

__all__ = ["turned_off"]


def turned_off(variable: str) -> bool:
    """An environment switch of the driver's start-up (``SPARKCDC_CLASS_ARCHIVE``,
    ``SPARKCDC_PYTHON_FORKS``) set to ``off``, ``0``, ``false`` or ``no``."""
    return os.environ.get(variable, "").strip().lower() in ("off", "0", "false", "no")
