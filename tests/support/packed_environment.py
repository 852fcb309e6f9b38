"""A Python environment packed with venv-pack, for executors that have no sparkcdc of their own.

docs/clusters.md's recipe makes the environment with ``pip install sparkcdc`` into a new venv. A
test cannot download, and the suite's venv holds sparkcdc as an editable install (a ``.pth``
pointing back at the source tree, which would prove nothing once packed), so this builds the same
environment from what is installed here: a new venv (``python -m venv``, no system site-packages)
whose ``site-packages`` receives real copies of the distributions the executors import (each one's
files, as its ``RECORD`` lists them) and of the ``sparkcdc`` package the tests import. Nothing in
it points back at the driver's paths; :func:`pointers_out` checks that before packing.

``pyspark`` is left out on purpose, as in Spark's own venv-pack recipe: a Python worker imports
pyspark from the ``pyspark.zip`` Spark puts first on its ``PYTHONPATH``.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

__all__ = ["EXECUTOR_DISTRIBUTIONS", "PROBE", "build_environment", "pack", "pointers_out"]

#: What an executor of a topic-files run imports (the snapshot and stream readers, Arrow batches,
#: the files they write), with what these need in turn.
EXECUTOR_DISTRIBUTIONS = (
    "psycopg", "psycopg-binary", "typing-extensions", "orjson", "pyarrow", "numpy", "pandas", "python-dateutil",
    "pytz", "tzdata",
)

#: A ``.pth`` line (site runs it at every interpreter start): one line on stderr saying which
#: interpreter runs and where ``sparkcdc`` is imported from; an executor's Python workers inherit
#: its stderr, the ``stderr`` file in the executor's directory of the worker's work dir.
PROBE = ("import sys, importlib.util; s = importlib.util.find_spec('sparkcdc'); "
         "sys.stderr.write('sparkcdc-probe executable=%s prefix=%s sparkcdc=%s\\n' % "
         "(sys.executable, sys.prefix, s.origin if s else None)); sys.stderr.flush()\n")


def build_environment(venv: Path, distributions: Iterable[str] = EXECUTOR_DISTRIBUTIONS, *, probe: bool = True) -> Path:
    """A new venv at ``venv`` holding copies of ``distributions`` and of the imported ``sparkcdc``."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = Path(subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    for name in distributions:
        _copy_distribution(importlib.metadata.distribution(name), site)
    import sparkcdc

    shutil.copytree(Path(sparkcdc.__file__).resolve().parent, site / "sparkcdc",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    if probe:
        (site / "sparkcdc_probe.pth").write_text(PROBE, encoding="utf-8")
    return venv


def _copy_distribution(dist: importlib.metadata.Distribution, site: Path) -> None:
    root = Path(str(dist.locate_file(""))).resolve()
    for file in dist.files or ():
        if file.parts[0] == ".." or "__pycache__" in file.parts:
            continue  # console scripts outside site-packages, bytecode
        source = root / file
        if source.is_file():
            target = site / file
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def pointers_out(venv: Path, forbidden: Iterable[Path]) -> list[str]:
    """Files of ``venv`` that would lead an interpreter outside it into ``forbidden`` directories
    (``.pth`` lines, symbolic links), e.g. back into the driver's venv or source tree."""
    roots = [str(Path(p).resolve()) for p in forbidden]
    found = []
    for path in venv.rglob("*"):
        if path.is_symlink():
            target = os.path.realpath(path)
            if any(target.startswith(root) for root in roots):
                found.append(f"{path} -> {target}")
        elif path.suffix == ".pth":
            text = path.read_text(encoding="utf-8", errors="replace")
            if any(root in text for root in roots):
                found.append(f"{path}: {text.strip()[:200]}")
    return found


def pack(venv: Path, archive: Path) -> Path:
    """``venv-pack`` (the venv's console script) to a ``.tar.gz``, then the venv is removed; level 1:
    the test's time goes to Spark."""
    venv_pack = Path(sys.executable).with_name("venv-pack")
    subprocess.run([str(venv_pack), "--prefix", str(venv), "--output", str(archive), "--compress-level", "1", "--quiet"],
                   check=True)
    shutil.rmtree(venv)  # 300 MB the archive holds
    return archive
