"""Half of the differential suite (1,500 generated inputs; the other half runs beside it).

OPA (`opa eval`, strict built-in errors) and the embedded engine (OPA's Wasm) must give
identical decisions, violations and notes on every input: see tests/policy/differential.py.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.policy.differential import differences, run_seed
from tests.support.gate_inputs import SHAPES

# The budget: 1,500 inputs per half (3,000 a run, two seeds; it was 2 x 5,000, about 30 s
# per half on an idle core). Each input mutates one of the 67 corpus cases with 1 to 24
# numbers of a random shape and up to two structural changes, so 1,500 draw every shape
# in SHAPES (zero, round numbers, digit counts, magnitudes, decimals, negatives, integral
# floats, classes added and dropped, no/one/many zones, no/one/duplicated evidence) at
# least 20 times each (seeds 0-19): fewer repeats, the same shapes. The test asserts it.
CASES = 1500


@pytest.mark.opa
def test_engines_agree_on_generated_inputs(opa_binary: Path, tmp_path: Path) -> None:
    seed = run_seed()
    shapes: Counter[str] = Counter()
    found, tally = differences(opa_binary, seed, CASES, tmp_path, shapes)
    assert sum(tally.values()) == CASES - len(found)
    assert tally["allow"] > 0 and tally["deny"] > 0, tally
    assert not found, f"seed {seed}: {len(found)} differences, first: " + "; ".join(found[:3])
    assert set(shapes) >= SHAPES, f"seed {seed}: shapes never drawn: {sorted(SHAPES - set(shapes))}"
    rare = {s: shapes[s] for s in SHAPES if shapes[s] < 20}
    assert not rare, f"seed {seed}: shapes drawn fewer than 20 times (the budget's claim): {rare}"
