"""A subprocess in its own process group, for tests that kill pipelines with SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path


class GroupProcess:
    """``argv`` started in a new session (so its Spark JVM and Python workers die with it), output
    appended to ``log``; ``env`` is added to this process's environment, ``cwd`` is its working directory."""

    def __init__(self, argv: Sequence[str], log: Path, *, env: Mapping[str, str] | None = None, cwd: Path | None = None) -> None:
        self.log = open(log, "ab")  # noqa: SIM115 - closed in kill/wait
        self.process = subprocess.Popen(list(argv), stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
                                        env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}, cwd=cwd)

    def kill(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(60)
        self.log.close()

    def wait(self, timeout: float) -> int:
        code = self.process.wait(timeout)
        self.log.close()
        return code
