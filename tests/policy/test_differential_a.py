"""Half of the differential suite (5,000 generated inputs; the other half runs beside it).

OPA (`opa eval`, strict built-in errors) and the embedded engine (OPA's Wasm) must give
identical decisions, violations and notes on every input: see tests/policy/differential.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.policy.differential import differences, run_seed

CASES = 5000


@pytest.mark.opa
def test_engines_agree_on_generated_inputs(opa_binary: Path, tmp_path: Path) -> None:
    seed = run_seed()
    found, tally = differences(opa_binary, seed, CASES, tmp_path)
    assert sum(tally.values()) == CASES - len(found)
    assert tally["allow"] > 0 and tally["deny"] > 0, tally
    assert not found, f"seed {seed}: {len(found)} differences, first: " + "; ".join(found[:3])
