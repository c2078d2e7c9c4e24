"""An import-linter contract type: no import cycle between modules.

import-linter's own `acyclic_siblings` judges whole packages against their siblings; the
rule of docs/architecture.md is finer: no module may import itself back through others,
whatever packages they sit in (a function-level import counts, as it does at run time).
`lint-imports` loads this type from pyproject.toml ([tool.importlinter] contract_types).
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from grimp import ImportGraph
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck


def import_cycles(graph: ImportGraph, modules: set[str]) -> list[list[str]]:
    """One cycle (first module repeated at the end) per group of `modules` that import
    each other round: the strongly connected components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def successors(module: str) -> list[str]:
        return sorted(graph.find_modules_directly_imported_by(module) & modules)

    # Tarjan's algorithm, iterative: the import graph is deeper than Python's recursion.
    for root in sorted(modules):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, successors(root))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, pending = work[-1]
            if pending:
                nxt = pending.pop(0)
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, successors(nxt)))
                elif nxt in on_stack:
                    low[module] = min(low[module], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[module])
            if low[module] == index[module]:
                group: set[str] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == module:
                        break
                if len(group) > 1:
                    groups.append(group)
    cycles = []
    for group in sorted(groups, key=min):
        start = min(group)
        first = min(graph.find_modules_directly_imported_by(start) & group)
        back = graph.find_shortest_chain(importer=first, imported=start)
        assert back is not None  # both are in one strongly connected component
        cycles.append([start, *back])
    return cycles


class AcyclicModulesContract(Contract):
    """`containers`: the packages whose modules may form no import cycle."""

    containers = fields.ListField(subfield=fields.StringField())

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        containers: list[str] = list(self.containers)  # type: ignore[call-overload]
        modules = {
            m for m in graph.modules if any(m == c or m.startswith(c + ".") for c in containers)
        }
        cycles = import_cycles(graph, modules)
        details = [
            [
                (importer, imported, _lines(graph, importer, imported))
                for importer, imported in pairwise(cycle)
            ]
            for cycle in cycles
        ]
        return ContractCheck(kept=not cycles, metadata={"cycles": details})

    def render_broken_contract(self, check: ContractCheck) -> None:
        cycles: list[list[tuple[str, str, str]]] = check.metadata["cycles"]
        output.print_error(f"{len(cycles)} import cycle(s) between modules:")
        output.new_line()
        for cycle in cycles:
            for importer, imported, lines in cycle:
                output.indent_cursor()
                output.print_error(f"{importer} -> {imported} ({lines})", bold=False)
            output.new_line()


def _lines(graph: ImportGraph, importer: str, imported: str) -> str:
    details: list[dict[str, Any]] = graph.get_import_details(importer=importer, imported=imported)
    return ", ".join(f"l.{d['line_number']}" for d in details) or "?"
