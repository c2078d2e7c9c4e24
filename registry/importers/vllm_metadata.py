"""What a vLLM result file says beyond its measurements: the ``--metadata KEY=VALUE`` pairs
(replicas, traffic class, serving runtime) and any key vLLM's writers do not use.

``--metadata`` pairs are merged into the result object as top-level strings; a sweep adds
``run_number`` and its serve/bench override keys (e.g. ``max_num_seqs``) the same way. The file
never states the server's version by itself (``backend`` is the client's request format): the
serving runtime is read only from ``--metadata`` (``vllm_version=0.8.5``,
``runtime=NAME==VERSION``, or ``runtime_name=NAME runtime_version=VERSION``).
"""

from __future__ import annotations

import math
import re
from typing import Any

from registry.importers.json_values import num, refuse
from registry.importers.parsed_stage import ParsedStage
from registry.importers.runtime import parse_runtime, runtime_info, same_runtime
from registry.importers.vllm_latency import STAT_KEY
from registry.records.common import NAME_PATTERN
from registry.records.evidence import RuntimeInfo

# Every key vLLM's writers put in a result (mainline, legacy, pooling, sweep); anything else
# came from --metadata or a sweep override and is listed in the notes.
_KNOWN_KEYS = frozenset(
    {
        "date",
        "endpoint_type",
        "backend",
        "label",
        "model_id",
        "tokenizer_id",
        "num_prompts",
        "request_rate",
        "burstiness",
        "max_concurrency",
        "duration",
        "completed",
        "failed",
        "total_input_tokens",
        "total_output_tokens",
        "total_input_sequences",
        "request_throughput",
        "request_goodput",
        "request_goodput:",
        "output_throughput",
        "total_token_throughput",
        "input_sequence_throughput",
        "input_lens",
        "output_lens",
        "ttfts",
        "itls",
        "latencies",
        "start_times",
        "queue_times",
        "generated_texts",
        "errors",
        "max_output_tokens_per_s",
        "max_concurrent_requests",
        "rtfx",
        "rps_change_events",
        "best_of",
        "use_beam_search",
        "run_number",
        "_benchmark_name",
    }
)
_KNOWN_PREFIXES = ("ramp_up_", "spec_decode_", "diffusion_", "probe_")

# --metadata keys that state the ready replicas behind the tested endpoint. llm-d users write
# decode_replicas/prefill_replicas; decode replicas are the serving replicas only when there
# are no separate prefill replicas.
_REPLICA_KEYS = ("replicas", "num_replicas")
_CLASS_KEYS = ("traffic_class", "class")
# --metadata keys that state the serving runtime measured (the server, not vllm bench):
# vllm_version=0.8.5; runtime=sglang==0.4.4 (the --runtime syntax); or the pair
# runtime_name=sglang runtime_version=0.4.4.
_RUNTIME_KEYS = ("vllm_version", "runtime", "runtime_name", "runtime_version")
_NAME_RE = re.compile(NAME_PATTERN)


# --- numbers written as text (--metadata values and sweep overrides are strings) ------------


def lenient_number(value: Any) -> float | None:
    """A JSON number or a numeric string (--metadata values and sweep overrides are strings)."""
    if isinstance(value, str):
        try:
            f = float(value.strip())
        except ValueError:
            return None
        return f if math.isfinite(f) else None
    return num(value)


def lenient_whole(value: Any) -> int | None:
    f = lenient_number(value)
    if f is None or f < 0 or f != int(f):
        return None
    return int(f)


# --- --metadata: replicas, traffic class, everything else ---------------------------------


def _positive_replicas(doc: dict[str, Any], key: str, source: str, where: str) -> int:
    value = doc[key]
    n = lenient_whole(value)
    if n is None or n < 1:
        raise refuse(
            f"{where}{key}",
            f"{value!r} is not a number of replicas (a whole number, at least 1)",
            source=source,
        )
    return n


def read_replicas(doc: dict[str, Any], stage: ParsedStage, source: str, where: str) -> None:
    stated: list[tuple[str, int]] = [
        (k, _positive_replicas(doc, k, source, where)) for k in _REPLICA_KEYS if k in doc
    ]
    if "decode_replicas" in doc:
        prefill = lenient_whole(doc.get("prefill_replicas", 0))
        decode = _positive_replicas(doc, "decode_replicas", source, where)
        if prefill == 0:
            stated.append(("decode_replicas", decode))
        elif not stated:
            # Prefill/decode disaggregation: a "replica" is not one server, so the number to
            # divide rates by is the user's call.
            stage.notes.append(
                f"prefill/decode disaggregated (prefill_replicas "
                f"{doc.get('prefill_replicas')!r}, decode_replicas {decode}): replicas not "
                "taken from the file"
            )
    if not stated:
        return
    values = {v for _, v in stated}
    if len(values) > 1:
        shown = ", ".join(f"{k}={v}" for k, v in stated)
        raise refuse(
            f"{where}{stated[0][0]}",
            f"the file states different replica counts ({shown})",
            source=source,
        )
    key, value = stated[0]
    stage.replicas = value
    stage.replicas_basis = f"metadata {key}" + (
        " (prefill_replicas 0)" if key == "decode_replicas" and "prefill_replicas" in doc else ""
    )


def read_class_label(doc: dict[str, Any], stage: ParsedStage, source: str, where: str) -> None:
    stated = [(k, doc[k]) for k in _CLASS_KEYS if k in doc]
    if not stated:
        return
    for key, value in stated:
        if not isinstance(value, str) or not _NAME_RE.match(value.strip()):
            raise refuse(
                f"{where}{key}",
                f"{value!r} is not a traffic class name (lower-case letters, digits, '.', '_', "
                "'-'; starting and ending with a letter or digit)",
                source=source,
            )
    labels = {str(v).strip() for _, v in stated}
    if len(labels) > 1:
        raise refuse(
            f"{where}{stated[0][0]}",
            "the file names different traffic classes ("
            + ", ".join(f"{k}={v}" for k, v in stated)
            + ")",
            source=source,
        )
    stage.class_label = labels.pop()


def _metadata_text(doc: dict[str, Any], key: str, source: str, where: str) -> str:
    value = doc[key]
    if not isinstance(value, str) or not value.strip():
        raise refuse(
            f"{where}{key}",
            f"{value!r} is not text (--metadata {key}=... states the serving runtime)",
            source=source,
        )
    return value


def read_runtime(doc: dict[str, Any], stage: ParsedStage, source: str, where: str) -> None:
    """The serving runtime, when --metadata states it; several statements must agree."""
    stated: list[tuple[str, RuntimeInfo]] = []
    if "vllm_version" in doc:
        version = _metadata_text(doc, "vllm_version", source, where)
        runtime = runtime_info("vllm", version, loc=f"{where}vllm_version", source=source)
        stated.append(("vllm_version", runtime))
    if "runtime" in doc:
        text = _metadata_text(doc, "runtime", source, where)
        stated.append(("runtime", parse_runtime(text, loc=f"{where}runtime", source=source)))
    pair = [k for k in ("runtime_name", "runtime_version") if k in doc]
    if len(pair) == 2:
        name = _metadata_text(doc, "runtime_name", source, where)
        version = _metadata_text(doc, "runtime_version", source, where)
        stated.append(
            (
                "runtime_name, runtime_version",
                runtime_info(name, version, loc=f"{where}runtime_version", source=source),
            )
        )
    elif pair:
        absent = "runtime_version" if pair[0] == "runtime_name" else "runtime_name"
        stage.notes.append(
            f"--metadata {pair[0]}={short(doc[pair[0]])} without {absent}: the serving "
            "runtime is not read from it"
        )
    if not stated:
        return
    key, runtime = stated[0]
    for other_key, other in stated[1:]:
        if not same_runtime(runtime, other):
            raise refuse(
                f"{where}{other_key.split(',')[0]}",
                f"the file states different serving runtimes ({key}: {runtime.describe()}; "
                f"{other_key}: {other.describe()})",
                source=source,
            )
    stage.runtime = runtime
    stage.runtime_basis = "metadata " + ", ".join(k for k, _ in stated)


def note_extra_keys(doc: dict[str, Any], stage: ParsedStage) -> None:
    used = (
        set(_REPLICA_KEYS)
        | set(_CLASS_KEYS)
        | set(_RUNTIME_KEYS)
        | {"decode_replicas", "prefill_replicas"}
    )
    extra = [
        k
        for k in doc
        if k not in _KNOWN_KEYS
        and k not in used
        and not STAT_KEY.match(k)
        and not k.startswith(_KNOWN_PREFIXES)
    ]
    if extra:
        shown = ", ".join(f"{k}={short(doc[k])}" for k in extra)
        stage.notes.append(f"keys from --metadata or sweep overrides: {shown}")


def short(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."
