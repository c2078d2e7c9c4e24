"""Replication versus partitioning: the tensor-parallel degrees worth evaluating, the
smallest SLO-meeting fleet of each, the degree chosen (fewest GPUs) and the comparison of
the plan's TP with TP=1 on the same GPUs."""

from __future__ import annotations

from registry.planner.class_prediction import Evaluation
from registry.planner.result import (
    TPOption,
)
from registry.planner.scenarios import (
    in_service_per_replica,
)
from registry.planner.search import Evaluator


def worst(ev: Evaluation, key: str) -> float | None:
    values = [getattr(p, key) for p in ev.per_class.values() if getattr(p, key) is not None]
    return max(values) if values else None


def tp_candidates(ev: Evaluator, plan_tp: int) -> list[int]:
    shape = ev.shape
    per_node = ev.provider.accelerator.per_node
    options = [tp for tp in (1, 2, 4, 8) if tp <= per_node and shape.attention_heads % tp == 0]
    fitting = [tp for tp in options if ev.memory(tp).fits]
    # The smallest TP that fits and the next two degrees: wider partitioning only adds
    # all-reduce cost once the model fits with room for KV.
    chosen = fitting[:3]
    if plan_tp in options and plan_tp not in chosen:
        chosen.append(plan_tp)
    return sorted(set(chosen)) or [plan_tp]


def _ms_or_unknown(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.0f} ms"


def equal_gpu_comparison(
    ev: Evaluator, options: list[TPOption], plan_tp: int, plan_gpus: int
) -> tuple[list[TPOption], str]:
    """TP=1 against the plan's TP k on the same GPUs at the same offered load (the peak).

    Each option above is sized to just meet the SLOs, so its p99s sit at the SLO whatever
    its TP: comparing those shows no gain by construction. Here both get G GPUs, G = TP=k's
    GPUs at peak (where it just meets the SLOs; the plan's GPUs when no count did): G / k
    replicas of TP=k against G replicas of TP=1, both at the peak. Two memoised runs; the
    TP=k one is the run its sizing already made.

    "Fits with useful KV": the KV cache holds, at the p99 context, the requests one replica
    has in service at that load (Little's law on the TP=1 run). It is judged at equal GPUs,
    not at TP=1's own minimum fleet, because that fleet is sized around TP=1's KV shortage
    (replicas are added until each one's requests fit) and would always pass. Little's law
    gives the mean count, which bursts exceed, while most requests are shorter than the p99
    context: the two approximations lean opposite ways. max_num_seqs is no yardstick: it is
    a cap the operator chose, not what the load needs.
    """
    index = {o.tensor_parallel: i for i, o in enumerate(options)}
    if plan_tp == 1 or 1 not in index or plan_tp not in index:
        return options, ""
    single, chosen = options[index[1]], options[index[plan_tp]]
    out = list(options)
    if not single.fits:
        out[index[1]] = single.model_copy(update={"fits_with_useful_kv": False})
        return out, ""
    if not chosen.fits:
        return options, ""
    gpus = chosen.gpus_at_peak or plan_gpus
    for option in (chosen, single):
        replicas = gpus // option.tensor_parallel
        at = ev.run(option.tensor_parallel, replicas)
        need = in_service_per_replica(ev.workload, at, replicas)
        kv = option.kv_concurrency_at_p99_context or 0
        out[index[option.tensor_parallel]] = option.model_copy(
            update={
                "equal_gpus": gpus,
                "equal_gpus_replicas": replicas,
                "equal_gpus_ttft_p99_ms": worst(at, "ttft_p99_ms"),
                "equal_gpus_tpot_p99_ms": worst(at, "tpot_p99_ms"),
                "equal_gpus_slo_met": at.slo_met,
                "concurrency_needed_per_replica": None if need is None else round(need, 2),
                "fits_with_useful_kv": need is not None and kv >= need,
            }
        )
    one, k = out[index[1]], out[index[plan_tp]]
    needed = (
        "unknown"
        if one.concurrency_needed_per_replica is None
        else f"{one.concurrency_needed_per_replica:.1f}"
    )
    sentence = (
        f"on the same {gpus} GPUs at peak, the plan's TP={plan_tp} ({k.equal_gpus_replicas} "
        f"replicas) against TP=1 ({gpus}): p99 TPOT {_ms_or_unknown(k.equal_gpus_tpot_p99_ms)} "
        f"vs {_ms_or_unknown(one.equal_gpus_tpot_p99_ms)}, p99 TTFT "
        f"{_ms_or_unknown(k.equal_gpus_ttft_p99_ms)} vs "
        f"{_ms_or_unknown(one.equal_gpus_ttft_p99_ms)}; TP=1's KV cache holds "
        f"{one.kv_concurrency_at_p99_context} requests at the p99 context against {needed} in "
        f"service per replica ({'enough' if one.fits_with_useful_kv else 'not enough'})"
    )
    return out, sentence


def compare_tp(
    ev: Evaluator, plan_tp: int, plan_replicas: int, peak: float, price: float | None
) -> tuple[list[TPOption], dict[int, int | None], int, str]:
    """Each worth-evaluating TP degree's smallest SLO-meeting fleet at peak, the degree with
    the fewest GPUs and why; also the minimum replicas found per degree (None: none met)."""
    options: list[TPOption] = []
    mins: dict[int, int | None] = {}
    candidates = tp_candidates(ev, plan_tp)
    ev.prefetch_searches([tp for tp in candidates if ev.memory(tp).fits])
    for tp in candidates:
        mem = ev.memory(tp)
        r = ev.min_replicas(tp) if mem.fits else None
        mins[tp] = r
        if r is None:
            options.append(
                TPOption(
                    tensor_parallel=tp,
                    gpus_per_replica=tp,
                    fits=mem.fits,
                    memory_reason=mem.reason,
                    kv_tokens=mem.kv_tokens,
                    kv_concurrency_at_p99_context=mem.max_concurrency_at_p99_context,
                    min_ready_replicas_at_peak=None,
                    gpus_at_peak=None,
                    worst_ttft_p99_ms=None,
                    worst_tpot_p99_ms=None,
                    throughput_per_gpu_rps=None,
                    cost_per_hour_at_peak_usd=None,
                    slo_met=False,
                    reason="does not fit in memory"
                    if not mem.fits
                    else "no replica count met the SLOs",
                )
            )
            continue
        at = ev.run(tp, r)
        gpus = r * tp
        options.append(
            TPOption(
                tensor_parallel=tp,
                gpus_per_replica=tp,
                fits=True,
                memory_reason=mem.reason,
                kv_tokens=mem.kv_tokens,
                kv_concurrency_at_p99_context=mem.max_concurrency_at_p99_context,
                min_ready_replicas_at_peak=r,
                gpus_at_peak=gpus,
                worst_ttft_p99_ms=worst(at, "ttft_p99_ms"),
                worst_tpot_p99_ms=worst(at, "tpot_p99_ms"),
                throughput_per_gpu_rps=round(peak / gpus, 3),
                cost_per_hour_at_peak_usd=None if price is None else round(gpus * price, 2),
                slo_met=True,
                reason=f"{r} replica(s) x {tp} GPU(s) = {gpus} GPUs meet every p99 SLO",
            )
        )
    options, equal_gpus = equal_gpu_comparison(ev, options, plan_tp, plan_replicas * plan_tp)
    viable = [o for o in options if o.slo_met and o.gpus_at_peak is not None]
    if viable:
        best = min(viable, key=lambda o: (o.gpus_at_peak or 0, o.tensor_parallel))
        chosen_tp = best.tensor_parallel
        others = [
            f"TP={o.tensor_parallel} needs {o.gpus_at_peak} GPUs "
            f"(p99 TPOT {o.worst_tpot_p99_ms:.0f} ms)"
            for o in viable
            if o is not best
        ]
        tp_reason = (
            f"TP={chosen_tp}: {best.min_ready_replicas_at_peak} x {chosen_tp} = "
            f"{best.gpus_at_peak} GPUs at peak, p99 TPOT {best.worst_tpot_p99_ms:.0f} ms, "
            f"{best.throughput_per_gpu_rps:.2f} req/s per GPU, the fewest GPUs"
            + (f"; {'; '.join(others)}" if others else "")
            + (
                "; replication is chosen over partitioning: the model fits one GPU and more "
                "GPUs per replica only add all-reduce time"
                if chosen_tp == 1
                else "; the smallest degree at which the model fits with room for KV"
            )
        )
    else:
        chosen_tp = plan_tp
        tp_reason = "no tensor-parallel degree met the SLOs at any replica count searched"
    if equal_gpus:
        tp_reason += f"; {equal_gpus}"
    return options, mins, chosen_tp, tp_reason
