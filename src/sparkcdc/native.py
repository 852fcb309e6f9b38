"""Which of sparkcdc's modules run compiled, and how to switch back to plain Python.

The per-event hot path (pgoutput decoding, record building, serialization) is plain Python that
``setup.py`` also compiles with mypyc when it can: the same source, as C extension modules next to
it. A build without a C compiler, or with ``SPARKCDC_PURE_PYTHON`` set, installs only the Python
source. At run time, ``SPARKCDC_PURE_PYTHON`` set to anything but ``""`` or ``"0"`` makes the
compiled modules of an install be ignored: their Python source is imported instead (this is how
the test suite runs both ways without rebuilding).

``COMPILED_MODULES`` is read by ``setup.py`` (without importing sparkcdc), so it stays a literal.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from types import ModuleType

__all__ = ["COMPILED_MODULES", "compiled_modules", "pure_python_requested"]

#: The modules setup.py compiles with mypyc (when a C compiler is there).
COMPILED_MODULES = (
    "sparkcdc.pgoutput.errors",
    "sparkcdc.pgoutput.messages",
    "sparkcdc.pgoutput.decoder",
    "sparkcdc.postgres.replication_protocol",
    "sparkcdc.debezium.records",
    "sparkcdc.debezium.events",
    "sparkcdc.debezium.serialization",
    "sparkcdc.debezium.types.numeric",
    "sparkcdc.debezium.types.text",
    "sparkcdc.debezium.types.temporal",
    "sparkcdc.engine.streaming",
)


def pure_python_requested() -> bool:
    """``SPARKCDC_PURE_PYTHON`` is set (to anything but ``""`` or ``"0"``)."""
    return os.environ.get("SPARKCDC_PURE_PYTHON", "") not in ("", "0")


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
