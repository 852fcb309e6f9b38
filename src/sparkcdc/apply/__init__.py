"""Applying change events to tables: SCD type 1 mirrors and SCD type 2 histories, exactly once.

Runtime-free (pyarrow and the standard library): :mod:`.fold` turns one micro-batch of a table's
typed changes into what a target must do, :mod:`.targets` do it atomically together with the
position that makes a replayed batch change nothing. ``sparkcdc.spark.apply`` feeds it from Spark.
"""

from .errors import ApplyError, ApplySpecError, TargetError
from .spec import ApplySpec

__all__ = ["ApplyError", "ApplySpec", "ApplySpecError", "TargetError"]
