"""The differential check both halves of the suite run: OPA against the embedded engine.

Every generated input (tests/support/gate_inputs.py) is decided by the embedded
engine (OPA's Wasm in process) and by the real OPA (``opa eval``, strict built-in
errors); every decision, every violation and note with its message and details, must
be identical, and an error on one side is a difference. Seeds come from
CAPGATE_DIFFERENTIAL_SEED (repeat a failing run) or are drawn per run and printed.
"""

from __future__ import annotations

import json
import os
import random
from collections import Counter
from pathlib import Path
from typing import Any

from registry.policy.bundle import load_bundle
from registry.policy.dual import first_difference
from registry.policy.embedded import EmbeddedEngine
from registry.policy.engine import PolicyDecision, PolicyError, decision_from_result
from tests.support.gate_inputs import generate
from tests.support.opa_eval import decide_all

CHUNK = 1000


def run_seed() -> int:
    named = os.environ.get("CAPGATE_DIFFERENTIAL_SEED")
    return int(named) if named else random.SystemRandom().randrange(2**32)


def _embedded(engine: EmbeddedEngine, case: dict[str, Any]) -> tuple[str, Any]:
    try:
        return "decision", engine.decide(case)
    except PolicyError as exc:
        return "error", str(exc)


def _opa(answer: tuple[str, Any]) -> tuple[str, Any]:
    kind, value = answer
    if kind != "decision":
        return kind, value
    try:
        return "decision", decision_from_result(value, engine="opa")
    except PolicyError as exc:
        return "error", str(exc)


def _first_difference(left: PolicyDecision, right: PolicyDecision) -> str:
    # The same comparison `--engine both` makes in production.
    return first_difference(left, right) or "equal"


def differences(
    opa_binary: Path, seed: int, count: int, keep: Path, shapes: Counter[str] | None = None
) -> tuple[list[str], dict[str, int]]:
    """Decide ``count`` inputs from ``seed`` on both engines; the differences, and tallies
    (``shapes``: the shapes of the inputs, tests/support/gate_inputs.py's `SHAPES`)."""
    bundle = load_bundle()
    engine = EmbeddedEngine(bundle)
    found: list[str] = []
    tally = {"allow": 0, "deny": 0, "both_error": 0}
    cases = list(generate(seed, count, shapes))
    for start in range(0, len(cases), CHUNK):
        chunk = cases[start : start + CHUNK]
        for offset, (case, answer) in enumerate(
            zip(chunk, decide_all(opa_binary, bundle, chunk), strict=True)
        ):
            mine, theirs = _embedded(engine, case), _opa(answer)
            if mine[0] == theirs[0] == "decision":
                if mine[1] == theirs[1]:
                    tally["allow" if mine[1].allow else "deny"] += 1
                    continue
                why = _first_difference(mine[1], theirs[1])
            elif mine[0] == theirs[0]:
                tally["both_error"] += 1
                continue
            else:
                why = (
                    f"embedded {mine[0]}: {str(mine[1])[:300]}; "
                    f"opa {theirs[0]}: {str(theirs[1])[:300]}"
                )
            index = start + offset
            path = keep / f"seed{seed}-case{index}.json"
            path.write_text(json.dumps(case, indent=1))
            found.append(f"case {index} (input kept at {path}): {why}")
    return found, tally
