"""Exceptions of the apply layer (in sparkcdc's hierarchy: :mod:`sparkcdc.errors`)."""

from __future__ import annotations

from ..errors import ConfigurationError, DestinationError


class ApplyError(DestinationError):
    """Applying a batch of changes failed."""


class ApplySpecError(ConfigurationError):
    """An ``apply_changes`` parameter is invalid; ``parameter`` (also ``property``) names it."""

    def __init__(self, parameter: str, message: str) -> None:
        self.parameter = parameter
        super().__init__(message, prop=parameter)


class TargetError(ApplyError):
    """The target refused the changes or is not in the shape this pipeline expects."""
