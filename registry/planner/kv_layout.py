"""The KV cache's layout as vLLM V1 allocates it: bytes per token and layer (key and value
planes, or one latent for multi-head latent attention), the groups of layers sharing a
block table (sliding-window layers in groups of their own), and the pool of block ids a
number of bytes holds."""

from __future__ import annotations

import math
from dataclasses import dataclass

from registry.planner.model_shape import ModelShape
from registry.planner.runtime_version import release


def kv_layer_bytes_per_token(shape: ModelShape, tensor_parallel: int = 1) -> float:
    """KV bytes one layer holds per token on one GPU: planes x KV heads per GPU x head dim x
    dtype bytes.

    vLLM shards KV heads across TP ranks and replicates them when TP exceeds the KV head
    count, hence ``max(1, kv_heads // tp)``. Multi-head latent attention caches one plane
    (``kv_planes`` 1) of one head of ``kv_lora_rank + qk_rope_head_dim``
    (``vllm/v1/kv_cache_interface.py`` ``MLAAttentionSpec.real_page_size_bytes`` = block
    size x num_kv_heads x head_size x dtype, no factor 2; the MLA layer states
    ``num_kv_heads=1``), so every TP rank holds all of it.
    """
    heads = max(1, shape.kv_heads // tensor_parallel)
    return shape.kv_planes * heads * shape.head_dim * shape.kv_bytes


def kv_bytes_per_token(shape: ModelShape, tensor_parallel: int = 1) -> float:
    """KV bytes per token on one GPU over all layers: what a context within every layer's
    window costs (sliding-window layers stop adding at their window, ``KVGroups``)."""
    return shape.layers * kv_layer_bytes_per_token(shape, tensor_parallel)


@dataclass(frozen=True)
class KVGroups:
    """How vLLM V1 lays the KV cache out in groups of layers sharing a block table.

    ``vllm/v1/core/kv_cache_utils.py`` (``_get_kv_cache_groups_uniform_page_size``): layers
    of one attention type form groups of ``group_size`` layers (the fewer type's count, or
    the larger one when it is under 1.5 times the fewer: gpt-oss 18 + 18 makes two groups
    of 18, Gemma 3 27B 52 sliding + 10 full makes 6 sliding groups, padded, and 1 full of
    10); ``get_kv_cache_config_from_groups`` allocates ``group_size`` tensors of
    ``num_blocks`` pages, a block id holding one page in each, so ``num_blocks = memory //
    (page x group_size)``; each group's manager takes its own block ids from that one pool
    (``SlidingWindowManager`` frees those outside the window). ``_report_kv_cache_config``
    logs ``num_blocks // groups x block_size`` as "GPU KV cache size: N tokens". A model of
    one attention type is one group of all its layers.
    """

    group_size: int
    full_groups: int
    sliding_groups: int
    window: int | None
    layers: int  # the model's, padding excluded

    @property
    def groups(self) -> int:
        return self.full_groups + self.sliding_groups

    def blocks_held(self, context: int, block_size: int, scheduled: int = 1) -> int:
        """Block ids a request of ``context`` tokens holds: every full group all of it, a
        sliding group ``cdiv(window - 1 + scheduled, block_size) + 1`` at most (the window
        may start inside a block; ``SlidingWindowSpec.max_memory_usage_bytes``)."""
        blocks = -(-context // block_size)
        if self.window is None or not self.sliding_groups:
            return self.groups * blocks
        local = min(blocks, -(-(self.window - 1 + scheduled) // block_size) + 1)
        return self.full_groups * blocks + self.sliding_groups * local


def kv_groups(shape: ModelShape, hybrid: bool = True) -> KVGroups:
    """The KV cache groups of ``shape`` (``KVGroups``). ``hybrid=False``: vLLM before the
    hybrid KV cache manager (0.10) or with ``--disable-hybrid-kv-cache-manager``, where the
    sliding layers of a mixed model hold every token like the full ones
    (``unify_hybrid_kv_cache_specs``)."""
    full, local, n = shape.full_layers, shape.sliding_layers, shape.layers
    if local == 0 or shape.sliding_window is None:
        return KVGroups(n, 1, 0, None, n)
    if full == 0:
        return KVGroups(n, 0, 1, shape.sliding_window, n)
    if not hybrid:
        return KVGroups(n, 1, 0, None, n)
    size = min(full, local)
    if max(full, local) < size * 1.5:
        size = max(full, local)
    return KVGroups(size, -(-full // size), -(-local // size), shape.sliding_window, n)


def hybrid_manager(runtime_version: str | None) -> bool:
    """Whether the vLLM version frees sliding-window blocks of a mixed model (0.10 on)."""
    found = release(runtime_version)
    return found is None or found >= (0, 10)


def kv_pool(
    shape: ModelShape,
    kv_bytes: float,
    *,
    tensor_parallel: int,
    block_size: int,
    hybrid: bool = True,
) -> tuple[int, int]:
    """Block ids of the KV pool ``kv_bytes`` holds on one GPU, and the tokens vLLM logs for
    it ("GPU KV cache size"): ``num_blocks // groups x block_size``."""
    groups = kv_groups(shape, hybrid)
    page = kv_layer_bytes_per_token(shape, tensor_parallel) * block_size * groups.group_size
    blocks = max(0, math.floor(kv_bytes / page)) if kv_bytes > 0 else 0
    return blocks, blocks // groups.groups * block_size


def layout_text(groups: KVGroups) -> str:
    if groups.window is None:
        return ""
    return (
        f" as vLLM logs it: {groups.full_groups} full and {groups.sliding_groups} "
        f"sliding-window groups of {groups.group_size} layers share the blocks, a sliding "
        f"group holding the last {groups.window} tokens of a request"
    )
