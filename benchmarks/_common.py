"""Shared by the benchmarks: a description of the machine, and appending figures to RESULTS.md."""

from __future__ import annotations

import datetime as dt
import os
import platform
import subprocess
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def machine_summary() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    try:
        from sparkcdc.embedded_postgres import find_postgres_bindir

        binary = find_postgres_bindir() / "postgres"
        postgres = subprocess.run([str(binary), "--version"], capture_output=True, text=True).stdout.strip()
    except (OSError, RuntimeError):
        postgres = ""
    return (
        f"{os.cpu_count()} cores ({cpu}), {memory_gib:.0f} GiB RAM, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}{', ' + postgres if postgres else ''}"
    )


def record_result(benchmark: str, workload: str, rows: list[tuple[str, str, str]]) -> None:
    """Append a dated section with a small table to RESULTS.md."""
    lines = [
        "",
        f"### {benchmark} — {dt.date.today().isoformat()}",
        "",
        f"Workload: {workload}. Machine: {machine_summary()}.",
        "",
        "| measure | figure | notes |",
        "|---|---|---|",
        *[f"| {name} | {figure} | {notes} |" for name, figure, notes in rows],
        "",
    ]
    with open(RESULTS, "a", encoding="utf-8") as handle:
        handle.write("\n".join(lines))
