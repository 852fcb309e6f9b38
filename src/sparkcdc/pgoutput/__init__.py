"""pgoutput: the logical replication message format, decoded without any I/O.

``Decoder(protocol_version).decode(buf)`` turns the payload of one XLogData frame into a typed
message; ``encode(message)`` is its inverse. Nothing here imports a database driver or Spark.
"""

from . import messages
from .decoder import MAX_PROTOCOL_VERSION, MESSAGE_NAMES, MIN_PROTOCOL_VERSION, Decoder
from .encoder import encode, encode_tuple
from .errors import ProtocolError
from .messages import *  # noqa: F403 (the message types are this package's vocabulary)
from .wal import WalMessage

__all__ = [
    *messages.__all__,
    "WalMessage",
    "MAX_PROTOCOL_VERSION",
    "MESSAGE_NAMES",
    "MIN_PROTOCOL_VERSION",
    "Decoder",
    "ProtocolError",
    "encode",
    "encode_tuple",
]
