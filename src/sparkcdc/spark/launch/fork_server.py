"""A Python process with Spark's and sparkcdc's worker-side modules already imported, that forks the
Python processes a local-mode Spark starts (:mod:`sparkcdc.spark.launch.python_forks` starts it).

Why: in local mode the driver and the executor are one JVM, and Spark starts every Python process
it needs (a data source's ``create_data_source`` and ``plan_data_source_read`` planners, the
streaming source runner, the task workers' daemon) one at a time, under one lock
(``SparkEnv.createPythonWorker`` is ``synchronized``), each importing pyspark and the source's
modules before it answers: the task workers' daemon alone imports for 0.9 s, and every planner
waits for it. Here those imports happen once, beside the JVM's launch; each process Spark starts
is a fork of this one, ready in milliseconds (docs/performance.md, "The fork server").

A request comes from :mod:`sparkcdc.spark.launch.fork_launcher` (the interpreter Spark runs): its
standard streams (as file descriptors), its command line (``-m module args``), environment,
working directory and whether it ignores SIGINT. The child takes them all on, as a fresh
interpreter started that way would have them, and runs the module as ``__main__``; the server
reports the child's process id, and later its exit code, to the launcher. A request whose
interpreter settings differ from the server's own (a ``PYTHON*`` variable such as the hash seed, or
the locale) is refused: the launcher then runs the real interpreter.

The server ends when the driver's Python does (its standard input, a pipe from the driver, closes)
and the last of its children has ended. It is single-threaded: forking is safe.
"""

from __future__ import annotations

import contextlib
import gc
import io
import marshal
import os
import re
import selectors
import shutil
import signal
import socket
import sys
import threading
from dataclasses import dataclass, field

from .fork_launcher import HEADER, REPLY
from .worker_daemon import PRELOADED as TASK_MODULES
from .worker_daemon import preload as preload_modules

try:
    from setproctitle import setproctitle
except ImportError:  # an environment without it: children keep the server's command line
    setproctitle = None

__all__ = ["PRELOADED", "Request", "main", "refusal"]

#: What the processes Spark starts import: the task workers' (:mod:`sparkcdc.spark.launch.worker_daemon`),
#: Spark's daemon, and a Python data source's planners and streaming runner.
PRELOADED = (
    "pyspark.daemon",
    *TASK_MODULES,
    "pyspark.sql.worker.create_data_source",
    "pyspark.sql.streaming.python_streaming_source_runner",
    "pyspark.sql.worker.commit_data_source_write",
    "sparkcdc.spark.launch.worker_daemon",
)
#: Environment variables a Python interpreter reads at its start (the hash seed, ``-X`` options,
#: encodings...): a request must have the server's values. ``PYTHONPATH`` and ``PYTHONUNBUFFERED``
#: are taken on by the child itself.
_AT_START = re.compile(r"PYTHON[A-Z]+|LANG|LC_ALL|LC_CTYPE")
_TAKEN_ON = frozenset({"PYTHONPATH", "PYTHONUNBUFFERED"})
#: Signals this server handles itself; a child gets Python's defaults back.
_OWN_SIGNALS = (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP)
_REQUEST_SECONDS = 30.0
#: The imports yield to the driver JVM's launch, which they overlap (see :func:`preload`).
_PRELOAD_NICENESS = 10


@dataclass
class Request:
    """What a launcher asks for (see the module's docstring)."""

    args: list[str]
    env: dict[str, str]
    cwd: str
    sigint_ignored: bool
    fds: list[int] = field(default_factory=list)

    @property
    def module(self) -> str:
        return self.args[1]


def refusal(request: Request, own: dict[str, str]) -> str | None:
    """Why this server (whose environment at its start was ``own``) cannot stand in for the
    interpreter ``request`` asks for; None when it can."""
    if len(request.args) < 2 or request.args[0] != "-m":
        return f"not a module run: {request.args[:2]}"
    for name in sorted(set(own) | set(request.env)):
        if _AT_START.fullmatch(name) and name not in _TAKEN_ON and own.get(name) != request.env.get(name):
            return f"{name} differs ({own.get(name)!r} here, {request.env.get(name)!r} asked)"
    return None


def preload(modules: tuple[str, ...] = PRELOADED, *, niceness: int = 0) -> list[str]:
    """Import ``modules`` (as :func:`sparkcdc.spark.launch.worker_daemon.preload`: one that cannot be
    imported is skipped, and the child fails, or not, as a fresh interpreter would); then move them
    out of the cyclic collector's sight, so the children do not copy their pages by collecting them.

    ``niceness``: the imports run in a thread of that niceness, so that they take only the CPU the
    driver JVM's launch, beside them, leaves (Linux sets a thread's niceness, not the process's; the
    thread that forks the children, and so the children, keep the server's)."""
    loaded: list[str] = []

    def load() -> None:
        if niceness:
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), niceness)
        loaded.extend(preload_modules(modules, freeze=False))

    loader = threading.Thread(target=load, name="sparkcdc-fork-server-preload")
    loader.start()
    loader.join()
    gc.collect()
    gc.freeze()
    return loaded


class Server:
    """The accept / fork / reap loop (see the module's docstring)."""

    def __init__(self, listener: socket.socket, lifeline: int) -> None:
        self.listener: socket.socket | None = listener
        self.lifeline = lifeline
        self.own_env = dict(os.environ)
        self.children: dict[int, socket.socket] = {}
        self.abandoned: set[int] = set()  # children whose launcher is gone: reaped, not reported
        self.refusals: set[str] = set()
        self.selector = selectors.DefaultSelector()
        self.wakeup_read, self.wakeup_write = os.pipe()

    def serve(self) -> Request | None:
        """Serve until the driver is gone and every child has ended (None), or, in a forked child,
        return that child's request."""
        os.set_blocking(self.wakeup_read, False)
        os.set_blocking(self.wakeup_write, False)
        signal.set_wakeup_fd(self.wakeup_write)
        signal.signal(signal.SIGCHLD, lambda signum, frame: None)
        assert self.listener is not None
        self.selector.register(self.listener, selectors.EVENT_READ, "accept")
        self.selector.register(self.lifeline, selectors.EVENT_READ, "lifeline")
        self.selector.register(self.wakeup_read, selectors.EVENT_READ, "reap")
        while self.listener is not None or self.children or self.abandoned:
            for key, _ in self.selector.select():
                if key.data == "accept":
                    request = self._accept()
                    if request is not None:
                        return request  # in the child
                elif key.data == "lifeline":
                    self._driver_gone()
                elif key.data == "reap":
                    self._reap()
                else:
                    self._launcher_gone(key.data)
        return None

    def _accept(self) -> Request | None:
        assert self.listener is not None
        conn, _ = self.listener.accept()
        try:
            request = _receive(conn)
        except (OSError, ValueError, EOFError, TypeError) as exc:
            print(f"sparkcdc fork server: a bad request ({exc})", file=sys.stderr)
            conn.close()
            return None
        reason = refusal(request, self.own_env)
        if reason is not None:
            if reason not in self.refusals:  # once: every process of that kind is refused alike
                self.refusals.add(reason)
                print(f"sparkcdc fork server: {request.args[:3]} runs in a new interpreter: {reason}", file=sys.stderr)
            _close_all(request.fds)
            with contextlib.suppress(OSError):
                conn.sendall(REPLY.pack(0))
            conn.close()
            return None
        pid = os.fork()
        if pid == 0:
            self._leave(conn)
            return request
        _close_all(request.fds)
        try:
            conn.sendall(REPLY.pack(pid))
        except OSError:  # the launcher is gone already: so must its child be
            os.kill(pid, signal.SIGKILL)
            self.abandoned.add(pid)
            conn.close()
            return None
        self.children[pid] = conn
        self.selector.register(conn, selectors.EVENT_READ, pid)
        return None

    def _leave(self, conn: socket.socket) -> None:
        """In a forked child: close what is the server's, and take Python's signal defaults back."""
        signal.set_wakeup_fd(-1)
        for signum in _OWN_SIGNALS:
            signal.signal(signum, signal.SIG_DFL)
        self.selector.close()
        for sock in (conn, self.listener, *self.children.values()):
            if sock is not None:
                sock.close()
        _close_all([self.wakeup_read, self.wakeup_write])

    def _driver_gone(self) -> None:
        """The driver's Python has ended: no new children; the server ends with its last."""
        self.selector.unregister(self.lifeline)
        if self.listener is not None:
            self.selector.unregister(self.listener)
            self.listener.close()
            self.listener = None

    def _reap(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while os.read(self.wakeup_read, 512):
                pass
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.abandoned.discard(pid)
            conn = self.children.pop(pid, None)
            if conn is not None:
                self.selector.unregister(conn)
                with contextlib.suppress(OSError):
                    conn.sendall(REPLY.pack(os.waitstatus_to_exitcode(status)))
                conn.close()

    def _launcher_gone(self, pid: int) -> None:
        """The launcher closed its end before its child ended (it was killed): so is the child."""
        conn = self.children.pop(pid)
        self.selector.unregister(conn)
        conn.close()
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        self.abandoned.add(pid)


def _receive(conn: socket.socket) -> Request:
    conn.settimeout(_REQUEST_SECONDS)
    header, fds, _, _ = socket.recv_fds(conn, HEADER.size, 3)
    if len(header) != HEADER.size or len(fds) != 3:
        _close_all(fds)
        raise ValueError(f"a request header of {len(header)} bytes and {len(fds)} file descriptors")
    (length,) = HEADER.unpack(header)
    body = bytearray()
    while len(body) < length:
        chunk = conn.recv(length - len(body))
        if not chunk:
            _close_all(fds)
            raise EOFError("the launcher closed its request early")
        body += chunk
    conn.settimeout(None)
    args, env, cwd, sigint_ignored = marshal.loads(bytes(body))
    return Request(list(args), dict(env), str(cwd), bool(sigint_ignored), list(fds))


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def become(request: Request, base_path: list[str], server_pythonpath: str) -> None:
    """Make this forked child the process ``request`` describes, as far as Python code can tell: its
    standard streams, signals, working directory, environment, ``sys.path``, ``sys.argv`` and title."""
    signal.signal(signal.SIGINT, signal.SIG_IGN if request.sigint_ignored else signal.default_int_handler)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    for target, fd in enumerate(request.fds):
        if fd != target:
            os.dup2(fd, target)
            os.close(fd)
    os.chdir(request.cwd)
    os.environ.clear()
    os.environ.update(request.env)
    known = set(server_pythonpath.split(os.pathsep))
    added = [entry for entry in request.env.get("PYTHONPATH", "").split(os.pathsep) if entry and entry not in known]
    sys.path[:] = [request.cwd, *added, *base_path]
    sys.argv = [sys.executable, *request.args[2:]]  # argv[0] becomes the module's file, as with -m
    _fresh_std_streams(unbuffered=bool(request.env.get("PYTHONUNBUFFERED")))
    _retitle([sys.executable, *request.args])


def _fresh_std_streams(*, unbuffered: bool) -> None:
    """New ``sys.stdin``/``stdout``/``stderr`` over file descriptors 0-2, as a fresh interpreter makes
    them (``PYTHONUNBUFFERED``: unbuffered binary layers, written through)."""
    buffering = 0 if unbuffered else -1
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(open(0, "rb", closefd=False), encoding=sys.stdin.encoding,  # noqa: SIM115
                                                 errors=sys.stdin.errors)
    sys.stdout = sys.__stdout__ = io.TextIOWrapper(open(1, "wb", buffering=buffering, closefd=False),  # noqa: SIM115
                                                   encoding=sys.stdout.encoding, errors=sys.stdout.errors,
                                                   write_through=unbuffered)
    sys.stderr = sys.__stderr__ = io.TextIOWrapper(open(2, "wb", buffering=buffering, closefd=False),  # noqa: SIM115
                                                   encoding=sys.stderr.encoding, errors="backslashreplace",
                                                   line_buffering=not unbuffered, write_through=unbuffered)


def _retitle(argv: list[str]) -> None:
    """The child's command line (``ps``, ``/proc/<pid>/cmdline``) as Spark gave it, not the server's."""
    if setproctitle is not None:
        setproctitle(" ".join(argv))


def main(argv: list[str]) -> int:
    """``python -m sparkcdc.spark.launch.fork_server LISTENER_FD``: serve on the listening socket inherited as
    that file descriptor; standard input is the driver's lifeline."""
    listener = socket.socket(fileno=int(argv[1]))
    directory = os.path.dirname(listener.getsockname())
    base_path = sys.path[1:]
    server_pythonpath = os.environ.get("PYTHONPATH", "")
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # its own process group; ended by its lifeline
    if setproctitle is not None:  # it finds the command line's memory by the environment's: before a child changes that
        from setproctitle import getproctitle

        setproctitle(getproctitle())
    preload(niceness=_PRELOAD_NICENESS)
    request = Server(listener, lifeline=0).serve()
    if request is None:
        if os.path.basename(directory).startswith("sparkcdc-python-"):  # made for this server by python_forks
            shutil.rmtree(directory, ignore_errors=True)
        return 0
    become(request, base_path, server_pythonpath)
    import runpy

    # As in a fresh `python -m`: the module runs as __main__ only (preloaded, it is also in
    # sys.modules; runpy would warn of that, and an `import` of it then gets its own copy, as it would).
    sys.modules.pop(request.module, None)
    runpy.run_module(request.module, run_name="__main__", alter_sys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
