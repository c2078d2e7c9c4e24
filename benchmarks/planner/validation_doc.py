"""docs/planner-validation.md, generated from the validation cases (never hand-copied).

    python -m benchmarks.planner.validation_doc      # rewrite the document

The known misses live here with their readings: tests/planner/test_validation.py makes
each a strict xfail, so a model change that fixes one fails until its reading goes, and a
case that starts missing fails until it is read here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from benchmarks.planner.validation import Outcome, run_all, table
from registry.planner.recompute import PLANNER_VERSION

DOC = Path(__file__).resolve().parents[2] / "docs" / "planner-validation.md"

_TP_SCALING = (
    "2023 TensorRT-LLM figures at an assumed 512-token prompt: the planner's per-degree "
    "efficiency loss and all-reduce latency are too mild for small per-GPU shards"
)

_SAMPLER_256 = (
    "below 70 GiB and on any A100 vLLM profiles 256 sequences, and these logs leave 0.5-0.6 "
    "GiB between the weights and the KV cache where the planner reserves 1.3-1.5 GiB: its "
    "0.10-0.18 sampler transient (38.4 bytes per logit, read from a 1024-sequence H100 log) "
    "overstates the 256-sequence peak by 0.8-1.0 GiB, a large share of a small KV pool"
)
_SAMPLER_256_TP2 = (
    "the 256-sequence sampler transient is overstated by about 0.8 GiB as on one GPU, and the "
    "TP>1 all-reduce allowance (0.42 GiB) is charged though this host ran without custom "
    "all-reduce (no P2P): the log leaves 0.6 GiB above the weights, the planner 2.0 GiB"
)

# Case name -> why the planner misses it (a reading, not an excuse: each names the cause).
READINGS: dict[str, str] = {
    "TPOT p99": (
        "with 8000-token prompts the measured tail (27 ms) comes from decodes sharing steps "
        "with long prefill chunks more often than a regular arrival stream produces"
    ),
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
    "vLLM KV GiB, Qwen2-7B, A100-80GB, TP1, util 0.25 (0.10.1.1)": _SAMPLER_256,
    "vLLM KV GiB, Qwen2-7B, A100-80GB, TP2, util 0.25 (0.10.1.1)": _SAMPLER_256_TP2,
    "vLLM KV GiB, Llama-3.1-8B, RTX 3090, util 0.9 (0.17.1)": _SAMPLER_256,
    "vLLM KV GiB, Llama-3.1-8B, RTX 3090, util 0.75 (0.17.1)": _SAMPLER_256,
    "vLLM fit, Llama-3.1-8B, RTX 3090, util 0.7: does not fit (0.17.1)": (
        "the verdict matches (one 8192-token request does not fit) but the planner finds 0.2 "
        "GiB of KV where vLLM found 0.95 GiB: the same ~0.75 GiB over-reserved for the "
        "256-sequence sampler transient"
    ),
    "vLLM KV GiB, Qwen2.5-7B, RTX 3090, util 0.9 (0.17.1)": _SAMPLER_256,
    "vLLM fit, Qwen2.5-7B, RTX 3090, util 0.65: starts (0.17.1)": (
        "the ~0.9 GiB over-reserved for the 256-sequence sampler transient turns a start into "
        "a predicted failure (-0.43 GiB against 0.49 GiB logged); the setting sits on the "
        "boundary, as a rerun that found 0.41 GiB and failed shows"
    ),
    "vLLM KV GiB, Qwen2.5-7B, RTX 3090, util 0.6: does not fit (0.17.1)": (
        "both fail, but the planner's deficit (-1.6 GiB) is 0.9 GiB deeper than vLLM's (-0.7 "
        "GiB): the 256-sequence sampler transient is over-reserved"
    ),
    "TPOT p99 at 20 req/s, 1000/100 tokens (vLLM 0.8.3)": (
        "the p99 TPOT at 20 req/s depends on how often decodes share steps with 1000-token "
        "prefills; the planner's mixed steps are cheaper than vLLM 0.8.3's"
    ),
}


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
        "in `registry/planner/efficiency.py`, with their sources): what a user gets without "
        "load-test evidence. Error = planner / published - 1. *Held out* means no planner "
        "default was read from the case; *tuned* cases informed a default.",
        "",
        f"**{hits} of {len(outcomes)} cases within target.**",
        "",
        "## By kind",
        "",
        _groups(outcomes),
        "",
        "## Cases",
        "",
        table(list(outcomes)),
        "",
        "## Known misses and their readings",
        "",
        *(f"- **{o.case.name}** ({o.error:+.1%}): {READINGS[o.case.name]}." for o in misses),
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    DOC.write_text(render(run_all()), encoding="utf-8")
