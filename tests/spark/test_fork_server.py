"""Spark's Python processes forked from sparkcdc's fork server (sparkcdc.spark.launch.python_forks): a
process the launcher stands for behaves as the one the real interpreter would start, signals and
kills included, and what the server cannot stand in for runs the real interpreter."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from sparkcdc.spark.launch.python_forks import ForkServer, is_local_master, start_fork_server

PROBE = textwrap.dedent("""
    import json, os, signal, sys, time
    stdin = sys.stdin.read()
    with open(f"/proc/{os.getpid()}/cmdline", "rb") as handle:
        cmdline = handle.read().replace(b"\\0", b" ").decode().split()
    print(json.dumps({
        "argv": sys.argv, "cwd": os.getcwd(), "path0": sys.path[0], "extra_on_path": "/nonexistent/extra" in sys.path,
        "env": os.environ.get("SPARKCDC_PROBE"), "hash": hash("sparkcdc"), "name": __name__, "stdin": stdin,
        "sigint_ignored": signal.getsignal(signal.SIGINT) is signal.SIG_IGN, "cmdline": cmdline,
        "pid": os.getpid(), "ppid": os.getppid(),
    }), flush=True)
    print("to stderr", file=sys.stderr)
    if sys.argv[1] == "sleep":
        time.sleep(60)
    sys.exit(int(sys.argv[2]))
""")


@pytest.fixture(scope="module")
def server() -> ForkServer:
    started = start_fork_server("local[2]")
    assert started is not None and started.running
    return started


@pytest.fixture
def probe_env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "sparkcdc_fork_probe.py").write_text(PROBE)
    return {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}/nonexistent/extra", "SPARKCDC_PROBE": "yes",
            "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0")}


def _run(python: str, env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([python, "-m", "sparkcdc_fork_probe", *args], input="from the parent", capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=120, check=False)


def test_a_forked_process_is_what_the_interpreter_would_start(server: ForkServer, probe_env: dict[str, str],
                                                               tmp_path: Path) -> None:
    real = _run(sys.executable, probe_env, tmp_path, "quick", "3")
    forked = _run(server.launcher, probe_env, tmp_path, "quick", "3")
    assert (forked.returncode, forked.stderr) == (real.returncode, real.stderr) == (3, "to stderr\n")
    seen, expected = json.loads(forked.stdout), json.loads(real.stdout)
    assert seen["ppid"] != expected["ppid"]  # a child of the server, not of the launcher
    for varying in ("pid", "ppid"):
        del seen[varying], expected[varying]
    assert seen == expected
    assert expected["cmdline"] == [sys.executable, "-m", "sparkcdc_fork_probe", "quick", "3"]


def test_other_interpreter_settings_run_the_real_interpreter(server: ForkServer, probe_env: dict[str, str],
                                                             tmp_path: Path) -> None:
    env = {**probe_env, "PYTHONHASHSEED": "12345"}
    real = _run(sys.executable, env, tmp_path, "quick", "0")
    launched = _run(server.launcher, env, tmp_path, "quick", "0")
    seen = json.loads(launched.stdout)
    assert seen["hash"] == json.loads(real.stdout)["hash"]
    assert seen["ppid"] == os.getpid()  # the launcher exec'd the interpreter: it is this test's own child


def _sleeping(server: ForkServer, env: dict[str, str], cwd: Path) -> tuple[subprocess.Popen[str], int]:
    launcher = subprocess.Popen([server.launcher, "-m", "sparkcdc_fork_probe", "sleep", "0"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True, env=env, cwd=cwd)
    assert launcher.stdin is not None and launcher.stdout is not None
    launcher.stdin.close()
    child = int(json.loads(launcher.stdout.readline())["pid"])
    assert child != launcher.pid
    return launcher, child


def _wait_for(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] == "Z"  # a zombie until the server reaps it
    except FileNotFoundError:
        return True


def test_a_signal_to_the_launcher_reaches_its_process(server: ForkServer, probe_env: dict[str, str],
                                                      tmp_path: Path) -> None:
    launcher, child = _sleeping(server, probe_env, tmp_path)
    launcher.send_signal(signal.SIGTERM)  # what Spark's Process.destroy() sends
    assert launcher.wait(timeout=30) == -signal.SIGTERM
    launcher.stdout.close()  # type: ignore[union-attr]
    _wait_for(lambda: _gone(child))


def test_a_killed_launcher_takes_its_process_with_it(server: ForkServer, probe_env: dict[str, str],
                                                     tmp_path: Path) -> None:
    launcher, child = _sleeping(server, probe_env, tmp_path)
    launcher.kill()
    launcher.wait(timeout=30)
    launcher.stdout.close()  # type: ignore[union-attr]
    _wait_for(lambda: _gone(child))


def test_the_server_ends_with_its_driver(tmp_path: Path) -> None:
    driver = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import sys, time
        from sparkcdc.spark.launch.python_forks import start_fork_server
        server = start_fork_server("local[1]")
        print(server.pid, server.directory, flush=True)
        time.sleep(60)
    """)], stdout=subprocess.PIPE, text=True)
    assert driver.stdout is not None
    pid, directory = driver.stdout.readline().split()
    assert Path(directory, "python").exists()
    driver.kill()
    driver.wait(timeout=30)
    driver.stdout.close()
    _wait_for(lambda: not Path(f"/proc/{pid}").exists())
    assert not Path(directory).exists()


def test_only_a_local_master_gets_forked_processes() -> None:
    assert all(is_local_master(master) for master in ("local", "local[2]", "local[*]", "local[2,3]"))
    assert not any(is_local_master(master) for master in ("local-cluster[2,1,1024]", "spark://host:7077", "yarn", None))
    assert start_fork_server("spark://127.0.0.1:7077") is None


def _python_lineage(_: object) -> list[str]:
    """A task worker's parent (the daemon) and grandparent, by their command lines."""
    import os as os_

    def parent(pid: int) -> int:
        with open(f"/proc/{pid}/stat") as handle:
            return int(handle.read().split(")")[-1].split()[1])

    def cmdline(pid: int) -> str:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode().strip()

    daemon = parent(os_.getpid())
    return [cmdline(daemon), cmdline(parent(daemon))]


def test_a_local_session_sparkcdc_starts_forks_its_python_processes(spark) -> None:  # noqa: ANN001 - the session fixture
    server = start_fork_server("local[2]")
    assert server is not None
    assert spark.sparkContext.pythonExec == server.launcher
    daemon, above = spark.sparkContext.parallelize(range(1), 1).map(_python_lineage).collect()[0]
    assert daemon.startswith(f"{sys.executable} -m sparkcdc.spark.launch.worker_daemon"), daemon
    assert "sparkcdc.spark.launch.fork_server" in above, above


def test_the_switch_turns_the_fork_server_off(monkeypatch: pytest.MonkeyPatch) -> None:
    from sparkcdc.spark.launch.python_forks import SWITCH

    monkeypatch.setenv(SWITCH, "off")
    assert start_fork_server("local[2]") is None
