"""Record ``float32_vectors.tsv``: what Java's ``Float.toString`` prints for a spread of floats.

Run with the project's venv (JPype starts a plain JVM; no Debezium jars needed)::

    .venv/bin/python -m tests.debezium.record_float32_vectors

Each line is ``<float bits, 8 hex digits>\\t<Float.toString text>``. The set: every power of two and
its neighbours, denormals, integers around 2^24..2^63 (where Java drops "insignificant" digits),
values that PostgreSQL prints with one significant digit, and seeded random bit patterns.
"""

from __future__ import annotations

import random
import struct
from pathlib import Path

import jpype

OUT = Path(__file__).with_name("float32_vectors.tsv")


def _bits(value: float) -> int:
    return struct.unpack("<I", struct.pack("<f", value))[0]


def main() -> None:
    jpype.startJVM(convertStrings=True)
    java_float = jpype.JClass("java.lang.Float")
    version = jpype.JClass("java.lang.System").getProperty("java.version")
    rng = random.Random(20261121)
    patterns: set[int] = {0x00000001, 0x00000002, 0x00000003, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0x3F800000}
    for exponent in range(0, 255):
        for fraction in (0, 1, 2, 0x7FFFFF, 0x7FFFFE, 0x400000, 0x400001):
            patterns.add((exponent << 23) | fraction)
    for power in range(24, 64):
        for delta in (-3, -1, 0, 1, 3):
            patterns.add(_bits(float(2**power + delta * 2 ** (power - 23))))
    for digit in range(1, 10):
        for exponent in range(-45, 39):
            try:
                patterns.add(_bits(float(f"{digit}e{exponent}")))
            except OverflowError:
                pass
    for text in ("3.3", "0.1", "16777217", "3.4028235e38", "1e-45", "355591072", "52363341824", "1234567", "100",
                 "0.001", "1e10", "123456.79", "2.5", "-7.25e-3"):  # fmt: skip
        patterns.add(_bits(float(text)))
    patterns.update(rng.getrandbits(31) for _ in range(4000))
    patterns.update(rng.getrandbits(rng.randint(1, 23)) for _ in range(500))  # denormals
    lines = [f"# Java {version} Float.toString; see record_float32_vectors.py"]
    for bits in sorted(patterns):
        if (bits >> 23) & 0xFF == 0xFF:
            continue
        signed = bits - (1 << 32) if bits >= 1 << 31 else bits
        lines.append(f"{bits:08x}\t{java_float.toString(java_float.intBitsToFloat(jpype.JInt(signed)))}")
    OUT.write_text("\n".join(lines) + "\n")
    print(f"{len(lines) - 1} vectors -> {OUT}")


if __name__ == "__main__":
    main()
