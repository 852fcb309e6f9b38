"""Build script: compiles sparkcdc's per-event hot path with mypyc where it can.

pyproject.toml holds all of the package's metadata; this file only adds extension modules. The
modules named in ``src/sparkcdc/native.py`` (``COMPILED_MODULES``) are compiled from their own
Python source with mypyc, the source staying installed beside them. Without a working C compiler
(or Python's headers), or with the switch ``SPARKCDC_PURE_PYTHON`` on (sparkcdc/environment.py), the
build installs the plain Python package instead and says why; so does a failed compilation, after
removing whatever part of it was built, so an install never ends up half compiled.

A successful build also writes ``sparkcdc/native_sources.txt``, the SHA-256 of each compiled
module's source: an editable install whose source was edited after the build runs that source
instead of the outdated compiled modules (see ``sparkcdc/native.py``) until it is built again.
"""

from __future__ import annotations

import ast
import hashlib
import os
import sys
import sysconfig
import tempfile
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
SRC = ROOT / "src"
GROUP = "sparkcdc.native"  # the shared library: sparkcdc/native__mypyc.*.so
SOURCES_RECORD = Path("sparkcdc", "native_sources.txt")  # read by sparkcdc/native.py


def _note(message: str) -> None:
    print(f"sparkcdc setup: {message}", file=sys.stderr)


def _compiled_module_names() -> list[str]:
    """``COMPILED_MODULES`` from sparkcdc/native.py, read without importing sparkcdc."""
    tree = ast.parse((SRC / "sparkcdc" / "native.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "COMPILED_MODULES" for t in node.targets):
            return list(ast.literal_eval(node.value))
    raise RuntimeError("src/sparkcdc/native.py defines no COMPILED_MODULES")


def _pure_python_requested() -> bool:
    """The switch ``SPARKCDC_PURE_PYTHON`` is on, by the rule of sparkcdc/environment.py (its
    ``ON_VALUES``, read without importing sparkcdc); a value that is neither on nor off is refused."""
    tree = ast.parse((SRC / "sparkcdc" / "environment.py").read_text(encoding="utf-8"))
    values = {target.id: ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)
              for target in node.targets if isinstance(target, ast.Name) and target.id in ("ON_VALUES", "OFF_VALUES")}
    value = os.environ.get("SPARKCDC_PURE_PYTHON", "").strip().lower()
    if value and value not in values["ON_VALUES"] + values["OFF_VALUES"]:
        raise SystemExit(f"SPARKCDC_PURE_PYTHON: {value!r} is neither on {values['ON_VALUES']} nor off {values['OFF_VALUES']}")
    return value in values["ON_VALUES"]


def _builds_in_place() -> bool:
    """An editable install or ``build_ext --inplace``: the compiled modules go into src/."""
    args = sys.argv[1:]
    return "editable_wheel" in args or "develop" in args or ("build_ext" in args and ("--inplace" in args or "-i" in args))


def _remove_stale_extensions(modules: list[str]) -> None:
    """Compiled modules an earlier in-place build left in src/: this build replaces them, or
    (pure Python) they must go, since they would shadow the source."""
    suffixes = tuple(_extension_suffixes())
    candidates = [SRC / Path(*name.split(".")[:-1]) / name.split(".")[-1] for name in modules]
    candidates.append(SRC / Path(*GROUP.split(".")[:-1]) / (GROUP.split(".")[-1] + "__mypyc"))
    for stem in candidates:
        for path in stem.parent.glob(stem.name + ".*"):
            if path.name.endswith(suffixes):
                path.unlink()
                _note(f"removed {path.relative_to(ROOT)}")
    (SRC / SOURCES_RECORD).unlink(missing_ok=True)


def _sources_record(modules: list[str]) -> str:
    lines = []
    for name in modules:
        source = SRC.joinpath(*name.split(".")).with_suffix(".py")
        lines.append(f"{hashlib.sha256(source.read_bytes()).hexdigest()}  {name}\n")
    return "".join(lines)


def _extension_suffixes() -> list[str]:
    import importlib.machinery

    return list(importlib.machinery.EXTENSION_SUFFIXES)


def _c_compiler_works() -> str | None:
    """``None`` when a C extension can be compiled here, else the reason it cannot."""
    from setuptools._distutils.ccompiler import new_compiler
    from setuptools._distutils.errors import CCompilerError, DistutilsError
    from setuptools._distutils.sysconfig import customize_compiler

    include = sysconfig.get_paths()["include"]
    if not (Path(include) / "Python.h").exists():
        return f"Python's C headers are missing ({include}/Python.h)"
    compiler = new_compiler()
    customize_compiler(compiler)
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp, "probe.c")
        source.write_text("#include <Python.h>\nint sparkcdc_probe(void) { return Py_IsInitialized(); }\n")
        try:
            compiler.compile([str(source)], output_dir=tmp, include_dirs=[include])
        except (CCompilerError, DistutilsError, OSError) as exc:
            return f"no working C compiler ({exc})"
    return None


class OptionalBuildExt(build_ext):
    """build_ext that falls back to the pure Python package when compiling fails."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # noqa: BLE001 - any failure here means: install the source only
            _note(f"compiling with mypyc failed, installing pure Python instead: {exc}")
            self._remove_outputs()
            return
        if self.extensions:
            record = _sources_record(_compiled_module_names())
            targets = [Path(self.build_lib) / SOURCES_RECORD]
            if self.inplace or getattr(self, "editable_mode", False):
                targets.append(SRC / SOURCES_RECORD)
            for target in targets:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(record, encoding="utf-8")

    def _remove_outputs(self) -> None:
        outputs = [Path(p) for p in self.get_outputs()]
        if self.inplace or getattr(self, "editable_mode", False):
            for ext in self.extensions:
                filename = self.get_ext_filename(self.get_ext_fullname(ext.name))
                outputs.append(SRC / filename)
        for path in outputs:
            if path.exists():
                path.unlink()
        self.extensions = []


def _builds() -> bool:
    """False for the metadata-only invocations (egg_info, dist_info): no need to run mypyc for them."""
    commands = {"build", "build_ext", "bdist_wheel", "editable_wheel", "develop", "install", "bdist"}
    return any(arg in commands for arg in sys.argv[1:])


def ext_modules() -> list:
    modules = _compiled_module_names()
    if _builds_in_place():
        _remove_stale_extensions(modules)
    if not _builds():
        return []
    if _pure_python_requested():
        _note("SPARKCDC_PURE_PYTHON is on: installing pure Python")
        return []
    reason = _c_compiler_works()
    if reason is not None:
        _note(f"{reason}: installing pure Python")
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        _note("mypyc is not installed (it comes with mypy, a build requirement): installing pure Python")
        return []
    paths = [str(Path("src", *name.split(".")).with_suffix(".py")) for name in modules]
    os.chdir(ROOT)  # mypy derives module names from the paths (src layout)
    # The modules that stay interpreted are analysed for their types but not checked; the build
    # environment need not have the runtime dependencies (orjson, psycopg): they are typed Any.
    options = ["--follow-imports=silent", "--ignore-missing-imports", "--python-version", f"{sys.version_info[0]}.{sys.version_info[1]}"]
    try:
        return mypycify(options + paths, opt_level="3", group_name=GROUP)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - mypy reports type errors by exiting
        _note(f"mypyc could not compile the hot path, installing pure Python instead: {exc!r}")
        return []


setup(ext_modules=ext_modules(), cmdclass={"build_ext": OptionalBuildExt})
