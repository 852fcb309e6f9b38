"""The target registry: a location's form names its target, targets are imported only when named,
and the protocol module knows no target (no import cycle)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from sparkcdc.apply import TargetError
from sparkcdc.apply.targets import TargetKind, kind_for, register_target, target_for
from sparkcdc.apply.targets import registry as registry_module
from sparkcdc.apply.targets.storage_types import StorageTypes

TARGETS = Path(__file__).resolve().parents[2] / "src" / "sparkcdc" / "apply" / "targets"


@pytest.mark.parametrize(("location", "kind"), [
    ("postgresql://u@h:5432/db", "PostgreSQL"),
    ("postgres://u@h/db", "PostgreSQL"),
    ("iceberg:lake", "Apache Iceberg"),
    ("iceberg+file:///tmp/wh", "Apache Iceberg"),
    ("iceberg+file:rel/wh", "Apache Iceberg"),
    ("/data/lake", "Delta Lake"),
    ("file:///data/lake", "Delta Lake"),
    ("s3://bucket/lake", "Delta Lake"),
    ("relative/lake", "Delta Lake"),
])
def test_a_location_names_its_kind(location: str, kind: str) -> None:
    assert kind_for(location).name == kind


def test_an_empty_location_is_refused_naming_the_forms() -> None:
    with pytest.raises(TargetError, match=r"location is required \(postgresql://…, iceberg:<catalog>, or a Delta Lake path\)"):
        target_for("")


def test_a_registered_kind_is_opened_by_its_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry_module, "_KINDS", list(registry_module._KINDS))
    register_target(TargetKind("test", ("memory:",), "tests.apply.test_registry:_MemoryTarget"))
    opened = target_for("memory:x", flavour="plain")
    assert isinstance(opened, _MemoryTarget) and opened.args == ("memory:x", {"flavour": "plain"})
    assert kind_for("/a/path").name == "Delta Lake"  # the others are unchanged
    with pytest.raises(TargetError, match="name the location prefixes"):
        register_target(TargetKind("nameless", (), "x:y"))


class _MemoryTarget:
    def __init__(self, location: str, **options: Any) -> None:
        self.args = (location, options)


#: The modules of the targets package that are no target: the protocol, the registry, and what targets share.
SHARED_MODULES = ("base.py", "registry.py", "table_names.py", "prepared_tables.py", "storage_types.py", "table_layout.py",
                  "lake_target.py", "lake_staging.py", "lake_commits.py", "lake_evolution.py", "library_errors.py")


def test_the_protocol_module_and_the_shared_modules_import_no_target() -> None:
    """base.py and the modules the targets share name no target module; the registry names them only as strings."""
    targets = {"delta", "iceberg", "postgres", "registry"}
    for name in SHARED_MODULES:
        tree = ast.parse((TARGETS / name).read_text())
        imported = {
            (node.module or "").rpartition(".")[2] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
        } | {alias.name.rpartition(".")[2] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        assert not imported & targets, (name, imported & targets)


def test_importing_the_targets_package_loads_no_target() -> None:
    script = """
import sys
import sparkcdc.apply.targets
from sparkcdc.spark import apply  # noqa: F401  (the applier's own import of the targets)
loaded = sorted(m for m in sys.modules if m.startswith("sparkcdc.apply.targets."))
print(",".join(loaded))
"""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(TARGETS.parents[2]) + os.pathsep + env.get("PYTHONPATH", "")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().split(",") == [
        "sparkcdc.apply.targets.base", "sparkcdc.apply.targets.registry",
    ]


DELTA = StorageTypes("Delta Lake", small_integers=True, fixed_size_binary=False, times=False, others=True)
ICEBERG = StorageTypes("Iceberg", small_integers=False, fixed_size_binary=True, times=True, others=False)


@pytest.mark.parametrize(("arrow", "delta", "iceberg"), [
    (pa.uint8(), pa.int16(), pa.int32()),
    (pa.uint16(), pa.int32(), pa.int32()),
    (pa.uint32(), pa.int64(), pa.int64()),
    (pa.uint64(), pa.decimal128(20, 0), pa.decimal128(20, 0)),
    (pa.int8(), pa.int8(), pa.int32()),
    (pa.binary(4), pa.binary(), pa.binary(4)),
    (pa.large_string(), pa.string(), pa.string()),
    (pa.timestamp("ns", tz="Europe/Paris"), pa.timestamp("us", tz="UTC"), pa.timestamp("us", tz="UTC")),
    (pa.list_(pa.uint8()), pa.list_(pa.int16()), pa.list_(pa.int32())),
    (pa.null(), pa.null(), None),
    (pa.time32("ms"), None, pa.time64("us")),
    (pa.duration("s"), None, None),
])
def test_each_format_stores_arrow_types_its_way(arrow: pa.DataType, delta: pa.DataType | None, iceberg: pa.DataType | None) -> None:
    for types, expected in ((DELTA, delta), (ICEBERG, iceberg)):
        if expected is None:
            with pytest.raises(TargetError, match=f"column c: {types.store} has no type for Arrow"):
                types.of(arrow, "c")
        else:
            assert types.of(arrow, "c") == expected
