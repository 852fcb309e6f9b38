"""``apply_changes``: the ``postgres-cdc`` source applied to mirror tables, exactly once."""

from .applier import (
    _CENSUS_SCHEMA,
    SUMMARY,
    ApplyStats,
    ChangeApplier,
    StageTask,
    _condition,
    apply_changes,
    evolution_policy,
    target_columns,
)

__all__ = ["ApplyStats", "ChangeApplier", "StageTask", "apply_changes"]
__all__ += ["_CENSUS_SCHEMA", "SUMMARY", "_condition", "evolution_policy", "target_columns"]  # until split
