"""``sparkcdc validate`` without a server: summary, exit codes, messages; the console script itself."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from typer.testing import CliRunner

from sparkcdc.cli.app import EXIT_CONFIG, app

REPO = Path(__file__).resolve().parents[2]
RUNNER = CliRunner()
WIDE = {"COLUMNS": "200"}
VALID = (
    "name=inventory\n"
    "database.hostname=203.0.113.1\n"  # TEST-NET-3: never contacted without --connect
    "database.user=cdc\n"
    "database.password=hunter2\n"
    "database.dbname=app\n"
    "topic.prefix=srv\n"
    "slot.name=cdc_slot\n"
    "publication.name=cdc_pub\n"
    "publication.autocreate.mode=filtered\n"
    "table.include.list=public\\\\.orders,public\\\\.items\n"
    "decimal.handling.mode=string\n"
    "tombstones.on.delete=FALSE\n"
    "time.precision.mode=adaptive\n"
)


def test_valid_configuration_prints_a_summary(tmp_path: Path) -> None:
    path = tmp_path / "c.properties"
    path.write_text(VALID)
    result = RUNNER.invoke(app, ["validate", str(path)], env=WIDE)
    assert result.exit_code == 0, result.output
    out = result.output
    for expected in ("inventory", "cdc@203.0.113.1:5432/app", "cdc_slot", "cdc_pub (publication.autocreate.mode=filtered)",
                     "snapshot mode    initial", r"tables: public\.orders, public\.items"):
        assert expected in out
    differing = out[out.index("Options that differ from Debezium's defaults"):]
    assert "decimal.handling.mode" in differing and "precise" in differing
    assert "tombstones.on.delete" in differing
    assert "time.precision.mode" not in differing  # set, but to Debezium's default
    assert "hunter2" not in out


def test_configuration_error_exits_2_naming_file_line_and_property(tmp_path: Path) -> None:
    path = tmp_path / "c.properties"
    path.write_text(VALID + "snapshot.fetch.size=lots\n")
    result = RUNNER.invoke(app, ["validate", str(path)], env=WIDE)
    assert result.exit_code == EXIT_CONFIG
    assert f"error: {path}:14: snapshot.fetch.size: 'lots' is not an integer" in result.output


def test_plugin_other_than_pgoutput_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("".join(f"{line.replace('=', ': ', 1)}\n" for line in VALID.splitlines() if "include" not in line)
                    + "plugin.name: wal2json\n")
    result = RUNNER.invoke(app, ["validate", str(path)], env=WIDE)
    assert result.exit_code == EXIT_CONFIG
    assert "plugin.name: 'wal2json' is not supported" in result.output and str(path) in result.output


def test_missing_file_and_usage_errors_exit_2(tmp_path: Path) -> None:
    result = RUNNER.invoke(app, ["validate", str(tmp_path / "nope.json")], env=WIDE)
    assert result.exit_code == EXIT_CONFIG and "nope.json: no such file" in result.output
    assert RUNNER.invoke(app, ["validate"]).exit_code == 2


def test_unknown_properties_are_warned_about_but_valid(tmp_path: Path) -> None:
    path = tmp_path / "c.properties"
    path.write_text(VALID + "slot.nmae=x\n")
    result = RUNNER.invoke(app, ["validate", str(path)], env=WIDE)
    assert result.exit_code == 0
    assert "warning: slot.nmae (line 14): is not a property sparkcdc knows; did you mean slot.name?" in result.output


def test_console_script_is_declared() -> None:
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["sparkcdc"] == "sparkcdc.cli.app:main"


def test_real_process_exit_codes(tmp_path: Path) -> None:
    """The entry point in a process of its own: exit status and streams as a shell sees them."""
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text('{"name": "x", "config": {"database.hostname": "h", "database.user": "u", "database.dbname": "d", '
                    '"topic.prefix": "p", "database.password": "${env:SPARKCDC_TEST_PW}"}}')
    bad.write_text('{"database.hostname": "h", "database.user": "u", "database.dbname": "d", "topic.prefix": "p", '
                   '"database.port": "-5"}')
    env = {**os.environ, "COLUMNS": "200", "SPARKCDC_TEST_PW": "pw"}
    command = [sys.executable, "-m", "sparkcdc.cli", "validate"]
    ok = subprocess.run([*command, str(good)], capture_output=True, text=True, env=env, timeout=60)
    assert ok.returncode == 0, ok.stderr
    assert "valid:" in ok.stdout
    failed = subprocess.run([*command, str(bad)], capture_output=True, text=True, env=env, timeout=60)
    assert failed.returncode == 2
    assert f"{bad}: database.port: must be positive, not -5" in failed.stderr
    assert failed.stdout == ""
    unset = subprocess.run([*command, str(good)], capture_output=True, text=True, timeout=60,
                           env={k: v for k, v in env.items() if k != "SPARKCDC_TEST_PW"})
    assert unset.returncode == 2 and "database.password: environment variable 'SPARKCDC_TEST_PW'" in unset.stderr


def test_a_v2_hash_property_is_known(tmp_path: Path) -> None:
    """``column.mask.hash.v2.<algorithm>.with.salt.<salt>`` (Debezium's UTF-8 hashing) is a property, not a typo."""
    path = tmp_path / "c.properties"
    path.write_text(VALID + "column.mask.hash.v2.SHA-256.with.salt.CzQMA0cB5K=public\\\\.orders\\\\.email\n")
    result = RUNNER.invoke(app, ["validate", "--strict", str(path)], env=WIDE)
    assert result.exit_code == 0, result.output
    assert "warning" not in result.output and "column.mask.hash.v2" not in result.output


def test_strict_refuses_an_unknown_name_naming_the_closest(tmp_path: Path) -> None:
    path = tmp_path / "c.properties"
    path.write_text(VALID + "column.mask.hash.SHA-256.with.slat.x=public\\\\.orders\\\\.email\ntable.exclude.lst=public\\\\.x\n")
    warned = RUNNER.invoke(app, ["validate", str(path)], env=WIDE)
    assert warned.exit_code == 0
    assert "warning: table.exclude.lst (line 15): is not a property sparkcdc knows; did you mean table.exclude.list? (ignored)" \
        in warned.output
    refused = RUNNER.invoke(app, ["validate", "--strict", str(path)], env=WIDE)
    assert refused.exit_code == EXIT_CONFIG
    assert re.search(rf"{re.escape(str(path))}:14: column\.mask\.hash\.SHA-256\.with\.slat\.x: is not a property sparkcdc knows; "
                     r"did you mean column\.mask\.hash\.(v2\.)?<algorithm>\.with\.salt\.<salt>\?", " ".join(refused.output.split()))
    # the property says the same as the option
    path.write_text(path.read_text() + "sparkcdc.strict=true\n")
    assert RUNNER.invoke(app, ["validate", str(path)], env=WIDE).exit_code == EXIT_CONFIG


def test_run_strict_refuses_before_spark_starts(tmp_path: Path, monkeypatch) -> None:
    import sparkcdc.cli.app as cli

    monkeypatch.setattr(cli, "_import_runner", lambda: (_ for _ in ()).throw(AssertionError("Spark must not start")))
    path = tmp_path / "c.properties"
    path.write_text(VALID + "snapshot.mod=never\n")
    result = RUNNER.invoke(app, ["run", "--strict", str(path), "--output", str(tmp_path / "out"), "--checkpoint",
                                 str(tmp_path / "ck"), "--once"], env=WIDE)
    assert result.exit_code == EXIT_CONFIG, result.output
    assert "snapshot.mod: is not a property sparkcdc knows; did you mean snapshot.mode?" in " ".join(result.output.split())


def test_the_connection_check_waits_connection_validation_timeout(monkeypatch) -> None:
    from sparkcdc.cli import server
    from sparkcdc.debezium.config import ConnectorConfig

    waited: list[int] = []
    monkeypatch.setattr(server.server_facts, "connect_read_only", lambda conninfo, connect_timeout: waited.append(connect_timeout))
    base = {"database.hostname": "h", "database.user": "u", "database.dbname": "d", "topic.prefix": "p"}
    server.connect_read_only(ConnectorConfig(base))
    server.connect_read_only(ConnectorConfig(base | {"connection.validation.timeout.ms": "2500"}))
    assert waited == [60, 3]  # Debezium's default 60 s; libpq counts whole seconds
