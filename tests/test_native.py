"""The compiled (mypyc) hot path: active in a development install wherever a C compiler exists,
and ``SPARKCDC_PURE_PYTHON`` switches an installed build back to the Python source at run time."""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import sparkcdc
from sparkcdc.native import COMPILED_MODULES, compiled_modules, outdated_modules, pure_python_requested

_EXTENSION_SUFFIXES = tuple(importlib.machinery.EXTENSION_SUFFIXES)


def _why_no_compiler() -> str | None:
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        return f"no C compiler ({compiler}): setup.py installs pure Python"
    include = Path(sysconfig.get_paths()["include"])
    if not (include / "Python.h").exists():
        return f"no Python headers in {include}: setup.py installs pure Python"
    return None


def _installed_extensions() -> list[str]:
    """The modules of COMPILED_MODULES that have a compiled extension file installed."""
    out = []
    for name in COMPILED_MODULES:
        package, _, leaf = name.rpartition(".")
        directory = Path(importlib.import_module(package).__file__ or "").parent
        if any(path.name.endswith(_EXTENSION_SUFFIXES) for path in directory.glob(leaf + ".*")):
            out.append(name)
    return out


def test_compiled_path_is_active_in_a_development_install() -> None:
    reason = _why_no_compiler()
    if reason is not None:
        pytest.skip(reason)
    if pure_python_requested():
        pytest.skip("SPARKCDC_PURE_PYTHON is set: this run tests the pure Python path")
    assert sparkcdc.compiled, f"not compiled: {sorted(set(COMPILED_MODULES) - set(compiled_modules()))} (see setup.py's output)"
    for name in COMPILED_MODULES:
        module = importlib.import_module(name)
        assert (module.__file__ or "").endswith(_EXTENSION_SUFFIXES), name


def test_pure_python_request_is_honoured_in_this_process() -> None:
    if not pure_python_requested():
        pytest.skip("SPARKCDC_PURE_PYTHON is not set")
    assert not sparkcdc.compiled
    assert compiled_modules() == ()
    for name in COMPILED_MODULES:
        assert (importlib.import_module(name).__file__ or "").endswith(".py"), name


@pytest.mark.parametrize("value, pure", [("1", True), ("0", False), ("", False)])
def test_pure_python_switch_at_run_time(value: str, pure: bool) -> None:
    """A compiled install imports the Python source instead when SPARKCDC_PURE_PYTHON is set."""
    if not _installed_extensions():
        pytest.skip("no compiled modules installed: nothing to switch off")
    script = (
        "import importlib, sparkcdc; from sparkcdc.native import COMPILED_MODULES as m; "
        "print(sparkcdc.compiled, all(importlib.import_module(n).__file__.endswith('.py') for n in m))"
    )
    env = {**os.environ, "SPARKCDC_PURE_PYTHON": value}
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    compiled, all_source = result.stdout.split()
    installed_everywhere = _installed_extensions() == list(COMPILED_MODULES)
    assert all_source == str(pure)
    assert compiled == str(not pure and installed_everywhere)


def test_a_source_edited_after_the_build_is_detected(tmp_path: Path) -> None:
    """An editable install whose compiled module's source changed must not run the old code."""
    package = tmp_path / "sparkcdc"
    (package / "pgoutput").mkdir(parents=True)
    (package / "pgoutput" / "errors.py").write_text("X = 1\n")
    (package / "pgoutput" / "decoder.py").write_text("Y = 1\n")
    digest = {name: hashlib.sha256(text.encode()).hexdigest() for name, text in (("errors", "X = 1\n"), ("decoder", "Y = 1\n"))}
    (package / "native_sources.txt").write_text(
        f"{digest['errors']}  sparkcdc.pgoutput.errors\n{digest['decoder']}  sparkcdc.pgoutput.decoder\n"
        f"{digest['errors']}  sparkcdc.pgoutput.messages\n"  # installed without its source: nothing to compare
    )
    assert outdated_modules(str(package)) == []
    (package / "pgoutput" / "decoder.py").write_text("Y = 2\n")
    assert outdated_modules(str(package)) == ["sparkcdc.pgoutput.decoder"]
    (package / "native_sources.txt").unlink()
    assert outdated_modules(str(package)) == []  # a pure Python build records nothing


def test_this_install_is_not_outdated() -> None:
    if not _installed_extensions():
        pytest.skip("no compiled modules installed")
    assert outdated_modules() == [], "compiled modules older than their source: rebuild (make test does)"
