"""A throwaway PostgreSQL cluster for tests, benchmarks and ``make demo``.

Logical decoding needs a server whose configuration we control (``wal_level=logical``, slots, WAL
senders, prepared transactions), and tests must never touch a shared server. So every run gets its
own cluster: ``initdb`` into a temporary directory, a free port on 127.0.0.1, a private socket
directory, and everything deleted afterwards.

``initdb`` refuses to run as root; when we are root the server binaries run as the ``postgres`` OS
user through ``runuser`` and the temporary directory is handed to that user.
"""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType

from . import environment
from .errors import ServerError

__all__ = ["ClusterError", "ThrowawayCluster", "find_postgres_bindir"]

DEFAULT_SETTINGS: dict[str, str] = {
    "wal_level": "logical",
    "max_replication_slots": "40",
    "max_wal_senders": "40",
    "max_prepared_transactions": "20",
    "max_connections": "200",
    "synchronous_commit": "on",
    "timezone": "UTC",
    "log_timezone": "UTC",
    # A throwaway cluster never needs crash safety of its own files; tests that kill the server use
    # ``stop(mode="immediate")``, after which PostgreSQL's own WAL replay still makes it consistent.
    "fsync": "off",
    "full_page_writes": "off",
    "log_line_prefix": "%m [%p] %q%a ",
    "log_min_messages": "warning",
}


class ClusterError(ServerError):
    """The throwaway cluster could not be created, started or stopped."""


def find_postgres_bindir(minimum_major: int = 15) -> Path:
    """Locate the server binaries (``initdb``, ``pg_ctl``).

    ``SPARKCDC_PG_BINDIR`` wins; otherwise the newest ``/usr/lib/postgresql/<major>/bin`` that is at
    least ``minimum_major``; otherwise ``pg_config --bindir``.
    """
    override = environment.value("SPARKCDC_PG_BINDIR")
    if override:
        path = Path(override)
        if not (path / "initdb").exists():
            raise ClusterError(f"SPARKCDC_PG_BINDIR={override} has no initdb")
        return path
    candidates = []
    root = Path("/usr/lib/postgresql")
    if root.is_dir():
        for entry in root.iterdir():
            if entry.name.isdigit() and int(entry.name) >= minimum_major and (entry / "bin" / "initdb").exists():
                candidates.append((int(entry.name), entry / "bin"))
    if candidates:
        return max(candidates)[1]
    pg_config = shutil.which("pg_config")
    if pg_config:
        bindir = Path(subprocess.run([pg_config, "--bindir"], check=True, capture_output=True, text=True).stdout.strip())
        if (bindir / "initdb").exists():
            return bindir
    raise ClusterError(
        f"no PostgreSQL >= {minimum_major} server binaries found; install postgresql-{minimum_major} "
        "or set SPARKCDC_PG_BINDIR"
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ThrowawayCluster:
    """A private PostgreSQL cluster that lives as long as this object (or its ``with`` block).

    ``settings`` are added to (and override) ``DEFAULT_SETTINGS``. The server log is kept in
    ``log_path`` so that a failing test can show it.

    ``hba``: the host lines of ``pg_hba.conf`` instead of initdb's (which trusts every local TCP
    connection), e.g. ``hostssl all all 127.0.0.1/32 scram-sha-256`` for a server that takes TLS
    and passwords only. The Unix socket stays trusted (a ``local`` line comes first): ``pg_ctl -w``
    and :meth:`set_password` manage the server through it.

    ``files``: files written into the data directory (name relative to it -> content), readable by
    the server's OS user only (mode 0600, owned by ``postgres`` when we are root), as the server
    requires of its private keys; settings name them relative to the data directory
    (``ssl_key_file=server.key``).
    """

    def __init__(
        self,
        settings: Mapping[str, str | int] | None = None,
        *,
        bindir: Path | None = None,
        base_dir: str | None = None,
        keep: bool = False,
        hba: Sequence[str] | None = None,
        files: Mapping[str, bytes | str] | None = None,
        initialise: Callable[[ThrowawayCluster], None] | None = None,
    ) -> None:
        #: How the data directory is made, instead of ``initdb`` (see :meth:`_create`).
        self.initialise = initialise
        self.settings = {**DEFAULT_SETTINGS, **{k: str(v) for k, v in (settings or {}).items()}}
        self.hba = None if hba is None else list(hba)
        self.files = {name: content.encode() if isinstance(content, str) else content for name, content in (files or {}).items()}
        self.bindir = bindir or find_postgres_bindir()
        self.keep = keep
        self.host = "127.0.0.1"
        self.port = 0
        self.user = "postgres"
        self._base_dir = base_dir
        self._root: Path | None = None
        self._running = False
        self._as_postgres_user = os.geteuid() == 0

    # -- paths -----------------------------------------------------------------------------------
    @property
    def root(self) -> Path:
        if self._root is None:
            raise ClusterError("cluster has not been created; call start() first")
        return self._root

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def log_path(self) -> Path:
        return self.root / "server.log"

    @property
    def socket_dir(self) -> Path:
        return self.root

    @property
    def running(self) -> bool:
        return self._running

    # -- connection strings ----------------------------------------------------------------------
    def conninfo(self, dbname: str = "postgres", **params: str | int) -> str:
        """A libpq keyword/value connection string for this cluster."""
        parts = {"host": self.host, "port": self.port, "user": self.user, "dbname": dbname, **params}
        return " ".join(f"{key}={_quote_conninfo_value(str(value))}" for key, value in parts.items())

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://{self.user}@{self.host}:{self.port}/{dbname}"

    def socket_conninfo(self, dbname: str = "postgres") -> str:
        """A connection through the cluster's Unix socket (trusted whatever ``hba`` says)."""
        return self.conninfo(dbname, host=str(self.socket_dir))

    def set_password(self, role: str, password: str) -> None:
        """Give ``role`` a password, hashed here as the server's ``password_encryption`` asks (so the
        clear text never reaches the server, nor its log)."""
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.socket_conninfo(), autocommit=True) as conn:
            algorithm = conn.execute("SHOW password_encryption").fetchone()[0]  # type: ignore[index]
            hashed = conn.pgconn.encrypt_password(password.encode(), role.encode(), algorithm.encode()).decode()
            conn.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(sql.Identifier(role), sql.Literal(hashed)))

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> ThrowawayCluster:
        """Create the cluster on first use, then start the server and wait until it accepts connections."""
        if self._running:
            return self
        if self._root is None:
            self._create()
        last_error = ""
        # The free port may be taken between our probe and the server's bind; try a few.
        for _ in range(5):
            if not self.port:
                self.port = _free_port()
            options = " ".join(
                [f"-c port={self.port}", f"-c listen_addresses={self.host}", f"-c unix_socket_directories={self.socket_dir}"]
            )
            result = self._run(
                [str(self.bindir / "pg_ctl"), "-D", str(self.data_dir), "-l", str(self.log_path), "-w", "-t", "60",
                 "-o", options, "start"],
                check=False,
            )
            if result.returncode == 0:
                self._running = True
                atexit.register(self._atexit_cleanup)
                return self
            last_error = result.stdout + result.stderr + self.server_log(tail_lines=20)
            if "could not bind" in last_error or "Address already in use" in last_error:
                self.port = 0
                continue
            break
        raise ClusterError(f"PostgreSQL did not start:\n{last_error}")

    def stop(self, mode: str = "fast") -> None:
        """Stop the server. ``mode="immediate"`` simulates a crash (no shutdown checkpoint)."""
        if not self._running:
            return
        result = self._run(
            [str(self.bindir / "pg_ctl"), "-D", str(self.data_dir), "-m", mode, "-w", "-t", "60", "stop"], check=False
        )
        if result.returncode != 0 and self._postmaster_alive():
            raise ClusterError(f"pg_ctl stop -m {mode} failed: {result.stdout}{result.stderr}")
        self._running = False

    def promote(self) -> None:
        """End a standby's recovery (``pg_ctl promote``) and wait until it accepts writes."""
        self.run_tool([str(self.bindir / "pg_ctl"), "-D", str(self.data_dir), "-w", "-t", "60", "promote"], what="pg_ctl promote")

    def restart(self, mode: str = "fast") -> None:
        self.stop(mode)
        self.start()

    def destroy(self) -> None:
        """Stop the server and delete every file of the cluster (unless ``keep``)."""
        try:
            self.stop("fast")
        except ClusterError:
            self.stop("immediate")
        if self._root is not None and not self.keep:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None

    def __enter__(self) -> ThrowawayCluster:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.destroy()

    def server_log(self, tail_lines: int | None = None, since_offset: int = 0) -> str:
        """The server log, optionally only its end or what was written after ``since_offset``."""
        if self._root is None or not self.log_path.exists():
            return ""
        with open(self.log_path, "rb") as handle:
            handle.seek(since_offset)
            text = handle.read().decode("utf-8", errors="replace")
        if tail_lines is not None:
            text = "\n".join(text.splitlines()[-tail_lines:])
        return text

    def log_size(self) -> int:
        return self.log_path.stat().st_size if self._root is not None and self.log_path.exists() else 0

    def server_pid(self) -> int | None:
        pid_file = self.data_dir / "postmaster.pid"
        try:
            return int(pid_file.read_text().splitlines()[0])
        except (OSError, ValueError, IndexError):
            return None

    # -- internals -------------------------------------------------------------------------------
    def _create(self) -> None:
        root = Path(tempfile.mkdtemp(prefix="sparkcdc-pg-", dir=self._base_dir))
        if self._as_postgres_user:
            shutil.chown(root, user="postgres", group="postgres")
            root.chmod(0o700)
        self._root = root
        try:
            if self.initialise is not None:
                # Another way to the data directory (pg_basebackup for a standby, a copy of another
                # cluster's): the callable fills ``data_dir`` (with :meth:`run_tool`, as the server's user).
                self.initialise(self)
            else:
                self.run_tool([str(self.bindir / "initdb"), "-D", str(self.data_dir), "-U", self.user, "-A", "trust",
                               "-E", "UTF8", "--locale=C", "--no-sync"], what="initdb")
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            self._root = None
            raise
        with open(self.data_dir / "postgresql.conf", "a", encoding="utf-8") as conf:
            conf.write("\n# sparkcdc throwaway cluster\n")
            for key, value in self.settings.items():
                conf.write(f"{key} = '{value}'\n")
        if self.hba is not None:
            lines = ["# sparkcdc throwaway cluster: the socket for its management, then the given lines",
                     "local all all trust", *self.hba]
            self._write_private("pg_hba.conf", ("\n".join(lines) + "\n").encode())
        for name, content in self.files.items():
            self._write_private(name, content)

    def _write_private(self, name: str, content: bytes) -> None:
        """A file of the data directory only the server's OS user can read (as it requires of keys)."""
        path = self.data_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
        path.chmod(0o600)
        if self._as_postgres_user:
            shutil.chown(path, user="postgres", group="postgres")

    def run_tool(self, argv: list[str], *, what: str) -> str:
        """Run one of the server's tools (``argv[0]`` a path, usually in ``bindir``) as the server's OS
        user; its output, or :class:`ClusterError` saying ``what`` failed and what the tool wrote."""
        result = self._run(argv, check=False)
        if result.returncode != 0:
            raise ClusterError(f"{what} failed:\n{result.stdout}{result.stderr}")
        return result.stdout

    def _run(self, argv: list[str], *, check: bool) -> subprocess.CompletedProcess[str]:
        if self._as_postgres_user:
            argv = ["runuser", "-u", "postgres", "--", *argv]
        env = {**os.environ, "LC_ALL": "C", "TZ": "UTC"}
        return subprocess.run(argv, check=check, capture_output=True, text=True, env=env, cwd="/")

    def _postmaster_alive(self) -> bool:
        pid = self.server_pid()
        if pid is None:
            return False
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def _atexit_cleanup(self) -> None:
        # A test run that dies without its fixtures' teardown must not leave servers behind.
        if self._running or self._root is not None:
            try:
                self.destroy()
            except ClusterError:
                pass


def _quote_conninfo_value(value: str) -> str:
    if value and all(ch not in value for ch in " '\\"):
        return value
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
