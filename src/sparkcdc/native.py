"""Which of sparkcdc's modules run compiled, and how to switch back to plain Python.

The per-event hot path (pgoutput decoding, record building, serialization) is plain Python that
``setup.py`` also compiles with mypyc when it can: the same source, as C extension modules next to
it. A build without a C compiler, or with the switch ``SPARKCDC_PURE_PYTHON`` on, installs only the
Python source. At run time, ``SPARKCDC_PURE_PYTHON`` on (:mod:`sparkcdc.environment`) makes the
compiled modules of an install be ignored: their Python source is imported instead (this is how
the test suite runs both ways without rebuilding).

A compiled module is used only while its source is the one it was compiled from: the build
records each source's SHA-256 (``native_sources.txt``), and if a source changed since (an editable
install being worked on), every module runs from source, with a warning, until the next build.

``COMPILED_MODULES`` is read by ``setup.py`` (without importing sparkcdc), so it stays a literal.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType

from .environment import switch

__all__ = ["COMPILED_MODULES", "compiled_modules", "outdated_modules", "pure_python_requested"]

#: The modules setup.py compiles with mypyc (when a C compiler is there).
COMPILED_MODULES = (
    "sparkcdc.pgoutput.messages",
    "sparkcdc.pgoutput.decoder",
    "sparkcdc.pgoutput.wal",
    "sparkcdc.postgres.replication_protocol",
    "sparkcdc.debezium.records",
    "sparkcdc.debezium.events",
    "sparkcdc.debezium.table",
    "sparkcdc.debezium.serialization",
    "sparkcdc.debezium.types.numeric",
    "sparkcdc.debezium.types.text",
    "sparkcdc.debezium.types.temporal",
    "sparkcdc.engine.core.streaming",
    "sparkcdc.engine.core.lines",
)


def pure_python_requested() -> bool:
    """The switch ``SPARKCDC_PURE_PYTHON`` is on (:func:`sparkcdc.environment.switch`)."""
    return switch("SPARKCDC_PURE_PYTHON")


class _SourceOnlyFinder:
    """A meta path finder that imports sparkcdc's modules from their ``.py`` source even where a
    compiled extension module sits beside it (the import system prefers extensions otherwise)."""

    @staticmethod
    def find_spec(
        fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in COMPILED_MODULES:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not isinstance(spec.loader, importlib.machinery.ExtensionFileLoader) or spec.origin is None:
            return spec
        directory = os.path.dirname(spec.origin)
        source = os.path.join(directory, fullname.rpartition(".")[2] + ".py")
        if not os.path.exists(source):
            return spec  # an install without source: the compiled module is all there is
        return importlib.util.spec_from_file_location(fullname, source)


def outdated_modules(package: str | None = None) -> list[str]:
    """Compiled modules whose source differs from the one they were compiled from (``package``:
    the directory of the sparkcdc package, by default this one)."""
    package = package or os.path.dirname(os.path.abspath(__file__))
    try:
        with open(os.path.join(package, "native_sources.txt"), encoding="utf-8") as record:
            entries = [line.split() for line in record if line.strip()]
    except OSError:
        return []  # not a compiled build
    outdated = []
    for digest, name in entries:
        source = os.path.join(os.path.dirname(package), *name.split(".")) + ".py"
        try:
            with open(source, "rb") as handle:
                current = hashlib.sha256(handle.read()).hexdigest()
        except OSError:
            continue  # installed without source: the compiled module is all there is
        if current != digest:
            outdated.append(name)
    return outdated


def _install_source_only_finder() -> None:
    if not any(isinstance(finder, _SourceOnlyFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _SourceOnlyFinder())


def compiled_modules() -> tuple[str, ...]:
    """The modules of :data:`COMPILED_MODULES` that import (or were imported) as compiled code."""
    out = []
    for name in COMPILED_MODULES:
        module = sys.modules.get(name)
        if module is not None:
            origin = getattr(module, "__file__", None) or ""
        else:
            spec = importlib.util.find_spec(name)
            origin = (spec.origin or "") if spec is not None else ""
        if origin.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)):
            out.append(name)
    return tuple(out)


if pure_python_requested():
    _install_source_only_finder()
else:
    _outdated = outdated_modules()
    if _outdated:
        # Compiled code calls the other compiled modules directly, so it is all or nothing.
        warnings.warn(
            f"sparkcdc: {', '.join(_outdated)} changed since they were compiled; running every module from source "
            "(rebuild with `pip install -e .` or `python setup.py build_ext --inplace`)",
            RuntimeWarning,
            stacklevel=2,
        )
        _install_source_only_finder()
