"""The engine's exceptions.

Kept apart from the modules that raise them because those may be compiled with mypyc (see
:mod:`sparkcdc.native`), which cannot compile a subclass of ``RuntimeError``.
"""

from __future__ import annotations

from ...errors import ProtocolError

__all__ = ["UnexpectedMessageError", "UnknownRelationError"]


class UnexpectedMessageError(ProtocolError, RuntimeError):
    """A message the connector did not ask for, or one out of transaction order."""


class UnknownRelationError(ProtocolError, LookupError):
    """A data message names a relation OID no Relation message has described yet."""
