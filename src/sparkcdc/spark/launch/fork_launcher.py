"""The "Python interpreter" Spark runs in a local-mode session sparkcdc launches: it has the fork
server (:mod:`sparkcdc.spark.launch.fork_server`) fork the process Spark asked for, and stands for it.

Spark starts ``<python> -m <module> [args]`` for each of its Python processes: the planners of a
data source, the streaming source runner, the task workers' daemon. This launcher hands its
standard streams, arguments, environment and working directory to the fork server, which forks a
child with everything already imported that becomes that process; the launcher then stays as the
process Spark knows: the signals Spark sends it reach the child, and it exits as the child does
(with its exit code, or killed by the same signal). If the launcher is killed outright, the server
kills the child.

Anything the server cannot stand in for (another form of command line, a server that is gone, an
interpreter setting that differs) is run by the real interpreter instead, with ``exec``: nothing is
lost, only the head start.

This file is the launcher's source, not a module sparkcdc imports: :mod:`sparkcdc.spark.launch.python_forks`
writes it out behind a ``#!<python> -IS`` line (isolated, no ``site``: it starts in milliseconds)
with the call of :func:`main` that names the server and the real interpreter. It uses the
standard library only.
"""

from __future__ import annotations

import marshal
import os
import signal
import socket
import struct
import sys

#: Length of the request (big-endian unsigned), then its ``marshal``-ed body.
HEADER = struct.Struct("!I")
#: The server's replies: the child's process id (0: refused), then its exit code.
REPLY = struct.Struct("!q")
#: What Spark (or a user) may send the process it started; each is passed on to the child.
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


class _Forwarder:
    """Signals received before the child's process id is known are kept and sent once it is."""

    def __init__(self) -> None:
        self.child = 0
        self.pending: list[int] = []

    def __call__(self, signum: int, frame: object) -> None:
        if self.child:
            try:
                os.kill(self.child, signum)
            except ProcessLookupError:
                pass
        else:
            self.pending.append(signum)

    def start(self, child: int) -> None:
        self.child = child
        for signum in self.pending:
            self(signum, None)


def _real_python(python: str, args: list[str]) -> None:
    os.execv(python, [python, *args])


def _reply(server: socket.socket) -> int | None:
    """The server's next reply; None when it is gone before sending one."""
    data = b""
    while len(data) < REPLY.size:
        chunk = server.recv(REPLY.size - len(data))
        if not chunk:
            return None
        data += chunk
    return int(REPLY.unpack(data)[0])


def _wait_without_server(child: int) -> int:
    """The server ended before the child: wait for the child's end (its code is the server's to know)."""
    import select

    try:
        handle = os.pidfd_open(child)
    except OSError:
        return 1
    while True:
        try:
            select.select([handle], [], [])
            return 1
        except InterruptedError:
            continue


def _exit_as(code: int) -> None:
    """Exit as the child did: with its code, or killed by the same signal."""
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        code = 128 - code
    os._exit(code)


def main(server_path: str, python: str, args: list[str] | None = None) -> None:
    """Run ``python args`` (this command's arguments) through the fork server at ``server_path``, or
    with ``python`` itself."""
    args = sys.argv[1:] if args is None else args
    if len(args) < 2 or args[0] != "-m":
        _real_python(python, args)
    sigint_ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    forwarder = _Forwarder()
    for signum in FORWARDED:
        if signum != signal.SIGINT or not sigint_ignored:
            signal.signal(signum, forwarder)
    try:
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.connect(server_path)
        body = marshal.dumps((args, dict(os.environ), os.getcwd(), sigint_ignored))
        socket.send_fds(server, [HEADER.pack(len(body))], [0, 1, 2])
        server.sendall(body)
        child = _reply(server)
    except OSError:
        child = None
    if not child:
        if forwarder.pending:  # told to stop before anything ran
            _exit_as(-forwarder.pending[0])
        _real_python(python, args)
        return
    forwarder.start(child)
    code = _reply(server)
    _exit_as(_wait_without_server(child) if code is None else code)
