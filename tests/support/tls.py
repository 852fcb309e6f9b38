"""Certificates for TLS tests, made with the ``openssl`` command (the venv has no ``cryptography``).

A :class:`CertificateAuthority` signs server and client certificates; each is a pair of PEM files
in the given directory. Keys are EC P-256 (fast to make); a client key may be encrypted with a
pass phrase (PKCS#8, as libpq's ``sslpassword`` reads).
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

OPENSSL = shutil.which("openssl")


def _openssl(*args: str, cwd: Path) -> None:
    if OPENSSL is None:
        pytest.skip("the openssl command is not installed")
    result = subprocess.run([OPENSSL, *args], cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)} failed: {result.stderr}")


@dataclass(frozen=True)
class Certificate:
    cert: Path
    key: Path

    def cert_pem(self) -> bytes:
        return self.cert.read_bytes()

    def key_pem(self) -> bytes:
        return self.key.read_bytes()


class CertificateAuthority:
    """A self-signed CA in ``directory`` (``<name>.crt``, ``<name>.key``)."""

    def __init__(self, directory: Path, name: str) -> None:
        self.directory = directory
        self.name = name
        directory.mkdir(parents=True, exist_ok=True)
        self.cert = directory / f"{name}.crt"
        self.key = directory / f"{name}.key"
        _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                 "-keyout", self.key.name, "-out", self.cert.name, "-days", "2", "-subj", f"/CN={name}",
                 "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
                 cwd=directory)

    def issue(self, name: str, common_name: str, *, dns: tuple[str, ...] = (), ips: tuple[str, ...] = (),
              key_password: str | None = None) -> Certificate:
        """A certificate for ``common_name`` (a server's: its ``dns``/``ips`` as subject alternative
        names; a client's: the database user), its key encrypted with ``key_password`` if given."""
        key, csr, cert = f"{name}.key", f"{name}.csr", f"{name}.crt"
        encrypt = ["-aes-256-cbc", "-pass", f"pass:{key_password}"] if key_password else []
        _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", *encrypt, "-out", key,
                 cwd=self.directory)
        passin = ["-passin", f"pass:{key_password}"] if key_password else []
        _openssl("req", "-new", "-key", key, *passin, "-out", csr, "-subj", f"/CN={common_name}", cwd=self.directory)
        extensions = self.directory / f"{name}.ext"
        san = ",".join([*(f"DNS:{d}" for d in dns), *(f"IP:{i}" for i in ips)])
        extensions.write_text("basicConstraints=CA:FALSE\n" + (f"subjectAltName={san}\n" if san else ""))
        _openssl("x509", "-req", "-in", csr, "-CA", self.cert.name, "-CAkey", self.key.name, "-CAcreateserial",
                 "-out", cert, "-days", "2", "-extfile", extensions.name, cwd=self.directory)
        (self.directory / key).chmod(0o600)  # libpq refuses a client key others can read
        return Certificate(self.directory / cert, self.directory / key)
