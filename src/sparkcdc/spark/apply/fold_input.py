"""The fold's input as Spark builds it, the same for ``apply_changes`` and the ``sparkcdc-apply``
sink (:mod:`sparkcdc.spark.sinks.apply_sink`): the delete and truncate flags a spec's conditions
give (Spark SQL expressions, so evaluated in the query: :func:`condition_flag`), a typed column by
its name (:func:`column_named`), and the Arrow schema of the rows the fold reads (:func:`arrow_schema_of`).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema

__all__ = ["arrow_schema_of", "column_named", "condition_flag"]


def condition_flag(expression: str | None) -> Any:
    """A spec's condition (``apply_as_deletes``, ``apply_as_truncates``: Spark SQL) as the flag column
    the fold reads: true where it holds, false where it is false or null, and everywhere without one."""
    return F.lit(False) if expression is None else F.coalesce(F.expr(expression), F.lit(False))


def column_named(name: str) -> Any:
    """A top-level column by its name, whatever characters it holds."""
    return F.col("`" + name.replace("`", "``") + "`")


def arrow_schema_of(frame: DataFrame) -> pa.Schema:
    """The Arrow schema of ``frame``'s rows as the fold reads them (as ``toArrow`` would give them)."""
    large = frame.sparkSession.conf.get("spark.sql.execution.arrow.useLargeVarTypes", "false") == "true"
    return to_arrow_schema(frame.schema, error_on_duplicated_field_names_in_struct=True, timezone="UTC", prefers_large_types=large)
