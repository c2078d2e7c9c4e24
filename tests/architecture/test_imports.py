"""The import rules of docs/architecture.md: the contracts `lint-imports` checks.

scripts/test.sh runs `lint-imports` itself; these tests hold the pieces it relies on:
the cycle contract finds a cycle (and only a real one), and every module of registry/
and cli/ sits in a layer, so a new package cannot slip past the layers unchecked.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import grimp
import pytest

from tests.support.import_contracts import import_cycles

ROOT = Path(__file__).resolve().parents[2]


def graph_of(imports: list[tuple[str, str]]) -> grimp.ImportGraph:
    graph = grimp.ImportGraph()
    for importer, imported in imports:
        graph.add_import(importer=importer, imported=imported, line_number=1, line_contents="")
    return graph


def test_a_cycle_through_a_function_level_import_is_found_with_its_path() -> None:
    # The shape issue 30 found: records -> staleness -> observe -> records.
    graph = graph_of(
        [
            ("app.records.service", "app.staleness.service"),
            ("app.staleness.service", "app.observe.review"),
            ("app.observe.review", "app.records.service"),
            ("app.observe.review", "app.storage"),
            ("app.gate", "app.records.service"),
        ]
    )
    cycles = import_cycles(graph, set(graph.modules))
    assert cycles == [
        [
            "app.observe.review",
            "app.records.service",
            "app.staleness.service",
            "app.observe.review",
        ]
    ]


def test_imports_one_way_are_no_cycle() -> None:
    graph = graph_of([("app.a", "app.b"), ("app.b", "app.c"), ("app.a", "app.c")])
    assert import_cycles(graph, set(graph.modules)) == []


def test_a_cycle_outside_the_checked_packages_is_not_reported() -> None:
    graph = graph_of([("other.a", "other.b"), ("other.b", "other.a"), ("app.a", "other.a")])
    assert import_cycles(graph, {"app.a"}) == []


def _layer_entries() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    (layers,) = (c for c in contracts if c["type"] == "layers")
    return [
        part.strip()
        for layer in layers["layers"]
        for part in layer.replace("|", ":").split(":")
        if part.strip()
    ]


def test_every_module_sits_in_exactly_one_layer() -> None:
    entries = _layer_entries()
    graph = grimp.build_graph("registry", "cli")
    packages = {"registry", "registry.audit", "registry.auth"}  # split between layers
    unplaced, twice = [], []
    for module in sorted(graph.modules - packages):
        holders = [e for e in entries if module == e or module.startswith(e + ".")]
        if not holders:
            unplaced.append(module)
        elif len(holders) > 1:
            twice.append(module)
    assert not unplaced, (
        f"not in any layer of [tool.importlinter] in pyproject.toml: {unplaced}; "
        "place them (docs/architecture.md)"
    )
    assert not twice, f"in more than one layer: {twice}"


@pytest.mark.parametrize("package", ["registry.audit", "registry.auth"])
def test_a_package_split_between_layers_imports_nothing_in_its_init(package: str) -> None:
    # Its __init__ belongs to no layer; importing from it would go unchecked.
    graph = grimp.build_graph("registry", "cli")
    assert graph.find_modules_directly_imported_by(package) == set()
