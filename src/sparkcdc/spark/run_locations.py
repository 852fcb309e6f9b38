"""Where a run keeps what is not in Spark's checkpoint: the streaming state's directory, which the
driver and every executor must name alike.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ..errors import ConfigurationError

__all__ = ["state_location"]


def state_location(configured: str | None, checkpoint: str) -> str:
    """``sparkcdc.state.location`` as an absolute local path (default: ``<checkpoint>/sparkcdc-state``).

    The tasks that read the stream write the state there and the driver reads it back (signals, the
    position to stream from), so every process must name the same directory. An executor resolves a
    relative path against its own working directory (on a standalone worker
    ``<work-dir>/<app id>/<executor id>``), not the driver's: ``--checkpoint ck`` would leave each
    batch's state in the directory of whichever executor ran it. The state store writes with POSIX
    calls, so a checkpoint URI (other than ``file:``) gives no default: the state then needs a
    directory every node mounts, named by the property.
    """
    text = configured or checkpoint
    scheme = re.match(r"([A-Za-z][A-Za-z0-9+.-]+):", text)  # one letter would be a Windows drive
    if scheme and scheme.group(1).lower() == "file":
        parsed = urlsplit(text)
        if parsed.netloc not in ("", "localhost"):
            raise ConfigurationError(f"{text!r} is not a local path", prop="sparkcdc.state.location")
        text = unquote(parsed.path)
    elif scheme:
        raise ConfigurationError(
            f"the checkpoint {checkpoint!r} is not a local path and the streaming state is written with file system calls: "
            "set it to a directory that the driver and every executor mount at the same path"
            if configured is None else f"{text!r}: give a directory that the driver and every executor mount at the same path",
            prop="sparkcdc.state.location")
    path = Path(text).absolute()
    return str(path if configured else path / "sparkcdc-state")
