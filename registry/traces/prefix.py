"""Prefix reuse measured from per-request block hashes (Mooncake's ``hash_ids``).

A Mooncake trace row lists one hash id per 512-token block of its prompt; equal ids are
equal prefix blocks ("the remapped block hash", kvcache-ai/Mooncake ``FAST25-release/README.md``
at 40ea55f8). The published traces (``FAST25-release/traces/conversation_trace.jsonl`` at
a2a4b18a) give a prompt of L tokens ceil(L / 512) ids, the last block partial (6758 tokens,
14 ids; 87169 tokens, 171 ids). The 512-token block is stated by the format's consumers:
ai-dynamo/dynamo ``benchmarks/prefix_data_generator/README.md`` (0bfac17a: "the block_size
(the page size of the KV cache) is assumed to be 512"; it says floor(L / 512) ids, which the
published traces contradict, so fewer ids than ceil(L / 512) are accepted and the uncovered
tail counted as misses) and AISBench's Mooncake-trace dataset README ("default 512 tokens").
More ids than the prompt has blocks means another block size: refused.

A request's prefix-cache hit is the *leading run* of its blocks already cached when it
arrives (vLLM's prefix cache, like any prefix cache, stops matching at the first missing
block); its hit tokens are that many blocks, capped at the prompt length. The share is hit
tokens over prompt tokens, summed over the class's requests (token-weighted, not a mean of
per-request ratios). The cache is shared by every class, because one fleet serves them all.

Two caches are modelled, both upper bounds on what a real fleet sees (they assume every
request reaches a replica holding its prefix):

* **unbounded**: a block is cached from its first appearance on, never evicted (the
  "theoretical hit rate, assuming an infinite cache" of dynamo's prefix analyzer, but
  token-weighted);
* **LRU of ``capacity_blocks``**: blocks a request touched become most recent; beyond the
  capacity the least recent are evicted.

Memory grows with the number of distinct block ids (a Python set; the LRU is bounded by its
capacity), not with the number of rows.
"""

from __future__ import annotations

import json
import math
import re
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

MOONCAKE_BLOCK_TOKENS = 512

_SPLIT = re.compile(r"[\s,;]+")


class BadHashes(ValueError):
    """A row's hash ids are unusable; the message says why (the caller adds line and key)."""


def parse_hash_ids(value: Any) -> Sequence[Hashable]:
    """Block ids from a JSON list (ints or strings) or a CSV cell ("[1, 2]", "1 2", "1;2").

    A cell's ids are kept as text whichever way it is written, so "[7]" on one line and "7"
    on another are the same block.
    """
    if isinstance(value, list):
        for item in value:
            if isinstance(item, bool) or not isinstance(item, int | str):
                raise BadHashes(f"{item!r} is not a block id (an integer or a string)")
        return value
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                decoded = json.loads(text)
            except json.JSONDecodeError as exc:
                raise BadHashes(f"{value!r} is not a JSON list of block ids") from exc
            if not isinstance(decoded, list):
                return _not_list(value)
            return [str(item) for item in parse_hash_ids(decoded)]
        return [part for part in _SPLIT.split(text) if part]
    return _not_list(value)


def _not_list(value: Any) -> Sequence[Hashable]:
    raise BadHashes(f"{value!r} is not a list of block ids")


@dataclass
class ClassReuse:
    """One class's prompt tokens and the tokens that hit each modelled cache."""

    requests: int = 0
    prompt_tokens: float = 0.0
    hit_tokens: float = 0.0  # unbounded cache
    hit_tokens_lru: float = 0.0  # LRU of the given capacity (0 when none was given)
    uncovered_rows: int = 0  # ids cover fewer tokens than the prompt: the rest are misses

    def share(self, *, bounded: bool = False) -> float:
        if self.prompt_tokens <= 0:
            return 0.0
        return (self.hit_tokens_lru if bounded else self.hit_tokens) / self.prompt_tokens


class PrefixReuse:
    """Feeds rows in arrival order; keeps per-class hit tokens for both caches."""

    def __init__(self, *, block_tokens: int, capacity_blocks: int | None = None) -> None:
        if block_tokens <= 0:
            raise ValueError("block_tokens must be positive")
        if capacity_blocks is not None and capacity_blocks <= 0:
            raise ValueError("capacity_blocks must be positive")
        self.block_tokens = block_tokens
        self.capacity_blocks = capacity_blocks
        self._seen: set[Hashable] = set()
        self._lru: OrderedDict[Hashable, None] = OrderedDict()
        self.classes: dict[str, ClassReuse] = {}

    def add(self, cls: str, ids: Sequence[Hashable], prompt_tokens: float) -> None:
        """One request. Raises ``BadHashes`` when the ids cannot be blocks of this prompt."""
        need = math.ceil(prompt_tokens / self.block_tokens)
        if len(ids) > need:
            raise BadHashes(
                f"{len(ids)} block ids for a {prompt_tokens:g}-token prompt, which fills "
                f"{need} block(s) of {self.block_tokens} tokens: the ids are not "
                f"{self.block_tokens}-token blocks"
            )
        acc = self.classes.get(cls)
        if acc is None:
            acc = self.classes[cls] = ClassReuse()
        acc.requests += 1
        acc.prompt_tokens += prompt_tokens
        if len(ids) < need:
            acc.uncovered_rows += 1
        # The cache is looked up before this request's own blocks are added: a block is a hit
        # only if an earlier request brought it in.
        seen = self._seen
        run = 0
        for h in ids:
            if h not in seen:
                break
            run += 1
        acc.hit_tokens += min(run * self.block_tokens, prompt_tokens)
        seen.update(ids)
        if self.capacity_blocks is not None:
            lru = self._lru
            run = 0
            for h in ids:
                if h not in lru:
                    break
                run += 1
            acc.hit_tokens_lru += min(run * self.block_tokens, prompt_tokens)
            for h in ids:
                lru[h] = None
                lru.move_to_end(h)
            while len(lru) > self.capacity_blocks:
                lru.popitem(last=False)
