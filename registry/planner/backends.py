"""Accelerators whose vLLM backend the planner does not model, refused by name.

The planner models vLLM's GPU engine (CUDA, and ROCm on AMD Instinct): its start-up memory
profile, its continuous-batching scheduler and its step time on HBM and tensor cores.
vLLM serves TPUs through its TPU backend (XLA-compiled graphs over padded, bucketed
shapes), Intel Gaudi through the vllm-gaudi HPU plugin (HPU graphs per bucket, its own
memory profile) and AWS Trainium/Inferentia through Neuron: each sizes memory and batches
steps in its own way. Priced as a GPU, such a plan would carry a GPU's numbers under
another chip's name, so it is refused, never priced.
"""

from __future__ import annotations

import re

_UNMODELLED: tuple[tuple[str, str], ...] = (
    (r"\btpu|\bv5e\b|\bv5p\b|\bv6e\b|trillium|v5litepod|v6e-slice", "a Google TPU, served by "
     "vLLM's TPU backend (XLA graphs over padded, bucketed shapes)"),
    (r"gaudi|\bhl-?\d{3}", "an Intel Gaudi, served by the vllm-gaudi HPU plugin (HPU graphs "
     "per bucket, its own memory profile)"),
    (r"trainium|inferentia|\btrn\d|\binf\d", "an AWS Trainium or Inferentia, served through "
     "Neuron"),
)  # fmt: skip


def unmodelled_backend(accelerator: str) -> str | None:
    """What the accelerator is when the planner does not model its backend, else None."""
    name = accelerator.lower()
    for pattern, what in _UNMODELLED:
        if re.search(pattern, name):
            return what
    return None
