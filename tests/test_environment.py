"""sparkcdc's environment variables: declared in one table, one rule for switches, each documented."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sparkcdc import environment
from sparkcdc.errors import ConfigurationError
from sparkcdc.native import pure_python_requested

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(("value", "expected"), [("1", True), ("TRUE", True), (" yes ", True), ("on", True),
                                                 ("0", False), ("false", False), ("No", False), ("off", False)])
def test_a_switch_reads_one_rule(monkeypatch: pytest.MonkeyPatch, value: str, expected: bool) -> None:
    monkeypatch.setenv("SPARKCDC_PYTHON_FORKS", value)
    monkeypatch.setenv("SPARKCDC_PURE_PYTHON", value)
    assert environment.switch("SPARKCDC_PYTHON_FORKS") is expected
    assert pure_python_requested() is expected  # `false` once meant on for this one


def test_an_unset_or_empty_switch_is_its_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPARKCDC_CLASS_ARCHIVE", raising=False)
    monkeypatch.setenv("SPARKCDC_PURE_PYTHON", "")
    assert environment.switch("SPARKCDC_CLASS_ARCHIVE") is True
    assert environment.switch("SPARKCDC_PURE_PYTHON") is False


def test_a_switch_that_is_neither_on_nor_off_is_refused_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARKCDC_CLASS_ARCHIVE", "flase")
    with pytest.raises(ConfigurationError, match="SPARKCDC_CLASS_ARCHIVE: 'flase' is neither on") as raised:
        environment.switch("SPARKCDC_CLASS_ARCHIVE")
    assert raised.value.property == "SPARKCDC_CLASS_ARCHIVE"


def test_a_value_is_none_when_unset_or_blank(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARKCDC_PG_BINDIR", "  ")
    assert environment.value("SPARKCDC_PG_BINDIR") is None
    monkeypatch.setenv("SPARKCDC_PG_BINDIR", "/opt/pg/bin")
    assert environment.value("SPARKCDC_PG_BINDIR") == "/opt/pg/bin"
    with pytest.raises(TypeError):
        environment.value("SPARKCDC_PURE_PYTHON")


def test_every_variable_in_the_code_is_declared_and_documented() -> None:
    used: set[str] = set()
    for root in ("src", "examples", "setup.py"):
        paths = [REPO / root] if root.endswith(".py") else (REPO / root).rglob("*.py")
        for path in paths:
            used.update(re.findall(r"\bSPARKCDC_[A-Z_]+[A-Z]\b", path.read_text(encoding="utf-8")))
    assert used, "the scan found no variable at all"
    assert used <= set(environment.VARIABLES), f"read but not declared in sparkcdc.environment: {sorted(used - set(environment.VARIABLES))}"
    documented = (REPO / "docs" / "properties.md").read_text(encoding="utf-8")
    missing = [name for name in environment.VARIABLES if f"| {name} |" not in documented]
    assert not missing, f"not in docs/properties.md's environment table: {missing}"
