"""The one exception the pgoutput decoder raises: :class:`ProtocolError`.

It is the protocol family of sparkcdc's hierarchy (:mod:`sparkcdc.errors`), defined there and
named here too so that the decoder's users need not know the rest of the package. This module is
not compiled with mypyc: a class deriving from ``ValueError`` and from the package's root cannot be.
"""

from __future__ import annotations

from ..errors import ProtocolError

__all__ = ["ProtocolError"]
