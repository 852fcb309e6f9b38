"""What the driver readies a target table with, the same for ``apply_changes`` and the
``sparkcdc-apply`` sink (:mod:`sparkcdc.spark.sinks.apply_sink`): the target's columns and sequence
columns from the table's view (:func:`target_columns`), the values older rows take in added columns
(:func:`typed_fills`), and the schema evolution policy the properties set (:func:`evolution_policy`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from ...apply.evolution import EvolutionPolicy
from ...apply.spec import ResolvedSpec
from ...apply.target_column import TargetColumn
from ..views.model import TableView
from ..views.versions import fill_expression

__all__ = ["evolution_policy", "target_columns", "typed_fills"]


def target_columns(resolved: ResolvedSpec, view: Any, schema: pa.Schema) -> tuple[list[TargetColumn], list[TargetColumn]]:
    """The target's columns and sequence columns of a table: their Arrow types as the typed changes
    (``schema``) have them, PostgreSQL types, nullability and source identity as its view says."""
    by_name = {c.name: c for c in view.columns}
    columns = [
        TargetColumn(name, schema.field(name).type, by_name[name].pg_type, by_name[name].nullable, attnum=by_name[name].attnum,
                     fill_known=by_name[name].fill_known or by_name[name].dropped, dropped=by_name[name].dropped)
        for name in resolved.columns
    ]
    sequence = [TargetColumn(name, schema.field(name).type, None, False) for name in resolved.sequence]
    return columns, sequence


def typed_fills(spark: Any, view: TableView, columns: Sequence[TargetColumn]) -> list[TargetColumn]:
    """``columns`` with the value (as the target stores it) that rows older than each take, where
    PostgreSQL gave them one (:attr:`ViewColumn.fill`): one small Spark job types them all with
    their codecs, as the changes are typed."""
    by_name = {c.name: c for c in view.columns}
    expressions = {c.name: fill_expression(by_name[c.name]) for c in columns}
    wanted = {name: text for name, text in expressions.items() if text is not None}
    if not wanted:
        return list(columns)
    row = spark.range(1).selectExpr(*[f"{text} AS {_quoted(name)}" for name, text in wanted.items()]).toArrow()
    return [dataclasses.replace(c, fill=row.column(c.name)[0].cast(c.arrow_type).as_py()) if c.name in wanted else c
            for c in columns]


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def evolution_policy(config: Any) -> EvolutionPolicy:
    """The schema evolution policy the properties set (``sparkcdc.apply.schema.*``)."""
    return EvolutionPolicy(config.settings.sparkcdc_apply_schema_evolution or "evolve",
                           config.settings.sparkcdc_apply_schema_dropped_columns or "keep")
