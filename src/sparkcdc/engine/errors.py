"""The engine's exceptions.

Kept apart from the modules that raise them because those may be compiled with mypyc (see
:mod:`sparkcdc.native`), which cannot compile a subclass of ``RuntimeError``.
"""

from __future__ import annotations

__all__ = ["UnexpectedMessageError"]


class UnexpectedMessageError(RuntimeError):
    """A message the connector did not ask for, or one out of transaction order."""
