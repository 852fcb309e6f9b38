"""The benchmark scripts still run (tiny workloads; the figures themselves live in RESULTS.md)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def test_decode_benchmark_runs() -> None:
    result = subprocess.run(
        [sys.executable, str(BENCHMARKS / "decode.py"), "--rows", "3000", "--rows-per-transaction", "500", "--repeat", "1"],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ratio sparkcdc / pg_recvlogical" in result.stdout


@pytest.mark.slow
@pytest.mark.parametrize(("script", "size", "extra"), [
    ("snapshot.py", "--rows", ["--zstd", "--unwrap"]),
    # every variant of the stream benchmark in one run: a second run of the script paid again for the
    # Debezium side, a cluster, the physical limits and the default drain's two `sparkcdc run` starts
    # (the two runs: 250 CPU-s, the one: 197; benchmarks/RESULTS.md)
    ("stream.py", "--changes", ["--kafka", "--zstd", "--unwrap", "--tables", "2", "--slots", "2"]),
])
def test_debezium_vs_sparkcdc_benchmark_runs(script: str, size: str, extra: list[str]) -> None:
    """Both sides (embedded Debezium, `sparkcdc run --once`) on 2,000 events; the script checks the output
    (the stream's also from `run --kafka` into a Tansu broker, consumed back, and from two slots over two tables)."""
    result = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), size, "2000", "--repeat", "1", *extra],
        capture_output=True, text=True, timeout=540,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ratio sparkcdc / Debezium" in result.stdout
    assert "sparkcdc wall" in result.stdout
    # the physical limits, measured in the same run (issue 31)
    assert ("pg_recvlogical drain" if script == "stream.py" else "COPY (SELECT * FROM bench) TO STDOUT") in result.stdout
    assert "write floor, 2 writer processes: " in result.stdout
    assert "time ratio sparkcdc processing / write floor: " in result.stdout
    if "--kafka" in extra:
        assert "sparkcdc --kafka" in result.stdout
    if "--slots" in extra:
        assert "sparkcdc 2 slots / 1 slot = " in result.stdout
    if "--zstd" in extra:
        assert "sparkcdc zstd topic files" in result.stdout
    if "--unwrap" in extra:  # the transformed drain's output was checked too (ids once per __op)
        assert "sparkcdc transforms=unwrap / without = " in result.stdout


@pytest.mark.slow
def test_blocking_snapshot_benchmark_runs() -> None:
    """Debezium's and sparkcdc's blocking snapshots under the writer, and sparkcdc's initial snapshot, on
    2,000 rows; the script checks sparkcdc's output (no gap, no overlap) and Debezium's count."""
    result = subprocess.run(
        [sys.executable, str(BENCHMARKS / "blocking_snapshot.py"), "--rows", "2000", "--repeat", "1"],
        capture_output=True, text=True, timeout=900,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ratio blocking sparkcdc / Debezium blocking" in result.stdout
    assert "ratio blocking sparkcdc / initial sparkcdc" in result.stdout


@pytest.mark.slow
@pytest.mark.oracle
@pytest.mark.timeout(960)
def test_snapshot_apply_benchmark_runs() -> None:
    """Debezium's snapshot and `sparkcdc run --apply-to` into PostgreSQL and Delta, at two tiny sizes,
    in local[2]; the script checks each mirror against the source, and the driver's memory is sampled.
    Without the runs with the driver alone on a standalone cluster (``--no-cluster-driver``): they
    doubled the test's time (300 s of the suite's two workers), and ``run --master spark://...``
    applying on a standalone cluster is tests/spark/test_standalone_cluster.py's."""
    result = subprocess.run(
        [sys.executable, str(BENCHMARKS / "snapshot_apply.py"), "--rows", "2000", "6000", "--no-cluster-driver"],
        capture_output=True, text=True, timeout=900,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    for target in ("PostgreSQL", "Delta Lake"):
        assert f"ratio sparkcdc → {target} / Debezium" in result.stdout
        assert f"driver peak RSS growth → {target}, 6,000 vs 2,000 rows, local[2]" in result.stdout
    assert result.stdout.count("mirror equals the source") == 4
    peaks = re.findall(r"peak memory: driver Python ([\d,]+) MB, driver JVM ([\d,]+) MB", result.stdout)
    assert len(peaks) == 4 and all(int(p.replace(",", "")) > 20 for pair in peaks for p in pair), result.stdout


@pytest.mark.slow
def test_latency_benchmark_runs() -> None:
    """Both sides at 200 changes/s for 3 s: every generated change must arrive (the script fails otherwise)."""
    result = subprocess.run(
        [sys.executable, str(BENCHMARKS / "latency.py"), "--rates", "200", "--seconds", "3", "--warmup", "1"],
        capture_output=True, text=True, timeout=540,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "sparkcdc at 200 changes/s: p50" in result.stdout
    assert "debezium at 200 changes/s: p50" in result.stdout


def test_chunk_typing_benchmark_runs() -> None:
    result = subprocess.run([sys.executable, str(BENCHMARKS / "chunk_typing.py"), "--rows", "3000", "--repeat", "1"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3,000 rows read and typed into blocks" in result.stdout
