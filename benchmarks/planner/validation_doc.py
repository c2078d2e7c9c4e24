"""docs/planner-validation.md, generated from the validation cases (never hand-copied).

    python -m benchmarks.planner.validation_doc      # rewrite the document and the ranges

It also writes registry/planner/validation_error.json: each accelerator family's range of
held-out errors, which the planner states as the interval on every predicted latency
(registry/planner/uncertainty.py).

The known misses live here with their readings: tests/planner/test_validation.py makes
each a strict xfail, so a model change that fixes one fails until its reading goes, and a
case that starts missing fails until it is read here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.planner.heldout import HELD_OUT_READINGS
from benchmarks.planner.validation import (
    CALIBRATED_READINGS,
    Outcome,
    run_all,
    table,
    verdict_table,
)
from registry.planner.catalog import accelerators
from registry.planner.uncertainty import DATA as ERRORS
from registry.planner.version import PLANNER_VERSION

DOC = Path(__file__).resolve().parents[2] / "docs" / "planner-validation.md"

_TP_SCALING = (
    "2023 TensorRT-LLM figures at an assumed 512-token prompt: the planner's per-degree "
    "efficiency loss and all-reduce latency are too mild for small per-GPU shards"
)

_TRITON_PEAK = "planner's torch peak with the Triton top-k/top-p masking of 0.17-0.19"

# Case name -> why the planner misses it (a reading, not an excuse: each names the cause).
READINGS: dict[str, str] = {
    "TTFT MPT-7B, 2x A100-40GB": _TP_SCALING,
    "TTFT MPT-7B, 4x A100-40GB": _TP_SCALING,
    "TTFT Llama-2-70B, 4x A100-40GB": _TP_SCALING,
    "TTFT Llama-2-70B, 8x A100-40GB": _TP_SCALING,
    "TPOT reduction MPT-7B 2 -> 4 GPUs, batch 1": _TP_SCALING,
    "latency reduction H100 vs A100-40GB, 4 GPUs, batch 1": _TP_SCALING,
    "TTFT p99 at 20 req/s, 1000/100 tokens (vLLM 0.8.3)": (
        "with the API server's 23.5 ms the median holds (-2 %) but the tail at 20 req/s is "
        "short: vLLM 0.8.3's prefills of queued 1000-token prompts wait behind each other "
        "longer than the planner's cheaper mixed steps let them"
    ),
    "vLLM fit, Llama-3.1-8B, RTX 3090, util 0.7: does not fit (0.17.1)": (
        "the verdict matches (one 8192-token request does not fit) and the "
        + _TRITON_PEAK
        + ", 0.50 GiB, leaves 0.04 GiB of the log's 0.54 GiB between weights and KV cache; "
        "the planner reserves 0.13 GiB of non-torch memory (read on H100), so it finds 0.90 "
        "GiB of KV where vLLM found 0.95 GiB, -5.7 % of a pool under 1 GiB"
    ),
    "vLLM fit, Qwen2.5-7B, RTX 3090, util 0.65: starts (0.17.1)": (
        "the setting sits on the boundary: vLLM found 0.49 GiB of KV, 0.05 GiB above the 0.44 "
        "GiB one 8192-token request needs, and a rerun found 0.41 GiB and failed. The "
        + _TRITON_PEAK
        + ", 0.58 GiB, already fills the log's 0.56 GiB between weights and KV cache, and the "
        "0.13 GiB of non-torch memory read on H100 (these RTX 3090 logs leave -0.02 to 0.06 GiB "
        "for it) turns "
        "the start into a predicted failure at 0.40 GiB"
    ),
    "vLLM KV GiB, Qwen2.5-7B, RTX 3090, util 0.6: does not fit (0.17.1)": (
        "both fail, the planner's deficit (-0.78 GiB) 0.08 GiB deeper than vLLM's (-0.7 GiB): "
        "the " + _TRITON_PEAK + " (0.58 GiB) matches the log's 0.57 GiB between weights and "
        "KV cache, and the 0.13 GiB non-torch allowance read on H100 is the difference, on a "
        "small denominator"
    ),
    "TPOT p99 at 20 req/s, 1000/100 tokens (vLLM 0.8.3)": (
        "the p99 TPOT at 20 req/s depends on how often decodes share steps with 1000-token "
        "prefills; the planner's mixed steps are cheaper than vLLM 0.8.3's"
    ),
    **HELD_OUT_READINGS,
    **CALIBRATED_READINGS,
}

# The per-family table's bar (issue 28): a figure is near enough within 15 %.
FAMILY_TARGET = 0.15
FAMILY_KINDS = {"latency": "latency", "throughput": "capacity", "capacity": "capacity"}


def _measured(family: str) -> str:
    """The family's kernel efficiencies per weight dtype: measured, assumed, or none."""
    entries: dict[str, bool] = {}
    for card in accelerators():
        if card.family == family:
            for dtype, entry in card.efficiency.items():
                entries[dtype] = entries.get(dtype, False) or entry.measured
    if not entries:
        return "none (fallback)"
    return ", ".join(
        dtype if measured else f"{dtype} assumed" for dtype, measured in sorted(entries.items())
    )


def families(outcomes: Sequence[Outcome]) -> str:
    """Held-out latency and capacity figures per accelerator family: cases, within 15 %,
    signed mean error."""
    rows = [
        "| family | measured efficiencies | figure | cases | within 15 % | signed mean error |",
        "|---|---|---|---|---|---|",
    ]
    grouped = [o for o in outcomes if o.case.family and o.case.held_out]
    for family in sorted({o.case.family for o in grouped}):
        for kind in ("latency", "capacity"):
            group = [
                o
                for o in grouped
                if o.case.family == family and FAMILY_KINDS.get(o.case.kind) == kind
            ]
            if not group:
                continue
            n = len(group)
            rows.append(
                f"| {family} | {_measured(family)} | {kind} | {n} | "
                f"{sum(abs(o.error) <= FAMILY_TARGET for o in group)} | "
                f"{sum(o.error for o in group) / n:+.1%} |"
            )
    return "\n".join(rows)


def _groups(outcomes: Sequence[Outcome]) -> str:
    rows = [
        "| kind | held out | cases | within target | mean abs. error | signed mean error |",
        "|---|---|---|---|---|---|",
    ]
    for kind in sorted({o.case.kind for o in outcomes}):
        for held in (True, False):
            group = [o for o in outcomes if o.case.kind == kind and o.case.held_out is held]
            if not group:
                continue
            n = len(group)
            rows.append(
                f"| {kind} | {'yes' if held else 'tuned'} | {n} | "
                f"{sum(o.within for o in group)} | "
                f"{sum(abs(o.error) for o in group) / n:.1%} | "
                f"{sum(o.error for o in group) / n:+.1%} |"
            )
    return "\n".join(rows)


def _by_family(outcomes: Sequence[Outcome]) -> dict[str, dict[str, list[Outcome]]]:
    grouped: dict[str, dict[str, list[Outcome]]] = {}
    for o in outcomes:
        kind = FAMILY_KINDS.get(o.case.kind)
        if o.case.family and o.case.held_out and kind is not None:
            grouped.setdefault(o.case.family, {}).setdefault(kind, []).append(o)
    return grouped


def error_ranges(outcomes: Sequence[Outcome]) -> str:
    """validation_error.json: per family and kind, the held-out cases and the lowest and
    highest error (planner / published - 1)."""
    document: dict[str, Any] = {
        "generated_by": "python -m benchmarks.planner.validation_doc",
        "planner_version": PLANNER_VERSION,
        "families": {
            family: {
                kind: {
                    "cases": len(group),
                    "low": round(min(o.error for o in group), 4),
                    "high": round(max(o.error for o in group), 4),
                }
                for kind, group in sorted(kinds.items())
            }
            for family, kinds in sorted(_by_family(outcomes).items())
        },
    }
    return json.dumps(document, indent=2) + "\n"


def render(outcomes: Sequence[Outcome]) -> str:
    hits = sum(o.within for o in outcomes)
    misses = [o for o in outcomes if o.case.name in READINGS]
    lines = [
        "# Planner validation",
        "",
        f"The planner (`registry/planner`, `{PLANNER_VERSION}`) against published "
        "measurements, each case citing its source. Generated by `python -m "
        "benchmarks.planner.validation_doc` from `benchmarks/planner/validation.py`; "
        "`tests/planner/test_validation.py` runs the same cases (a case inside its target must "
        "stay inside it; a known miss is a strict xfail) and fails when this file is out of "
        "date.",
        "",
        "Latency cases use the planner's uncalibrated defaults (per-accelerator efficiencies "
        "in the accelerator cards, `registry/planner/cards/accelerators/`, with their "
        "sources): what a user gets without load-test evidence. Error = planner / published "
        "- 1. *Held out* means no planner default was read from the case; *tuned* cases "
        "informed a default.",
        "",
        f"**{hits} of {len(outcomes)} cases within target.**",
        "",
        "## By kind",
        "",
        _groups(outcomes),
        "",
        "## Held out, by accelerator family",
        "",
        "Latency and capacity figures measured on vLLM, none of which set a default, grouped "
        "by the accelerator card's `family`. *Measured efficiencies* names the weight dtypes "
        "whose kernel efficiencies in the family's cards were read from measurements "
        "(*assumed*: carried over or derived without a measurement on the part; *none*: "
        "the planner's fallback); the planner states the widest interval on every "
        "prediction of a family without measured efficiencies or with fewer than 5 "
        "held-out latency figures.",
        "",
        families(outcomes),
        "",
        "## Cases",
        "",
        table(list(outcomes)),
        "",
        "## Start-up verdicts without a KV figure",
        "",
        "Runs whose source shows whether vLLM started (it served requests) but logs no KV "
        "figure: only the verdict is compared, and a source that leaves the configuration "
        "open is read at vLLM's defaults, with the reason. *Starts with* is what the planner "
        "says would start, as vLLM's own start-up error names it.",
        "",
        verdict_table(),
        "",
        "## Known misses and their readings",
        "",
        *(f"- **{o.case.name}** ({o.error:+.1%}): {READINGS[o.case.name]}." for o in misses),
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    results = run_all()
    DOC.write_text(render(results), encoding="utf-8")
    ERRORS.write_text(error_ranges(results), encoding="utf-8")
