"""Exceptions of the apply layer."""

from __future__ import annotations


class ApplyError(RuntimeError):
    """Applying a batch of changes failed."""


class ApplySpecError(ValueError):
    """An ``apply_changes`` parameter is invalid; ``parameter`` names it."""

    def __init__(self, parameter: str, message: str) -> None:
        self.parameter = parameter
        super().__init__(f"{parameter}: {message}")


class TargetError(ApplyError):
    """The target refused the changes or is not in the shape this pipeline expects."""
