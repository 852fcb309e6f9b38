"""Fail when modules of ``sparkcdc`` import each other in a circle (run by ``make lint``).

import-linter's layers catch an import that goes up a layer, not a circle inside one layer or one
package; a circle means neither module can be read, tested or moved without the other. Imports
inside functions count: they are circles all the same, only deferred. Uses grimp, import-linter's
own import graph.
"""

from __future__ import annotations

import sys

import grimp


def circles(package: str) -> list[list[str]]:
    """The groups of modules of ``package`` that reach each other through imports (Tarjan's algorithm)."""
    graph = grimp.build_graph(package)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported not in graph.modules:
                continue
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return found


def main() -> int:
    found = circles("sparkcdc")
    for group in found:
        print("import circle: " + " <-> ".join(group))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
