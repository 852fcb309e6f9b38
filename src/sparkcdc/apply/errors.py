"""Exceptions of the apply layer (in sparkcdc's hierarchy: :mod:`sparkcdc.errors`)."""

from __future__ import annotations

from ..errors import ConfigurationError, DestinationError


class ApplyError(DestinationError):
    """Applying a batch of changes failed."""


class ApplySpecError(ConfigurationError):
    """An ``apply_changes`` parameter is invalid; ``parameter`` (also ``property``) names it."""

    def __init__(self, message: str, *, prop: str) -> None:
        self.parameter = prop
        super().__init__(message, prop=prop)


class TargetError(ApplyError):
    """The target refused the changes or is not in the shape this pipeline expects."""
