"""Where the suite's CPU goes: each test's CPU time, its worker's whole process tree included.

Why: `make test` is bound by CPU (two xdist workers on two cores), and a test's wall time says little
about what it costs: a test that waits lets the other worker run, one that starts three JVMs does
not. A worker's own ``getrusage`` misses most of it (the Spark JVMs, the killed ``sparkcdc run``
processes whose children are reaped by init, PostgreSQL's backends), so each worker moves itself into
a cgroup of its own at start, whose CPU counter takes in every process it starts from then on,
orphans included, and each test's CPU is that counter's difference across the test (module fixtures
count in the test that sets them up or tears them down).

Opt-in, and only as root where a cpuacct (v1) or cpu (v2) hierarchy can be written::

    SPARKCDC_SUITE_CPU=/tmp/suite-cpu make test PYTEST_ARGS="-p tests.support.suite_cpu"
    .venv/bin/python -m tests.support.suite_cpu /tmp/suite-cpu     # per file, most CPU first

Each worker appends ``nodeid, wall seconds, CPU seconds, end time`` lines to ``<dir>/<worker>.tsv``.
Without the variable, or without a writable hierarchy, it warns once and records nothing.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["CpuCounter", "summary"]

ENVIRONMENT = "SPARKCDC_SUITE_CPU"
_V1 = Path("/sys/fs/cgroup/cpuacct")
_V2_ROOTS = (Path("/sys/fs/cgroup/unified"), Path("/sys/fs/cgroup"))


class CpuCounter:
    """A cgroup of this process's own (and of everything it starts from now on) and its CPU seconds."""

    def __init__(self, name: str) -> None:
        self.group, self._v1 = self._join(name)

    @staticmethod
    def _join(name: str) -> tuple[Path, bool]:
        candidates = [(_V1, True)] + [(root, False) for root in _V2_ROOTS if (root / "cgroup.controllers").exists()]
        failures = []
        for root, v1 in candidates:
            group = root / name
            try:
                group.mkdir(exist_ok=True)
                (group / "cgroup.procs").write_text(str(os.getpid()))
            except OSError as exc:
                failures.append(f"{group}: {exc}")
                continue
            return group, v1
        raise OSError("no cgroup hierarchy to account CPU in: " + "; ".join(failures or ["none mounted"]))

    def seconds(self) -> float:
        if self._v1:
            return int((self.group / "cpuacct.usage").read_text()) / 1e9
        for line in (self.group / "cpu.stat").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "usage_usec":
                return int(value) / 1e6
        raise OSError(f"{self.group}/cpu.stat has no usage_usec")


_counter: CpuCounter | None = None
_out: Path | None = None


def pytest_configure(config: pytest.Config) -> None:
    global _counter, _out
    directory = os.environ.get(ENVIRONMENT)
    if not directory:
        warnings.warn(f"tests.support.suite_cpu: {ENVIRONMENT} is not set; no CPU is recorded", stacklevel=1)
        return
    worker = getattr(config, "workerinput", {}).get("workerid", "main")
    try:
        _counter = CpuCounter(f"sparkcdc-suite-{worker}")
    except OSError as exc:
        warnings.warn(f"tests.support.suite_cpu: {exc}; no CPU is recorded", stacklevel=1)
        return
    _out = Path(directory) / f"{worker}.tsv"
    _out.parent.mkdir(parents=True, exist_ok=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    if _counter is None or _out is None:
        yield
        return
    cpu, wall = _counter.seconds(), time.monotonic()
    yield
    cpu, wall = _counter.seconds() - cpu, time.monotonic() - wall
    with _out.open("a", encoding="utf-8") as handle:
        handle.write(f"{item.nodeid}\t{wall:.2f}\t{cpu:.2f}\t{time.time():.0f}\n")


def summary(directory: Path) -> list[tuple[str, float, float]]:
    """Per test file: (file, wall seconds, CPU seconds) summed over its tests, most CPU first."""
    files: dict[str, list[float]] = {}
    for path in sorted(directory.glob("*.tsv")):
        for line in path.read_text(encoding="utf-8").splitlines():
            nodeid, wall, cpu, _ = line.split("\t")
            totals = files.setdefault(nodeid.split("::")[0], [0.0, 0.0])
            totals[0] += float(wall)
            totals[1] += float(cpu)
    return sorted(((name, wall, cpu) for name, (wall, cpu) in files.items()), key=lambda row: -row[2])


if __name__ == "__main__":
    rows = summary(Path(sys.argv[1]))
    total = sum(cpu for _, _, cpu in rows)
    print(f"{'wall s':>8} {'CPU s':>8} {'share':>6}  file")
    for name, wall, cpu in rows:
        print(f"{wall:8.1f} {cpu:8.1f} {cpu / total:6.1%}  {name}")
    print(f"{sum(wall for _, wall, _ in rows):8.1f} {total:8.1f} {1:6.0%}  all ({len(rows)} files)")
