"""The peak memory of a ``sparkcdc run`` process tree, read from ``/proc`` while it runs.

Three figures, kept apart because they answer different questions:

* the driver's Python process (the command itself, the tree's root): what sparkcdc's own code in
  the driver holds — a table or batch folded there shows up here;
* its Spark driver JVM (the ``java`` process PySpark starts as the root's child; in local mode the
  executors run in it too): what Spark holds;
* Spark's Python workers (the Python processes under that JVM), together.

For the first two the figure is the kernel's own high-water mark (``VmHWM`` of
``/proc/<pid>/status``), so a short spike between two samples is not missed; only what a process
adds in its last ``interval`` before it exits can be. The workers come and go (forked per task),
so theirs is the peak of their summed ``VmRSS`` over the samples (forked workers share pages: an
upper bound). The tree's figure is the peak of everyone's summed ``VmRSS``. Other processes of the
tree (``spark-class``'s short-lived launcher JVM, shells) count only in the tree's figure.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class DriverMemory:
    """Peaks in MiB of one ``sparkcdc run`` (see the module's docstring for what each one is)."""

    python_mb: float = 0.0  # the driver's Python process: VmHWM
    jvm_mb: float = 0.0  # the Spark driver JVM: VmHWM (the largest, if there were several)
    workers_mb: float = 0.0  # Spark's Python workers: the peak of their summed VmRSS
    tree_mb: float = 0.0  # the whole tree: the peak of the summed VmRSS
    samples: int = 0
    jvm_pids: set[int] = field(default_factory=set)  # more than one: the driver started another JVM

    def check(self, what: str) -> None:
        """Exit if no sample saw the driver and its JVM: a figure of 0 MB would read as a result."""
        if not self.samples or not self.jvm_pids:
            raise SystemExit(f"{what}: no memory sample of the driver and its Spark JVM ({self.describe()})")

    def describe(self) -> str:
        jvms = "" if len(self.jvm_pids) <= 1 else f" (the largest of {len(self.jvm_pids)} driver JVMs)"
        return (f"driver Python {self.python_mb:,.0f} MB, driver JVM {self.jvm_mb:,.0f} MB{jvms}, Python workers "
                f"{self.workers_mb:,.0f} MB, whole tree {self.tree_mb:,.0f} MB ({self.samples} samples)")


def process_tree(root: int) -> dict[int, int]:
    """Every process under ``root`` (children, their children, …) -> its parent, from ``/proc/*/stat``."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                ppid = int(handle.read().rsplit(b")", 1)[1].split()[1])  # after the name, which may hold spaces
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
        children.setdefault(ppid, []).append(int(entry))
    found, stack = {}, [root]
    while stack:
        parent = stack.pop()
        for child in children.get(parent, ()):
            found[child] = parent
            stack.append(child)
    return found


def status(pid: int) -> tuple[str, float, float] | None:
    """``(name, VmHWM, VmRSS)`` of ``pid`` in MiB; None once it is gone (or a zombie: no memory left)."""
    try:
        with open(f"/proc/{pid}/status", "rb") as handle:
            text = handle.read().decode(errors="replace")
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    if "VmHWM" not in fields or "VmRSS" not in fields:
        return None
    return fields["Name"].strip(), int(fields["VmHWM"].split()[0]) / 1024, int(fields["VmRSS"].split()[0]) / 1024


def _sample(root: int, peaks: DriverMemory) -> None:
    """One look at the tree under ``root``, folded into ``peaks``."""
    seen = status(root)
    if seen is None:
        return
    peaks.python_mb = max(peaks.python_mb, seen[1])
    tree = process_tree(root)
    jvms, workers, total = set(), 0.0, seen[2]
    for pid, parent in tree.items():
        found = status(pid)
        if found is None:
            continue
        name, hwm, rss = found
        total += rss
        if name == "java" and parent == root:
            jvms.add(pid)
            peaks.jvm_mb = max(peaks.jvm_mb, hwm)
    for pid in tree:
        if _under(pid, jvms, tree):  # PySpark's daemon, the workers it forks, the data source's planners
            found = status(pid)
            if found is not None and found[0].startswith("python"):
                workers += found[2]
    peaks.jvm_pids |= jvms
    peaks.workers_mb, peaks.tree_mb = max(peaks.workers_mb, workers), max(peaks.tree_mb, total)
    peaks.samples += 1


def _under(pid: int, ancestors: set[int], tree: dict[int, int]) -> bool:
    while pid in tree:
        pid = tree[pid]
        if pid in ancestors:
            return True
    return False


@contextmanager
def driver_memory(root: int, interval: float = 0.2, into: DriverMemory | None = None) -> Iterator[DriverMemory]:
    """Samples the tree under ``root`` (the ``sparkcdc run`` Python process) every ``interval``
    seconds while the block runs, into ``into`` (or a new one); the peaks are complete when it ends
    (see :meth:`DriverMemory.check`)."""
    peaks, stop = into if into is not None else DriverMemory(), threading.Event()

    def sample() -> None:
        while True:
            _sample(root, peaks)
            if stop.wait(interval):  # a sampling period, not a synchronisation
                return

    thread = threading.Thread(target=sample, daemon=True, name="driver-memory")
    thread.start()
    try:
        yield peaks
    finally:
        stop.set()
        thread.join()
