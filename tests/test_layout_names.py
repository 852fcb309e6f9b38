"""The output layout's name is compared only inside ``sparkcdc.spark.outputs`` (its registry and outputs):
everything else asks the chosen :class:`~sparkcdc.spark.outputs.base.Output` (issue 30)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "sparkcdc"
LAYOUTS = {"columns", "lines", "changes", "topic_files", "kafka"}
#: Comparisons of the same words that are not the layout: the kafka signal channel's name.
NOT_THE_LAYOUT = {("engine", "signal_channels", "__init__.py"): {"kafka"}, ("debezium", "property_rules.py"): {"kafka"}}


def _compared_constants(node: ast.Compare) -> set[str]:
    found: set[str] = set()
    for operand in (node.left, *node.comparators):
        elements = operand.elts if isinstance(operand, (ast.Tuple, ast.List, ast.Set)) else [operand]
        found |= {e.value for e in elements if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return found


def test_the_layout_name_is_compared_only_inside_the_outputs_package() -> None:
    outside = []
    for path in SRC.rglob("*.py"):
        parts = path.relative_to(SRC).parts
        if parts[:2] == ("spark", "outputs"):
            continue
        allowed = NOT_THE_LAYOUT.get(parts, set())
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                names = (_compared_constants(node) & LAYOUTS) - allowed
                if names:
                    outside.append(f"{path.relative_to(SRC)}:{node.lineno}: {sorted(names)}")
    assert not outside, "ask the chosen Output (sparkcdc.spark.outputs) instead:\n" + "\n".join(outside)
