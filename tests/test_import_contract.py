"""The import contract of ``.importlinter`` holds, and it does fail on an upward import.

``make lint`` runs ``lint-imports``; these tests show the contract is not vacuous: a copy of the
package with one deliberately added upward import (the sans-I/O decoder importing Spark's layer)
and one driver import in the pure core both break it, naming the contract.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(source_root: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(source_root), "COLUMNS": "400"}  # one line per contract
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-logo", "--no-cache", "--config", str(ROOT / ".importlinter")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )


def _copy_package(tmp_path: Path) -> Path:
    target = tmp_path / "src"
    shutil.copytree(ROOT / "src" / "sparkcdc", target / "sparkcdc", ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    return target


def test_the_contract_holds(tmp_path: Path) -> None:
    result = _lint(ROOT / "src", tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(("module", "line", "contract"), [
    ("pgoutput/decoder.py", "import sparkcdc.spark.source  # noqa", "Layers"),
    ("engine/core/streaming.py", "import psycopg  # noqa", "imports no database driver"),
    ("engine/core/tables.py", "from sparkcdc.postgres import catalog  # noqa", "imports no database driver"),
])
def test_an_upward_import_breaks_it(tmp_path: Path, module: str, line: str, contract: str) -> None:
    source_root = _copy_package(tmp_path)
    path = source_root / "sparkcdc" / module
    path.write_text(path.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")
    result = _lint(source_root, tmp_path)
    assert result.returncode != 0, result.stdout
    broken = [line for line in result.stdout.splitlines() if line.endswith("BROKEN")]
    assert any(contract in line for line in broken), result.stdout
