"""A TCP proxy between sparkcdc and PostgreSQL that can make a connection go silent without closing it.

A network path that stops forwarding (a dead router, a NAT or proxy that dropped its state) sends
no FIN and no RST: both ends keep an open socket and simply hear nothing. This proxy reproduces
that: :meth:`TcpProxy.silence_next_replication_status` picks the next replication connection that
sends a standby status update asking for a reply and from then on forwards nothing on it, either way, keeping both of
its sockets open. Every other connection (SQL connections, later replication connections) is
forwarded as usual.

The proxy runs in a process of its own (``python -m tests.support.tcp_proxy HOST PORT``, driven
over its stdin and stdout by :class:`TcpProxy`): a libpq connect made through psycopg's ``pq``
binding (what the replication reader uses) blocks holding the GIL, so a proxy thread in the same
process could not forward the connection it waits for. Inside, plain threads and ``select``; a
connection's loop polls with a short timeout only to notice ``close()``, never to wait for the test.
"""

from __future__ import annotations

import json
import re
import select
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["TcpProxy"]

#: A CopyData message ('d', length 38) carrying a standby status update ('r'): what a replication
#: client sends to confirm positions and to ask the walsender for a reply.
_STATUS_UPDATE = b"d\x00\x00\x00\x26r"
#: The startup packet of a replication connection holds this parameter (``replication=database``).
_REPLICATION_STARTUP = b"replication\x00database\x00"
#: A CopyData message from the walsender carrying WAL data (XLogData, 'w'): 'd', a 4-byte length, 'w'.
_XLOG_DATA = re.compile(rb"d[\x00-\xff]{4}w")


@dataclass
class Link:
    """One client connection and its upstream connection."""

    client: socket.socket
    upstream: socket.socket
    seen: bytearray = field(default_factory=bytearray)  # the client's first bytes (its startup packet)
    silenced: bool = False
    closed: bool = False

    @property
    def replication(self) -> bool:
        return _REPLICATION_STARTUP in self.seen


class TcpProxy:
    """The proxy process: listens on 127.0.0.1 (``port``), forwards to ``target_host:target_port``."""

    def __init__(self, target_host: str, target_port: int) -> None:
        root = Path(__file__).resolve().parents[2]
        self._process = subprocess.Popen([sys.executable, "-m", "tests.support.tcp_proxy", target_host, str(target_port)],
                                         cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self.port = int(self._ask("port"))
        #: Set once the proxy silenced a connection (see silence_next_replication_status).
        self.silenced = threading.Event()

    def _ask(self, command: str) -> str:
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(command + "\n")
        self._process.stdin.flush()
        return self._process.stdout.readline().strip()

    def silence_next_replication_status(self) -> None:
        """The next standby status update asking for a reply that a replication connection sends is not forwarded, nor is
        anything after it on that connection, either way; its sockets stay open."""
        self.silenced.clear()
        assert self._ask("silence") == "armed"

    def silence_next_replication_data(self) -> None:
        """The next WAL data (XLogData) the walsender sends on a replication connection is not forwarded, nor is
        anything after it on that connection, either way; its sockets stay open. The reader is then mid-stream,
        short of what it was sent to read, so it waits and asks for a reply (a status update armed silencing
        needs may never come while data flows)."""
        self.silenced.clear()
        assert self._ask("silence-data") == "armed"

    def silenced_links(self) -> list[dict[str, bool]]:
        """The silenced connections, each as ``{"closed": ...}``: whether the proxy saw it closed."""
        links = json.loads(self._ask("links"))
        if links:
            self.silenced.set()
        return links

    def close(self) -> None:
        if self._process.poll() is None:
            self._process.stdin.close()  # type: ignore[union-attr]
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()

    def __enter__(self) -> TcpProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Proxy:
    """Inside the proxy process: the listener and the forwarding threads."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.links: list[Link] = []
        self._lock = threading.Lock()
        self._armed: str | None = None  # "status" or "data": what silences the next replication link
        self._closing = threading.Event()
        #: Set when a connection has been silenced (see silence_next_replication_status).
        self.silenced = threading.Event()
        threading.Thread(target=self._accept, name="tcp-proxy-accept", daemon=True).start()

    def silence_next_replication_status(self) -> None:
        """The next standby status update asking for a reply that a replication connection sends is not forwarded, nor is
        anything after it on that connection, either way; its sockets stay open."""
        self.silence_next("status")

    def silence_next(self, kind: str) -> None:
        """Arms the proxy: the next replication link is silenced at ``kind`` ("status": the client's status
        update asking for a reply; "data": the walsender's next XLogData)."""
        with self._lock:
            self._armed = kind
            self.silenced.clear()

    def silenced_links(self) -> list[Link]:
        with self._lock:
            return [link for link in self.links if link.silenced]

    def close(self) -> None:
        self._closing.set()
        self._listener.close()
        with self._lock:
            links = list(self.links)
        for link in links:
            for sock in (link.client, link.upstream):
                try:
                    sock.close()
                except OSError:
                    pass

    def _accept(self) -> None:
        while not self._closing.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            try:
                upstream = socket.create_connection(self.target, timeout=10)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            link = Link(client, upstream)
            with self._lock:
                self.links.append(link)
            threading.Thread(target=self._pump, args=(link,), name="tcp-proxy-link", daemon=True).start()

    def _pump(self, link: Link) -> None:
        peers = {link.client: link.upstream, link.upstream: link.client}
        try:
            while not self._closing.is_set():
                if link.silenced:
                    self._closing.wait(0.5)  # forward nothing, read nothing: the sockets stay open
                    continue
                readable, _, _ = select.select(list(peers), [], [], 0.2)
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        return
                    if sock is link.client:
                        if len(link.seen) < 4096:
                            link.seen += data[: 4096 - len(link.seen)]
                        if self._silence(link, data, "status"):
                            break
                    elif self._silence(link, data, "data"):
                        break
                    peers[sock].sendall(data)
        except OSError:
            return
        finally:
            if not link.silenced:
                link.closed = True
                for sock in (link.client, link.upstream):
                    try:
                        sock.close()
                    except OSError:
                        pass

    def _silence(self, link: Link, data: bytes, kind: str) -> bool:
        """Whether ``data`` is what an armed proxy silences the link at: from the client, a status update
        asking for a reply (``kind`` "status"); from the server, WAL data ("data")."""
        if self._armed != kind or not link.replication:
            return False
        if not (_asks_for_reply(data) if kind == "status" else _XLOG_DATA.search(data)):
            return False
        with self._lock:
            if self._armed != kind:
                return False
            self._armed = None
            link.silenced = True
        self.silenced.set()
        return True


def _asks_for_reply(data: bytes) -> bool:
    """Whether ``data`` holds a status update that asks the walsender to reply (its last byte is 1): one
    sent while the client waits, not the last one a closing client sends (which asks nothing)."""
    at = data.find(_STATUS_UPDATE)
    while at >= 0:
        flag = at + len(_STATUS_UPDATE) + 32  # write, flush and apply positions and the clock: 8 bytes each
        if flag < len(data) and data[flag] == 1:
            return True
        at = data.find(_STATUS_UPDATE, at + 1)
    return False


def main(host: str, port: str) -> None:
    """Serve commands on stdin, one per line, each answered by one line: ``port``, ``silence``, ``links``."""
    proxy = _Proxy(host, int(port))
    try:
        for line in sys.stdin:
            command = line.strip()
            if command == "port":
                answer = str(proxy.port)
            elif command in ("silence", "silence-data"):
                proxy.silence_next("data" if command == "silence-data" else "status")
                answer = "armed"
            elif command == "links":
                answer = json.dumps([{"closed": link.closed} for link in proxy.silenced_links()])
            else:
                answer = f"unknown command {command!r}"
            print(answer, flush=True)
    finally:
        proxy.close()


if __name__ == "__main__":
    main(*sys.argv[1:3])
