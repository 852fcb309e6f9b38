"""The error a connector property's value raises, wherever it is read.

Why a module of its own: :mod:`.config` checks a configuration and raises it, and so do the modules
that read one family of properties for it (:mod:`.topic_creation` with ``topic.creation.*``), which
:mod:`.config` calls; the error belongs to neither side, so that neither imports the other for it.
"""

from __future__ import annotations

from ..errors import ConfigurationError

__all__ = ["ConfigError"]


class ConfigError(ConfigurationError):
    """A configuration property (``property``) is missing or has an invalid value."""

    property: str

    def __init__(self, prop: str, message: str) -> None:
        super().__init__(message, prop=prop)
