"""Where applied changes land: PostgreSQL (COPY + MERGE) and Delta Lake (deltalake)."""

from .base import ApplyTarget, TargetColumn, target_for

__all__ = ["ApplyTarget", "TargetColumn", "target_for"]
